"""etcd's users, roles and permissions, for setting up an etcd with authentication.

pyetcd has no calls for them; these go to etcd's Auth service through its grpc stub, with the
store's connection (TLS, and the credentials of a user allowed to manage auth: ``root``).
"""

from __future__ import annotations

from typing import Any

from pyetcd import etcdrpc

from hotstandby.configcenter.etcd import EtcdStore

__all__ = ["READ", "READWRITE", "WRITE", "EtcdAuthAdmin", "prefix_end"]

READ, WRITE, READWRITE = 0, 1, 2  # etcd's Permission.Type


def prefix_end(prefix: str) -> bytes:
    """The end of the key range holding every key that starts with ``prefix``."""
    raw = bytearray(prefix.encode())
    while raw and raw[-1] == 0xFF:
        raw.pop()
    if not raw:
        return b"\0"  # every key
    raw[-1] += 1
    return bytes(raw)


class EtcdAuthAdmin:
    """Users, roles and ``auth enable`` on the etcd behind ``store``."""

    def __init__(self, store: EtcdStore) -> None:
        self._store = store

    def _auth(self, method: str, request: Any) -> Any:
        def call(client: Any) -> Any:
            stub = getattr(client.authstub, method)
            return stub(request, client.timeout, credentials=client.call_credentials, metadata=client.metadata)

        return self._store.call(call)

    def users(self) -> list[str]:
        return list(self._auth("UserList", etcdrpc.AuthUserListRequest()).users)

    def roles(self) -> list[str]:
        return list(self._auth("RoleList", etcdrpc.AuthRoleListRequest()).roles)

    def add_user(self, name: str, password: str) -> None:
        self._auth("UserAdd", etcdrpc.AuthUserAddRequest(name=name, password=password))

    def add_role(self, name: str) -> None:
        self._auth("RoleAdd", etcdrpc.AuthRoleAddRequest(name=name))

    def grant_role(self, user: str, role: str) -> None:
        self._auth("UserGrantRole", etcdrpc.AuthUserGrantRoleRequest(user=user, role=role))

    def grant_prefix(self, role: str, prefix: str, permission: int) -> None:
        """``role`` may read (``READ``), write (``WRITE``) or both every key under ``prefix``."""
        perm = etcdrpc.Permission(permType=permission, key=prefix.encode(), range_end=prefix_end(prefix))
        self._auth("RoleGrantPermission", etcdrpc.AuthRoleGrantPermissionRequest(name=role, perm=perm))

    def enable(self) -> None:
        """Turn authentication on (etcd wants a user ``root`` with the role ``root`` first)."""
        self._auth("AuthEnable", etcdrpc.AuthEnableRequest())
