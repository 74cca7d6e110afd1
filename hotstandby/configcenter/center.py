"""Typed access to the config center: clusters, routes, links, and route flips."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from hotstandby.configcenter.documents import (
    ClusterSpec,
    Link,
    Route,
    check_floor,
    check_link,
    check_route,
    utc_now_iso,
)
from hotstandby.configcenter.keys import Keys
from hotstandby.configcenter.snapshot import Snapshot, default_actor
from hotstandby.configcenter.store import KeyValue, KVStore
from hotstandby.errors import (
    ConcurrentUpdateError,
    ConfigError,
    HotStandbyError,
    StaleEpochError,
    SwitchError,
    UnexpectedEpochError,
    UnknownClusterError,
    UnknownRouteError,
    ValidationError,
)
from hotstandby.logs import get_logger
from hotstandby.secret_refs import literal_secrets, redact_value
from hotstandby.settings import Settings

if TYPE_CHECKING:
    from hotstandby.configcenter.prefix_watch import OnEvent, OnSnapshot, PrefixWatch
    from hotstandby.configcenter.watcher import RouteChange, RouteWatcher

__all__ = ["ConfigCenter", "Snapshot", "default_actor"]  # the last two from snapshot.py

log = get_logger("hotstandby.configcenter")

D = TypeVar("D")
K = TypeVar("K")


def _segments(kv: KeyValue, prefix: str, count: int) -> list[str]:
    parts = Keys.tail(kv.key, prefix)
    if len(parts) != count or not all(parts):
        raise ValidationError(kv.key, f"expected {count} name segment(s) after {prefix}")
    return parts


class ConfigCenter:
    """Reads, validates and writes hotstandby documents in a :class:`KVStore`."""

    def __init__(self, store: KVStore, namespace: str = "/hotstandby") -> None:
        self.store = store
        self.keys = Keys(namespace)

    def actor(self, claimed: str | None = None) -> str:
        """Who makes a change, for a route's ``by``: the etcd user the store authenticated as
        (what the caller claims does not count then), else ``claimed`` or ``user@host``."""
        return self.store.identity or claimed or default_actor()

    @classmethod
    def open(cls, settings: Settings | None = None) -> ConfigCenter:
        """Connect to etcd as ``settings`` say (see :class:`~hotstandby.settings.Settings`)."""
        from hotstandby.configcenter.etcd import EtcdStore

        settings = settings or Settings.resolve()
        store = EtcdStore(settings.etcd, timeout=settings.etcd_timeout, security=settings.etcd_security)
        return cls(store, settings.namespace)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> ConfigCenter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------

    def _parse_cluster(self, kv: KeyValue) -> ClusterSpec:
        (name,) = _segments(kv, self.keys.clusters, 1)
        return ClusterSpec.from_json(name, kv.value, key=kv.key)

    def _parse_route(self, kv: KeyValue) -> Route:
        (name,) = _segments(kv, self.keys.routes, 1)
        return Route.from_json(name, kv.value, key=kv.key)

    def _parse_floor(self, kv: KeyValue) -> Route:
        (name,) = _segments(kv, self.keys.epochs, 1)
        return Route.from_json(name, kv.value, key=kv.key)

    def _parse_link(self, kv: KeyValue) -> Link:
        source, target = _segments(kv, self.keys.links, 2)
        return Link.from_json(source, target, kv.value, key=kv.key)

    def epoch_floor(self, name: str) -> tuple[Route | None, int]:
        """Route ``name``'s epoch floor and the floor key's mod revision (None, 0 if none).
        An unreadable floor is logged and counts as none."""
        kv = self.store.get(self.keys.epoch_floor(name))
        if kv is None:
            return None, 0
        try:
            return self._parse_floor(kv), kv.mod_revision
        except ValidationError as exc:
            log.warning("epoch_floor.invalid", key=kv.key, problem=exc.problem)
            return None, kv.mod_revision

    def clusters(self) -> dict[str, ClusterSpec]:
        """Every valid cluster definition; invalid ones are logged and left out."""
        kvs, _ = self.store.get_prefix(self.keys.clusters)
        return self._parse_all(kvs, self._parse_cluster, lambda c: c.name, [])

    def _parse_all(
        self,
        kvs: list[KeyValue],
        parse: Callable[[KeyValue], D],
        key_of: Callable[[D], K],
        problems: list[HotStandbyError],
    ) -> dict[K, D]:
        out: dict[K, D] = {}
        for kv in kvs:
            try:
                doc = parse(kv)
            except ValidationError as exc:
                log.warning("document.invalid", key=kv.key, problem=exc.problem)
                problems.append(exc)
                continue
            out[key_of(doc)] = doc
        return out

    def snapshot(self) -> Snapshot:
        """All clusters, routes and links; routes that reference bad clusters are problems."""
        kvs, revision = self.store.get_prefix(self.keys.namespace + "/")
        by_prefix: dict[str, list[KeyValue]] = {
            self.keys.clusters: [], self.keys.routes: [], self.keys.links: [], self.keys.epochs: []
        }  # fmt: skip
        for kv in kvs:
            for prefix, bucket in by_prefix.items():
                if kv.key.startswith(prefix):
                    bucket.append(kv)
        problems: list[HotStandbyError] = []
        clusters = self._parse_all(by_prefix[self.keys.clusters], self._parse_cluster, lambda c: c.name, problems)
        routes = self._parse_all(by_prefix[self.keys.routes], self._parse_route, lambda r: r.name, problems)
        links = self._parse_all(
            by_prefix[self.keys.links], self._parse_link, lambda lk: (lk.source, lk.target), problems
        )
        floors = self._parse_all(by_prefix[self.keys.epochs], self._parse_floor, lambda r: r.name, [])
        invalid = {p.key.rsplit("/", 1)[-1]: p.problem for p in problems
                   if isinstance(p, ValidationError) and p.key.startswith(self.keys.clusters)}  # fmt: skip
        for name, route in list(routes.items()):
            try:
                check_floor(route, floors.get(name), key=self.keys.route(name))
                check_route(route, clusters, key=self.keys.route(name), invalid=invalid)
            except ConfigError as exc:
                problems.append(exc)
                del routes[name]
        return Snapshot(revision, clusters, routes, links, problems, floors)

    def cluster(self, name: str) -> ClusterSpec:
        kv = self.store.get(self.keys.cluster(name))
        if kv is None:
            raise UnknownClusterError(f"unknown cluster {name!r} (no key {self.keys.cluster(name)})")
        return self._parse_cluster(kv)

    def _route_kv(self, name: str) -> KeyValue:
        kv = self.store.get(self.keys.route(name))
        if kv is None:
            raise UnknownRouteError(f"unknown route {name!r} (no key {self.keys.route(name)})")
        return kv

    def _base(self, kv: KeyValue, floor: Route | None) -> Route:
        """What a change of the route starts from: the stored value, or — when that cannot
        be read (written by hand) — the last value the config center wrote."""
        try:
            return self._parse_route(kv)
        except ValidationError as exc:
            if floor is None:
                raise
            log.warning("route.unreadable", key=kv.key, problem=exc.problem, using_epoch=floor.epoch)
            return floor

    @staticmethod
    def _below_floor(route: Route, floor: Route | None) -> bool:
        """Whether the stored ``route`` is invalid against its floor (a switch repairs it)."""
        try:
            check_floor(route, floor)
        except StaleEpochError:
            return True
        return False

    def last_route(self, name: str) -> Route:
        """The stored route as a change would start from it (see :meth:`switch`)."""
        return self._base(self._route_kv(name), self.epoch_floor(name)[0])

    def stored_route(self, name: str) -> Route:
        """The route as stored, checked on its own (not against clusters or its floor)."""
        return self._parse_route(self._route_kv(name))

    def route(self, name: str) -> Route:
        """The route as stored, validated against its epoch floor and the cluster definitions."""
        route = self.stored_route(name)
        check_floor(route, self.epoch_floor(name)[0], key=self.keys.route(name))
        check_route(route, self.clusters())
        return route

    def routes(self) -> dict[str, Route]:
        return self.snapshot().routes

    def links(self) -> dict[tuple[str, str], Link]:
        return self.snapshot().links

    # -- writing -------------------------------------------------------------------------

    def put_cluster(self, spec: ClusterSpec, *, replace: bool = False, allow_literal: bool = False) -> None:
        """Store a cluster definition; refuses to overwrite one unless ``replace``, and refuses
        secrets written literally (not ``${env:NAME}``/``${file:PATH}``) unless ``allow_literal``
        (then logs ``cluster.literal_secret``, naming the settings only)."""
        key = self.keys.cluster(spec.name)
        literal = literal_secrets({"url": spec.url, **spec.client, **spec.producer, **spec.consumer})
        if literal and not allow_literal:
            raise ValidationError(key, f"{', '.join(literal)}: a secret must be a reference, ${{env:NAME}} or "
                                       "${file:PATH}, resolved by each client (allow_literal to store it anyway)")  # fmt: skip
        if literal:
            log.warning("cluster.literal_secret", cluster=spec.name, settings=literal)
        if replace:
            self.store.put(key, spec.to_json().encode())
        elif not self.store.put_if_revision(key, spec.to_json().encode(), 0):
            raise ConfigError(f"{key}: cluster {spec.name!r} already exists")
        log.info("cluster.stored", cluster=spec.name, kind=spec.kind, url=redact_value("url", spec.url))

    def put_link(self, link: Link) -> None:
        check_link(link, self.clusters())
        self.store.put(self.keys.link(link.source, link.target), link.to_json().encode())
        log.info("link.stored", source=link.source, target=link.target, policy=link.policy)

    def create_route(self, name: str, clusters: list[str], active: str, *, reason: str = "created") -> Route:
        """Create a route; refuses an existing route or unknown clusters. Its epoch is 1, or
        the epoch after the floor a deleted route of that name left."""
        key = self.keys.route(name)
        if active not in clusters:
            raise ValidationError(key, f"active cluster {active!r} is not one of {clusters}")
        floor, floor_revision = self.epoch_floor(name)
        route = Route(
            name=name,
            active=active,
            clusters=tuple(clusters),
            epoch=floor.epoch + 1 if floor else 1,
            reason=reason,
            by=self.actor(),
            at=utc_now_iso(),
        )
        # Round-trip through the parser so a created route passes the same checks as a read one.
        route = Route.from_json(name, route.to_json(), key=key)
        check_route(route, self.clusters(), key=key)
        if not self._write_route(route, {key: 0, self.keys.epoch_floor(name): floor_revision}):
            if self.store.get(key) is not None:
                raise ConfigError(f"{key}: route {name!r} already exists")
            raise ConcurrentUpdateError(f"route {name!r} was created or deleted meanwhile; try again")
        log.info("route.created", route=name, active=active, clusters=list(clusters), epoch=route.epoch)
        return route

    def _write_route(self, route: Route, expected: dict[str, int]) -> bool:
        """Write the route and its epoch floor in one transaction, if ``expected`` holds."""
        value = route.to_json().encode()
        puts = {self.keys.route(route.name): value, self.keys.epoch_floor(route.name): value}
        return self.store.commit_if_revisions(expected, puts)

    def switch(
        self,
        name: str,
        to: str,
        *,
        reason: str = "",
        by: str | None = None,
        expect_epoch: int | None = None,
        before_write: Callable[[ClusterSpec], None] | None = None,
    ) -> Route:
        """Flip route ``name`` to cluster ``to`` at the next epoch, atomically.

        The next epoch is one above the stored route's and its floor's; a stored value that
        cannot be read at all is replaced, starting from the floor (the last value written
        here). The write is an etcd transaction conditioned on the mod revisions read, so of
        two concurrent flips one fails with :class:`ConcurrentUpdateError` instead of being
        lost. With ``expect_epoch`` the flip
        is refused (:class:`UnexpectedEpochError`) unless the route is at that epoch — two
        operators acting on what they saw cannot both win. ``before_write`` (e.g. a probe of
        the target) is called with the target's definition once every check passed; an error
        it raises leaves the route unchanged.
        """
        kv = self._route_kv(name)
        floor, floor_revision = self.epoch_floor(name)
        current = self._base(kv, floor)
        if expect_epoch is not None and current.epoch != expect_epoch:
            raise UnexpectedEpochError(
                f"route {name!r} is at epoch {current.epoch} (active {current.active!r}), not the expected "
                f"{expect_epoch}: someone changed it; check `hotstandby status {name}` and decide again"
            )
        clusters = self.clusters()
        check_route(current, clusters, key=kv.key)
        if to not in clusters:
            raise UnknownClusterError(f"unknown cluster {to!r}; known: {', '.join(sorted(clusters)) or 'none'}")
        kind = clusters[current.active].kind
        if clusters[to].kind != kind:
            raise SwitchError(f"cluster {to!r} is a {clusters[to].kind} cluster; route {name!r} is {kind}")
        if to not in current.clusters:
            raise SwitchError(f"cluster {to!r} is not one of route {name!r}'s clusters {list(current.clusters)}")
        if to == current.active and not self._below_floor(current, floor):
            raise SwitchError(f"route {name!r} is already active on {to!r} (epoch {current.epoch})")
        if before_write is not None:
            before_write(clusters[to])
        new = current.flipped(to, reason=reason, by=self.actor(by), after=floor.epoch if floor else 0)
        if not self._write_route(new, {kv.key: kv.mod_revision, self.keys.epoch_floor(name): floor_revision}):
            raise ConcurrentUpdateError(f"route {name!r} changed while switching; read it again and retry")
        log.info("route.switched", route=name, previous=current.active, active=to, epoch=new.epoch, reason=reason)
        return new

    def delete_route(self, name: str) -> Route | None:
        """Delete route ``name``, keeping its epoch floor so that a route created again under
        that name continues above it. Returns the deleted value (None if it was invalid)."""
        kv = self._route_kv(name)
        floor, floor_revision = self.epoch_floor(name)
        try:
            current: Route | None = self._parse_route(kv)
        except ValidationError:
            current = None
        puts = {}
        if current is not None and (floor is None or current.epoch > floor.epoch):
            puts[self.keys.epoch_floor(name)] = current.to_json().encode()
        expected = {kv.key: kv.mod_revision, self.keys.epoch_floor(name): floor_revision}
        if not self.store.commit_if_revisions(expected, puts, [kv.key]):
            raise ConcurrentUpdateError(f"route {name!r} changed while deleting; read it again and retry")
        log.info("route.deleted", route=name, epoch=current.epoch if current else None)
        return current

    def register_topic(self, cluster: str, topic: str) -> None:
        """Note that ``topic`` exists on ``cluster``, for replicators and pattern consumers
        (Pulsar) of brokers that cannot list their topics."""
        self.cluster(cluster)  # refuse unknown clusters
        self.store.put(self.keys.topic(cluster, topic), b"{}")

    def registered_topics(self, cluster: str) -> list[str]:
        """The topics registered for ``cluster``; a key under the prefix that names no topic
        (written by hand: empty, or with an unquoted '/') is logged and left out."""
        prefix = self.keys.topics(cluster)
        kvs, _ = self.store.get_prefix(prefix)
        found = []
        for kv in kvs:
            parts = Keys.tail(kv.key, prefix)
            if len(parts) == 1 and parts[0]:
                found.append(parts[0])
            else:
                log.warning("topic.rejected", key=kv.key, reason="the key names no topic")
        return found

    # -- watching ------------------------------------------------------------------------

    def watch_routes(
        self, callback: Callable[[RouteChange], None] | None = None, *, timeout: float = 10.0
    ) -> RouteWatcher:
        """Start a :class:`RouteWatcher`; ``callback`` (optional) is subscribed before it starts.

        Raises :class:`~hotstandby.errors.ConfigCenterUnavailable` if the routes cannot be
        read within ``timeout`` seconds.
        """
        from hotstandby.configcenter.watcher import RouteWatcher

        watcher = RouteWatcher(self)
        if callback is not None:
            watcher.subscribe(callback)
        watcher.start(timeout)
        return watcher

    def follow_prefix(
        self, prefix: str, on_snapshot: OnSnapshot, on_event: OnEvent, *, name: str, max_backoff: float = 2.0
    ) -> PrefixWatch:
        """Start a :class:`~hotstandby.configcenter.prefix_watch.PrefixWatch` of ``prefix``
        (its first read happens on its thread, retried while etcd does not answer, at most
        ``max_backoff`` s apart)."""
        from hotstandby.configcenter.prefix_watch import PrefixWatch

        return PrefixWatch(self.store, prefix, on_snapshot, on_event, name=name, max_backoff=max_backoff).start()
