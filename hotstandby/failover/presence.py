"""Client presence: ``<ns>/clients/<route>/<client-id>`` under an etcd lease.

Each failover-aware client publishes where it is — role, cluster, route epoch, switch state,
duration of its last switch, why a switch under way has not completed (``problem``) — in a key attached to a lease it keeps alive. A client that dies
stops refreshing, and etcd deletes the key after the TTL. ``hotstandby status ROUTE`` counts
clients per cluster from these keys.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.doc_parsing import load_object
from hotstandby.configcenter.leased import LeasedKey, leased_values
from hotstandby.errors import ConfigCenterError, ValidationError
from hotstandby.logs import get_logger

__all__ = ["Presence", "list_clients", "parse_presence", "read_clients"]

log = get_logger("hotstandby.presence")

_RETRY_S = 1.0  # while etcd is unreachable: how often the keep-alive thread tries again


class Presence:
    def __init__(self, center: ConfigCenter, route: str, client_id: str, role: str, *, ttl_s: int = 10) -> None:
        self._key = center.keys.client(route, client_id)
        self._leased = LeasedKey(center, self._key, ttl_s=ttl_s)
        self._ttl_s = ttl_s
        self._doc: dict[str, Any] = {
            "client": client_id,
            "role": role,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "since": time.time(),
        }
        self._dirty = False  # the document changed since it was last written
        self._failing = False  # the last write or refresh failed (etcd unreachable)
        self._started = False
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"hotstandby-presence-{client_id}", daemon=True)

    def publish(self, **fields: Any) -> None:
        """Update what is published (cluster, epoch, state, last_switch_ms, ...) and write it.
        Never raises: while etcd is unreachable (the last write failed) it only notes the
        change, and the keep-alive thread writes it once etcd answers — a switch is not held
        up by one etcd timeout per change of state. The first publication is written by the
        keep-alive thread as it starts: creating a client does not wait for it."""
        with self._lock:
            self._doc.update(fields, updated=time.time())
            self._dirty = True
            if not self._started:
                if not self._stopped.is_set():
                    self._started = True
                    self._thread.start()
            elif not self._failing:
                self._try_write()

    def _try_write(self) -> None:
        # Caller holds the lock.
        try:
            if self._dirty:
                self._leased.write(json.dumps(self._doc).encode())
                self._dirty = False
            else:  # written again if the lease expired (e.g. etcd was down for longer than the TTL)
                self._leased.keep(json.dumps(self._doc).encode())
        except ConfigCenterError as exc:
            if not self._failing:  # once per outage
                log.warning("presence.write_failed", key=self._key, error=str(exc))
            self._failing = True
            return
        if self._failing:
            log.info("presence.written_again", key=self._key)
            self._failing = False

    def _run(self) -> None:
        with self._lock:  # the first publication
            if not self._stopped.is_set():
                self._try_write()
        while not self._stopped.wait(_RETRY_S if self._failing else self._ttl_s / 3):
            with self._lock:
                self._try_write()

    def close(self) -> None:
        self._stopped.set()
        if self._started:
            self._thread.join(self._ttl_s)
        with self._lock:
            try:
                self._leased.release()
            except ConfigCenterError as exc:  # the key goes when the lease expires
                log.warning("presence.revoke_failed", key=self._key, error=str(exc))


#: Field -> accepted JSON types of a presence document (others may be present: labels).
_PRESENCE_FIELDS: dict[str, tuple[type, ...]] = {
    "client": (str,),
    "role": (str,),
    "cluster": (str,),
    "state": (str,),
    "problem": (str,),
    "host": (str,),
    "epoch": (int,),
    "switches": (int,),
    "pid": (int,),
    "last_switch_ms": (int, float),
    "since": (int, float),
    "updated": (int, float),
}


def parse_presence(key: str, raw: bytes | str) -> dict[str, Any]:
    """One presence document; :class:`~hotstandby.errors.ValidationError` if it is malformed
    (the fields above, when present and not null, have their type; ``epoch`` is not negative)."""
    doc = load_object(key, raw)
    for name, types in _PRESENCE_FIELDS.items():
        value = doc.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise ValidationError(key, f"'{name}' must be {' or '.join(t.__name__ for t in types)}, got {value!r:.40}")
    if doc.get("epoch") is not None and doc["epoch"] < 0:
        raise ValidationError(key, f"'epoch' must not be negative, got {doc['epoch']}")
    return doc


def read_clients(center: ConfigCenter, route: str) -> tuple[list[dict[str, Any]], list[ValidationError]]:
    """The valid presence documents of a route's live clients, and the invalid ones' errors."""
    kvs = leased_values(center, center.keys.client(route, ""))
    out: list[dict[str, Any]] = []
    problems: list[ValidationError] = []
    for kv in kvs:
        try:
            out.append(parse_presence(kv.key, kv.value))
        except ValidationError as exc:
            problems.append(exc)
    return out, problems


def list_clients(center: ConfigCenter, route: str) -> list[dict[str, Any]]:
    """The valid presence documents of a route's live clients; invalid ones are logged."""
    out, problems = read_clients(center, route)
    for exc in problems:
        log.warning("presence.malformed", key=exc.key, problem=exc.problem)
    return out
