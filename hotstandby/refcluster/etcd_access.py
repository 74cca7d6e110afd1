"""How the reference cluster's etcd is reached: plaintext, or (``refcluster up --secure``) over
TLS with a user's password.

A secure cluster keeps its CA and etcd's server certificate in ``<dir>/tls`` (from
:class:`~hotstandby.refcluster.certs.LocalCA`) and gives etcd's ``root`` and one user per role
random passwords in ``<dir>/users/<user>.password`` (mode 0600):

==============  ===========================  =====================================================
user            role (``docs/security.md``)  used by
==============  ===========================  =====================================================
``root``        etcd's root                  ``refcluster up`` (users, roles, registration)
``admin``       ``hotstandby-admin``         whoever defines clusters and links
``sre``         ``hotstandby-sre``           the drill's flips
``app``         ``hotstandby-app``           the drill's producers, consumers and Spark query
``replicator``  ``hotstandby-replicator``    the replicators
==============  ===========================  =====================================================

Roles are made for every namespace the cluster registers, and granted to the user of the same
role, so a drill's or a test's own namespace works with the same users.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.errors import ConfigError
from hotstandby.etcd_security import EtcdSecurity
from hotstandby.refcluster.certs import LocalCA
from hotstandby.refcluster.system import HOST
from hotstandby.settings import Settings, parse_endpoints

__all__ = ["ROLE_USERS", "ROOT", "EtcdAccess"]

ROOT = "root"
#: user -> the role (``configcenter/roles.py``) it is granted in every registered namespace
ROLE_USERS = {"admin": "hotstandby-admin", "sre": "hotstandby-sre", "app": "hotstandby-app",
              "replicator": "hotstandby-replicator"}  # fmt: skip


class EtcdAccess:
    """The reference etcd whose members listen on ``ports``, for the cluster in ``directory``."""

    def __init__(self, directory: Path, ports: int | Sequence[int], *, secure: bool) -> None:
        self.directory = Path(directory)
        self.ports = (ports,) if isinstance(ports, int) else tuple(ports)
        self.port = self.ports[0]
        self.secure = secure

    def member_url(self, port: int) -> str:
        """One member's endpoint as clients name it (``https://`` when secure)."""
        return f"https://{HOST}:{port}" if self.secure else f"{HOST}:{port}"

    @property
    def url(self) -> str:
        """Every member's endpoint, comma-separated, as clients and ``HOTSTANDBY_ETCD`` take them."""
        return ",".join(self.member_url(port) for port in self.ports)

    @property
    def ca(self) -> Path:
        return self.directory / "tls" / "ca.pem"

    def password_file(self, user: str) -> Path:
        return self.directory / "users" / f"{user}.password"

    def _check_user(self, user: str) -> None:
        if user != ROOT and user not in ROLE_USERS:
            raise ConfigError(
                f"the reference cluster has no etcd user {user!r}; it has {ROOT}, {', '.join(ROLE_USERS)}"
            )

    def security(self, user: str | None = ROOT) -> EtcdSecurity:
        """TLS with the cluster's CA and ``user``'s password (None: no credentials); plaintext
        when the cluster is not secure."""
        if not self.secure:
            return EtcdSecurity()
        if user is None:
            return EtcdSecurity.resolve(tls=True, ca=str(self.ca), environ={})
        self._check_user(user)
        return EtcdSecurity.resolve(tls=True, ca=str(self.ca), user=user,
                                    password_file=str(self.password_file(user)), environ={})  # fmt: skip

    def settings(self, namespace: str, user: str | None = ROOT, *, timeout: float | None = None) -> Settings:
        settings = Settings(etcd=parse_endpoints(self.url), namespace=namespace, etcd_security=self.security(user))
        return settings if timeout is None else replace(settings, etcd_timeout=timeout)

    def client_config(self, user: str = "app") -> dict[str, str]:
        """The ``hotstandby.etcd*`` keys of a client that connects as ``user`` (the password by
        file: it never sits in a configuration)."""
        config = {"hotstandby.etcd": self.url}
        if self.secure:
            self._check_user(user)
            config.update({"hotstandby.etcd.ca": str(self.ca), "hotstandby.etcd.user": user,
                           "hotstandby.etcd.password.file": str(self.password_file(user))})  # fmt: skip
        return config

    def environ(self, user: str) -> dict[str, str]:
        """``HOTSTANDBY_ETCD_*`` for a process that connects as ``user``."""
        if not self.secure:
            return {}
        self._check_user(user)
        return {"HOTSTANDBY_ETCD_CA": str(self.ca), "HOTSTANDBY_ETCD_USER": user,
                "HOTSTANDBY_ETCD_PASSWORD_FILE": str(self.password_file(user))}  # fmt: skip

    # -- set-up ---------------------------------------------------------------------------

    def server_args(self) -> list[str]:
        """etcd's TLS arguments (a server certificate for 127.0.0.1, issued now)."""
        if not self.secure:
            return []
        pair = LocalCA(self.ca.parent).issue("etcd-server", server=True)
        return ["--cert-file", str(pair.cert), "--key-file", str(pair.key)]

    def _new_password(self, user: str) -> str:
        password = secrets.token_urlsafe(24)
        path = self.password_file(user)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(password + "\n")
        return password

    def enable_auth(self) -> None:
        """On a fresh etcd (auth off): ``root`` and the role users with new passwords, then
        ``auth enable``. Roles come with each namespace (:meth:`grant`)."""
        from hotstandby.configcenter.roles import auth_admin  # pyetcd's Auth stubs: only when secure

        with ConfigCenter.open(self.settings("/hotstandby", user=None)) as center:
            admin = auth_admin(center)
            for user in (ROOT, *ROLE_USERS):
                admin.add_user(user, self._new_password(user))
            admin.grant_role(ROOT, ROOT)
            admin.enable()

    def grant(self, namespace: str) -> None:
        """The roles for ``namespace``, granted to the users of the same role (as root)."""
        if not self.secure:
            return
        from hotstandby.configcenter.roles import auth_admin, role_name, setup_roles

        with ConfigCenter.open(self.settings(namespace)) as center:
            admin = auth_admin(center)
            setup_roles(admin, namespace)
            for user, role in ROLE_USERS.items():
                admin.grant_role(user, role_name(role, namespace))
