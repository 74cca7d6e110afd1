"""``hotstandby setup-roles``: create the etcd roles for a namespace (as etcd's ``root``)."""

from __future__ import annotations

import argparse

from hotstandby.cli.config_cmds import cli_settings
from hotstandby.cli.output import emit, table
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.etcd_auth import READ
from hotstandby.configcenter.roles import ROLES, setup_center_roles

__all__ = ["add_command"]


def setup_roles_cmd(args: argparse.Namespace) -> int:
    settings = cli_settings(args)
    with ConfigCenter.open(settings) as center:
        names = setup_center_roles(center)
    rows = []
    for grants, name in zip(ROLES.values(), names, strict=True):
        for prefix, permission in grants:
            rows.append({"role": name, "prefix": f"{settings.namespace}/{prefix}",
                         "permission": "read" if permission == READ else "readwrite"})  # fmt: skip
    text = table(["ROLE", "PREFIX", "PERMISSION"], [(r["role"], r["prefix"], r["permission"]) for r in rows])
    emit(args.json, {"namespace": settings.namespace, "roles": rows}, text)
    return 0


def add_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("setup-roles", parents=[common],
                       help="create the etcd roles for the namespace (app, replicator, sre, admin); run as root")  # fmt: skip
    p.set_defaults(func=setup_roles_cmd)
