"""The *floor* clients of ``bench/throughput.py`` (Kafka): the raw confluent-kafka clients doing
the least any identity-keeping wrapper must per record, in Python as the SDK is."""

from __future__ import annotations

import functools
from typing import Any

from hotstandby.failover.identity import HEADER, RecordId, new_session

__all__ = ["FloorConsumer", "FloorProducer"]


class FloorProducer:
    """The raw producer doing the least any identity-keeping wrapper must per record: an
    ``hs-id`` header, the record kept until its delivery report, a Python delivery report
    that releases it. (It leaves out the SDK's choice of partition in Python, which a
    sequence per partition needs.)"""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._session = new_session()
        self._sequence = 0
        self._kept: dict[int, tuple[str, bytes | None, bytes | None]] = {}

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None) -> None:
        seq = self._sequence
        self._raw.produce(
            topic,
            value=value,
            key=key,
            headers=[(HEADER, RecordId(self._session, 0, seq).encode())],
            on_delivery=functools.partial(self._delivered, seq),
        )
        self._sequence = seq + 1
        self._kept[seq] = (topic, key, value)

    def _delivered(self, seq: int, err: Any, msg: Any) -> None:
        self._kept.pop(seq, None)

    def poll(self, timeout: float) -> int:
        return int(self._raw.poll(timeout))

    def flush(self, timeout: float) -> int:
        return int(self._raw.flush(timeout))


class FloorConsumer:
    """The raw consumer doing the least a filter must per record: read the ``hs-id`` header,
    decode it, look it up."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._seen: set[RecordId] = set()

    def subscribe(self, topics: list[str]) -> None:
        self._raw.subscribe(topics)

    def poll(self, timeout: float) -> Any:
        msg = self._raw.poll(timeout)
        if msg is not None and msg.error() is None:
            for name, value in msg.headers() or ():
                if name == HEADER:
                    rid = RecordId.decode(value)
                    if rid not in self._seen:
                        self._seen.add(rid)
        return msg

    def close(self) -> None:
        self._raw.close()
