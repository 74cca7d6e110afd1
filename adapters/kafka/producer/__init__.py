"""The Kafka ``Producer`` facade, split by responsibility: the public class (:mod:`.producer`),
the rest of confluent-kafka's surface (:mod:`.extras`), transactions (:mod:`.transactions`),
and what a switch asks of the clusters (:mod:`.held_records`, :mod:`.partition_counts`)."""

from hotstandby.adapters.kafka.producer.producer import Producer

__all__ = ["Producer"]
