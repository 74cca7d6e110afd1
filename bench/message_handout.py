"""Cost per record of handing a Kafka record to the application without the SDK's ``hs-id``
header, next to what the consumer does per record anyway.

    python bench/message_handout.py [--json]

Microseconds per record (best of several rounds, as timeit recommends), in the same run, for
records with the ``hs-id`` header and one application header:

* ``read_us`` — what any application does with a record: ``value()``, ``headers()``;
* ``identity_us`` — decoding the ``hs-id`` (what the ack ledger filter needs);
* ``handout_kept_us`` — building the message handed out under its logical topic, headers as
  they came (``hs-id`` shown);
* ``handout_hidden_us`` — the same without ``hs-id`` (what the consumer does now).

``hiding_ratio`` is hidden / kept: what hiding the header costs on the message built anyway.
``bench/throughput.py --system kafka`` measures the whole consumer against the raw one.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from typing import Any

from confluent_kafka import Message

from hotstandby.adapters.kafka.consumer.fetch import LogicalMessage, record_id
from hotstandby.failover.identity import HEADER, RecordId, new_session


def _build(msg: Message, headers: Any) -> LogicalMessage:
    out = LogicalMessage(
        topic="orders", partition=msg.partition(), offset=msg.offset(), key=msg.key(), value=msg.value(),
        headers=headers or None, timestamp=msg.timestamp(), leader_epoch=-1,
    )  # fmt: skip
    out.physical_topic = msg.topic() or ""
    return out


def measure(number: int = 50_000) -> dict[str, float]:
    rid = RecordId(new_session(), 3, 12345).encode()
    msg = Message(topic="kafka-b.orders", partition=3, offset=99, key=b"k", value=b"v" * 100,
                  headers=[(HEADER, rid), ("app", b"1")], timestamp=(1, 1_700_000_000_000))  # fmt: skip

    def read() -> None:
        msg.value()
        msg.headers()

    def identity() -> None:
        record_id(msg.headers(), "kafka-b.orders", 3, 99)

    def kept() -> None:
        _build(msg, msg.headers())

    def hidden() -> None:
        _build(msg, [(k, v) for k, v in msg.headers() if k != HEADER])

    def best(call: Any) -> float:
        return round(min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6, 3)

    out = {"read_us": best(read), "identity_us": best(identity), "handout_kept_us": best(kept),
           "handout_hidden_us": best(hidden)}  # fmt: skip
    out["hiding_ratio"] = round(out["handout_hidden_us"] / out["handout_kept_us"], 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure()
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:20} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
