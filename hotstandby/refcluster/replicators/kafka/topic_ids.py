"""Which source topics were created again since the replicator last looked: a topic deleted
and created again, or a source that came back empty and had its topics provisioned again,
counts offsets from zero, so the replicator's progress for it names other records."""

from __future__ import annotations

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

__all__ = ["TopicIds"]


class TopicIds:
    """Each source topic's id as last seen, remembered across the topic's absence (so a source
    that restarted empty is noticed when the topic is back)."""

    def __init__(self, admin: AdminClient, timeout_s: float) -> None:
        self._admin = admin
        self._timeout_s = timeout_s
        self.ids: dict[str, str] = {}  # source topic -> its id

    def recreated(self, topics: list[str]) -> list[str]:
        """The topics among ``topics`` whose id changed since the last look; a topic not
        answered for now is looked at again next time."""
        if not topics:
            return []
        futures = self._admin.describe_topics(TopicCollection(topics), request_timeout=self._timeout_s / 2)
        out = []
        for topic, future in futures.items():
            try:
                topic_id = str(future.result(self._timeout_s).topic_id)
            except KafkaException:
                continue
            known = self.ids.get(topic)
            if known is not None and known != topic_id:
                out.append(topic)
            self.ids[topic] = topic_id
        return out
