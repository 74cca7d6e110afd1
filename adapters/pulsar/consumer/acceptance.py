"""Whether a message a Pulsar consumer received is handed out: not when the subscription
acknowledged its identity before (on any cluster, by any of its consumers: it is acknowledged
on the broker and filtered), nor while another stored copy of it is handed out and not
acknowledged yet (the one handed out stands for both). Once per message: each call into the
client library costs about 0.5 µs, each Python call a tenth of that."""

from __future__ import annotations

import pulsar

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM, identity_in
from hotstandby.adapters.pulsar.consumer.handed import Handed, HandedOut, MessageKey, hand_out, stored_at
from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState
from hotstandby.adapters.pulsar.topics import TopicSelection
from hotstandby.failover.identity import RecordId

__all__ = ["Acceptance"]


class Acceptance:
    """A consumer's filter (its subscription state's lock held by every call)."""

    def __init__(
        self,
        state: SubscriptionState,
        out: HandedOut,
        topics: TopicSelection,
        *,
        track_origins: bool,
        cumulative: bool,
    ) -> None:
        self._state = state
        self._out = out  # what the consumer handed out and was not acknowledged
        self._topics = topics
        self._topic = topics.name  # one topic: its name, the logical topic of all its messages
        self._multi = topics.single is None  # a list or a pattern: a message's topic names its logical topic
        self._track_origins = track_origins  # keep where replicated messages came from (start_position)
        self._cumulative = cumulative  # the broker takes a partition's acknowledged prefix at once
        # The slot every message comes from when the topic is not partitioned on the cluster in
        # use (else None: the message's topic names its partition); set again by a switch.
        self.slot: tuple[str, int] | None = None

    def accept(self, msg: pulsar.Message, inner: pulsar.Consumer) -> pulsar.Message | None:
        """``msg`` (received by ``inner``, the consumer in use) or, when it is not to be handed
        out, None."""
        properties = msg.properties()
        rid = identity_in(properties, msg)
        key: MessageKey = rid if rid is not None else stored_at(msg)
        handed = self._out.current
        if handed and key in handed and not self._handed_again(key, rid, msg, inner):
            return None
        slot = self.slot or (str(msg.topic_name()), 0)
        logical = self._topic if not self._multi else self._topics.logical(slot[0])
        positions = self._state.positions
        position = positions.get(slot, 0)
        positions[slot] = position + 1
        origin = None
        if self._track_origins and rid is not None:
            source_position = properties.get(REPL_SOURCE_POSITION)
            if source_position is not None:
                origin = (properties.get(REPLICATED_FROM), source_position, rid)
        acks = self._state.acks
        # Pulsar positions are the receive order; a publish time is not needed (0).
        if not acks.offer(logical, slot, position, rid, 0, origin):
            acks.acknowledge(slot, position)
            self._state.after_store(inner, msg, slot=slot if self._cumulative else None, position=position)
            return None
        handed[key] = Handed(key, slot, position, rid, msg)
        return hand_out(msg, key)

    def _handed_again(self, key: MessageKey, rid: RecordId | None, msg: pulsar.Message, inner: pulsar.Consumer) -> bool:
        """``key`` is handed out already and not acknowledged: dispatched twice by the broker, or
        another stored copy of it (a replicated copy and its re-sent twin, one of them
        negatively acknowledged and now redelivered) — the one handed out stands for both
        (False: filtered). Only the same stored message redelivered (ack timeout) is handed
        out again (True)."""
        handed = self._out.current[key]
        acks = self._state.acks
        if msg.redelivery_count() <= handed.message.redelivery_count() or (
            rid is not None and stored_at(msg) != stored_at(handed.message)
        ):
            acks.filtered += 1
            self._state.after_store(inner, msg)  # the broker may drop this one
            return False
        acks.release(handed.slot, handed.position)
        del self._out.current[key]
        return True
