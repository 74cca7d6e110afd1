"""Key layout under the namespace (DESIGN §3).

::

    <ns>/clusters/<name>                       ClusterSpec JSON
    <ns>/routes/<route>                        Route JSON
    <ns>/epochs/<route>                        the last route value the config center wrote
                                               (the epoch floor; outlives a deleted route)
    <ns>/links/<source>/<target>               Link JSON
    <ns>/ledgers/<group>/<topic>/<partition>   ack-ledger snapshot
    <ns>/staged/<group>/<batch>/<topic>/<partition>/<part>
                                               acknowledgements a batch's task staged, merged
                                               into the ledger when the batch commits
    <ns>/replans/<group>/<batch>/<part>        where a batch's task read instead of a cluster
                                               that died under it (the first answer stays)
    <ns>/clients/<route>/<client-id>           client presence (under a lease)
    <ns>/replication/<flow>/<topic>            a Pulsar replicator's progress (last copied message id)
    <ns>/topics/<cluster>/<topic>              topics known to exist on a cluster (for
                                               replicators and pattern consumers of
                                               brokers that cannot list them)

Segments that may contain ``/`` (Pulsar topics are URLs) are percent-encoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

__all__ = ["Keys"]


def _seg(text: str) -> str:
    return quote(str(text), safe="")


@dataclass(frozen=True, slots=True)
class Keys:
    """Builds and parses config-center keys for one namespace."""

    namespace: str

    @property
    def clusters(self) -> str:
        return f"{self.namespace}/clusters/"

    @property
    def routes(self) -> str:
        return f"{self.namespace}/routes/"

    @property
    def epochs(self) -> str:
        return f"{self.namespace}/epochs/"

    def epoch_floor(self, route: str) -> str:
        return self.epochs + _seg(route)

    @property
    def links(self) -> str:
        return f"{self.namespace}/links/"

    @property
    def ledgers(self) -> str:
        return f"{self.namespace}/ledgers/"

    @property
    def clients(self) -> str:
        return f"{self.namespace}/clients/"

    def lock(self, name: str) -> str:
        """``<ns>/locks/<name>``: a short mutual exclusion held under a lease."""
        return f"{self.namespace}/locks/{name}"

    def topics(self, cluster: str) -> str:
        return f"{self.namespace}/topics/{_seg(cluster)}/"

    def topic(self, cluster: str, topic: str) -> str:
        return self.topics(cluster) + _seg(topic)

    def cluster(self, name: str) -> str:
        return self.clusters + _seg(name)

    def route(self, name: str) -> str:
        return self.routes + _seg(name)

    def link(self, source: str, target: str) -> str:
        return f"{self.links}{_seg(source)}/{_seg(target)}"

    def group_ledgers(self, group: str) -> str:
        """``<ns>/ledgers/<group>/``: the prefix of every ledger of one group."""
        return f"{self.ledgers}{_seg(group)}/"

    def ledger(self, group: str, topic: str, partition: int) -> str:
        return f"{self.group_ledgers(group)}{_seg(topic)}/{int(partition)}"

    def ledger_of(self, group: str, key: str) -> tuple[str, int]:
        """``(topic, partition)`` of one of ``group``'s ledger keys; ``ValueError`` for another key."""
        parts = self.tail(key, self.group_ledgers(group))
        if len(parts) != 2 or not parts[0]:
            raise ValueError(f"{key!r} names no ledger of group {group!r}")
        return parts[0], int(parts[1])

    def staged(self, group: str, batch: str) -> str:
        """``<ns>/staged/<group>/<batch>/``: what the tasks of one batch staged."""
        return f"{self.namespace}/staged/{_seg(group)}/{_seg(batch)}/"

    def staged_part(self, group: str, batch: str, topic: str, partition: int, part: int) -> str:
        return f"{self.staged(group, batch)}{_seg(topic)}/{int(partition)}/{int(part)}"

    def replans(self, group: str, batch: str) -> str:
        return f"{self.namespace}/replans/{_seg(group)}/{_seg(batch)}/"

    def replan(self, group: str, batch: str, part: int) -> str:
        return f"{self.replans(group, batch)}{int(part)}"

    def client(self, route: str, client_id: str) -> str:
        return f"{self.clients}{_seg(route)}/{_seg(client_id)}"

    @staticmethod
    def tail(key: str, prefix: str) -> list[str]:
        """The decoded segments of ``key`` after ``prefix``."""
        if not key.startswith(prefix):
            raise ValueError(f"{key!r} is not under {prefix!r}")
        return [unquote(part) for part in key[len(prefix) :].split("/")]
