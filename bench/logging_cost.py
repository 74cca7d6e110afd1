"""Cost of a log call the application did not enable (nothing configured: debug is off).

    python bench/logging_cost.py [--json]

Prints microseconds per call (best of several rounds, as timeit recommends) for a disabled
``debug`` call with three fields through: hotstandby's logger (``hotstandby.logs.get_logger``),
a bare stdlib logger, and structlog's default logger (what an unconfigured
``structlog.get_logger()`` does: it renders and prints every call, debug included, to stdout —
here to a discarded stream).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import timeit

import structlog

from hotstandby.logs import get_logger


def measure(number: int = 100_000) -> dict[str, float]:
    ours = get_logger("hotstandby.bench")
    bare = logging.getLogger("bench.bare")
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(io.StringIO()))
    default = structlog.get_logger("bench.default")

    def best(call: str, scope: dict[str, object]) -> float:
        times = timeit.repeat(call, globals=scope, number=number, repeat=5)
        return round(min(times) / number * 1e6, 3)

    out = {
        "hotstandby_us": best("log.debug('record.filtered', topic='t', partition=1, offset=2)", {"log": ours}),
        "stdlib_us": best("log.debug('record.filtered %s %s %s', 't', 1, 2)", {"log": bare}),
        "structlog_default_us": best(
            "log.debug('record.filtered', topic='t', partition=1, offset=2)", {"log": default}
        ),
    }
    structlog.reset_defaults()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure()
    if args.json:
        print(json.dumps(result))
    else:
        for name, value in result.items():
            print(f"{name:22} {value:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
