"""The Kafka ``Consumer`` facade, split by responsibility: the public class delegates
(:mod:`.consumer`) to parts that share one :class:`~.state.ConsumerState` — fetching
(:mod:`.fetch`), committing (:mod:`.commit`, :mod:`.background_commit`), rebalances and
assignments (:mod:`.rebalance`, :mod:`.assign`), and its switch participant (:mod:`.switch`,
with :mod:`.start_positions`, :mod:`.group_leave`, :mod:`.stale_members`, the copies'
modules)."""

from hotstandby.adapters.kafka.consumer.consumer import Consumer

__all__ = ["Consumer"]
