"""Size and membership cost of an ack ledger with many gaps.

    python bench/ledger.py [--messages N] [--unacked-ratio R] [--json]

One producer session, ``N`` messages (default 1 000 000) of which a random ``R`` (default 1 %,
so 10 000 gaps — Pulsar itself persists at most 10 000 unacknowledged ranges by default) are
still unacknowledged. Prints the size of the ledger as stored in etcd (``ledger_bytes``: the
JSON document, ranges as base64 varints) and of its range bytes alone, and the cost of one
membership test (``contains_us``: ``record_id in ledger``, over random identities, half of
them unacknowledged; best of several rounds, as timeit recommends).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import timeit

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ledger import LedgerDocument, PartitionLedger


def measure(messages: int, unacked_ratio: float, seed: int = 7) -> dict[str, float | int]:
    rng = random.Random(seed)
    session = bytes(rng.getrandbits(8) for _ in range(16))
    gaps = set(rng.sample(range(messages), int(messages * unacked_ratio)))
    ledger = PartitionLedger()
    for seq in range(messages):
        if seq not in gaps:
            ledger.ack(RecordId(session, 0, seq), 1_795_000_000_000)
    stored = LedgerDocument(ledger, generation=1, owner="bench").to_json()
    assert LedgerDocument.from_json(stored).ledger == ledger
    unacked = sorted(gaps)
    probes = [RecordId(session, 0, rng.choice(unacked) if i % 2 else rng.randrange(messages)) for i in range(10_000)]
    assert all(p not in ledger for p in probes[1::2])
    timer = timeit.Timer("for p in probes: p in ledger", globals={"probes": probes, "ledger": ledger})
    best = min(timer.repeat(repeat=7, number=10)) / (10 * len(probes))
    ranges = ledger.sessions_json()[session.hex()]["acked"]
    return {
        "messages": messages,
        "unacked": len(gaps),
        "ledger_bytes": len(stored.encode()),
        "range_bytes_base64": len(ranges),
        "contains_us": round(best * 1e6, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--unacked-ratio", type=float, default=0.01)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.messages, args.unacked_ratio)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['messages']:,} messages, {result['unacked']:,} unacknowledged: ledger "
              f"{result['ledger_bytes']:,} bytes in etcd, membership test {result['contains_us']} us")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
