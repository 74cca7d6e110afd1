"""etcd roles for the config center's key layout: who may do what (``docs/security.md``).

========================  =====================================================================
role                      may
========================  =====================================================================
``hotstandby-app``        read the namespace; write its own bookkeeping: ledgers, presence,
                          locks, staged batches, re-plans
``hotstandby-replicator`` what an application may, and write replication progress
``hotstandby-sre``        what an application may, and flip routes (routes and their epochs)
``hotstandby-admin``      everything under the namespace: clusters, links, topics, routes
========================  =====================================================================

Roles are per namespace (``<role>`` for ``/hotstandby``, ``<role>@<namespace>`` otherwise), so
one etcd can hold several. Users are etcd's own (``etcdctl user add``, ``user grant-role``).
"""

from __future__ import annotations

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.configcenter.etcd import EtcdStore
from hotstandby.configcenter.etcd_auth import READ, READWRITE, EtcdAuthAdmin
from hotstandby.errors import ConfigCenterError, ConfigError
from hotstandby.settings import DEFAULT_NAMESPACE

__all__ = ["ROLES", "auth_admin", "role_name", "setup_center_roles", "setup_roles"]

# Clients read the namespace whole (a snapshot, a watch of it), and write their own bookkeeping.
_APP = (("", READ), *((p, READWRITE) for p in ("ledgers/", "clients/", "locks/", "staged/", "replans/")))

#: role -> (key prefix under the namespace, permission)
ROLES: dict[str, tuple[tuple[str, int], ...]] = {
    "hotstandby-app": _APP,
    "hotstandby-replicator": (*_APP, ("replication/", READWRITE)),
    "hotstandby-sre": (*_APP, ("routes/", READWRITE), ("epochs/", READWRITE)),
    "hotstandby-admin": (("", READWRITE),),
}


def role_name(role: str, namespace: str) -> str:
    return role if namespace == DEFAULT_NAMESPACE else f"{role}@{namespace}"


def setup_roles(admin: EtcdAuthAdmin, namespace: str) -> list[str]:
    """Create the roles for ``namespace`` and grant their permissions (again: no harm);
    returns their names."""
    existing = set(admin.roles())
    names = []
    for role, grants in ROLES.items():
        name = role_name(role, namespace)
        if name not in existing:
            try:
                admin.add_role(name)
            except ConfigCenterError as exc:  # made meanwhile by another set-up
                if "already exists" not in str(exc):
                    raise
        for prefix, permission in grants:
            admin.grant_prefix(name, f"{namespace}/{prefix}", permission)
        names.append(name)
    return names


def auth_admin(center: ConfigCenter) -> EtcdAuthAdmin:
    """Users, roles and auth of the etcd ``center`` is on (with its connection and user)."""
    if not isinstance(center.store, EtcdStore):
        raise ConfigError("roles are etcd's: the config center is not on etcd")
    return EtcdAuthAdmin(center.store)


def setup_center_roles(center: ConfigCenter) -> list[str]:
    """:func:`setup_roles` for ``center``'s namespace, on its etcd."""
    return setup_roles(auth_admin(center), center.keys.namespace)
