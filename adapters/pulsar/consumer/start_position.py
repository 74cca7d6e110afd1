"""Where a Pulsar subscription starts on the cluster it moves to.

An existing subscription resumes at its own cursor there, a new one at the earliest message;
whatever is read again is filtered by the ack ledger. The SDK subscribes with replicated
subscription state (``replicate_subscription_state_enabled``, unless the application says
otherwise): on Apache Pulsar that cursor follows the acknowledgements made on the other
cluster, a snapshot behind, for every subscription type. An Exclusive subscription of a
non-partitioned topic does better (:func:`start_after_copies`): it starts where the copies it
processed from that cluster end, by their ``__MSG_PROP_REPL_SOURCE_POSITION``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pulsar

from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.adapters.pulsar.client.switch import close_quietly
from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.failover.identity import RecordId
from hotstandby.logs import get_logger

__all__ = ["Origin", "holds", "start_after_copies"]

log = get_logger("hotstandby.pulsar.consumer")

#: The newest copy in the acknowledged prefix: (the cluster it came from, its source position
#: there as "ledger:entry", its identity).
Origin = tuple["str | None", str, RecordId]

# Checking that the new cluster still holds a copied message: entries read at most (two
# entries' messages; more than a batch's), and the wait for each.
_HOLDS_READ_LIMIT = 2_000
_HOLDS_WAIT_MS = 2_000


def start_after_copies(
    client: pulsar.Client,
    new: pulsar.Consumer,
    spec: ClusterSpec,
    *,
    topic: str,
    origin: object,
    route: Route,
    resubscribe: Callable[[], pulsar.Consumer],
) -> pulsar.Consumer:
    """Start the subscription (``new``, on ``spec``) where the copies from there that this
    consumer processed end, instead of its own cursor there or the earliest message.

    The newest copy from ``spec`` in the acknowledged prefix (every message received before
    it acknowledged) was stored on ``spec`` at its source position X. Replication keeps
    order, so whatever ``spec`` held before X — its own messages and copies of ours — reached
    this cluster before that copy and was processed. The subscription is moved to the entry
    before X (so X's entry is read again, whatever a seek includes); what is read again is
    filtered. Only if ``spec`` still holds the copied message at X (same identity: the
    cluster did not come back empty since), else the start stays where it was. Returns the
    consumer to use (``new``, or one subscribed again after the seek). ``origin``: the
    :data:`Origin` of the newest copy in the acknowledged prefix, or None."""
    if origin is None:
        log.info("consumer.start", topic=topic, to=spec.name, strategy="subscription_or_earliest")
        return new
    source, position, rid = cast(Origin, origin)
    if source not in (spec.name, None) or (source is None and len(route.clusters) != 2):
        return new  # a copy from a third cluster tells nothing about this one
    try:
        ledger, entry = (int(part) for part in str(position).split(":"))
    except ValueError:
        log.warning("consumer.bad_source_position", topic=topic, position=position)
        return new
    if entry < 1 or not holds(client, topic, ledger, entry, rid):
        log.info("consumer.start", topic=topic, to=spec.name, strategy="subscription_or_earliest",
                 unusable_source_position=position)  # fmt: skip
        return new
    try:
        new.seek(pulsar.MessageId(-1, ledger, entry - 1, -1))
    except pulsar.PulsarException as exc:
        log.warning("consumer.seek_failed", topic=topic, to=spec.name, error=str(exc))
        return new
    # The reference broker moves the cursor but dispatches from it only to a consumer that
    # subscribes again (docs/refcluster.md); with Pulsar, subscribing again does no harm.
    close_quietly(new)
    log.info("consumer.start", topic=topic, to=spec.name, strategy="replicated_source_position",
             ledger=ledger, entry=entry - 1)  # fmt: skip
    return resubscribe()


def holds(client: pulsar.Client, topic: str, ledger: int, entry: int, rid: RecordId) -> bool:
    """Whether ``topic`` stores the message ``rid`` at ``ledger:entry`` (read from the entry
    before, a batch at most)."""
    try:
        reader = client.create_reader(topic, pulsar.MessageId(-1, ledger, entry - 1, -1))
    except pulsar.PulsarException:
        return False
    try:
        for _ in range(_HOLDS_READ_LIMIT):
            try:
                msg = reader.read_next(_HOLDS_WAIT_MS)
            except pulsar.Timeout:
                return False
            mid = msg.message_id()
            if (mid.ledger_id(), mid.entry_id()) > (ledger, entry):
                return False
            if (mid.ledger_id(), mid.entry_id()) == (ledger, entry) and identity_of(msg) == rid:
                return True
        return False
    finally:
        close_quietly(reader)
