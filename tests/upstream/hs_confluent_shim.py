"""A pytest plugin that runs confluent-kafka-python's own tests through the Kafka facades
(``HS_UPSTREAM_MODE=facade``) or with confluent-kafka itself (``raw``), against the reference
cluster whose kafka-a the ``BROKERS`` variable names (their suite's bring-your-own-cluster
mode). Loaded by ``tests/integration/test_kafka_upstream.py`` as ``-p hs_confluent_shim`` from
a checkout of confluent-kafka-python; it has its own module name because that checkout's
``tests`` package is not ours.

Through the facades, ``confluent_kafka.Producer``, ``Consumer``, ``SerializingProducer`` and
``DeserializingConsumer`` are the facades' classes, configured for the route in
``HS_CONFIG`` (a JSON object of ``hotstandby.*`` properties) instead of ``bootstrap.servers``.
"""

from __future__ import annotations

import json
import os
import sys
import types
from typing import Any

import confluent_kafka


def _trivup_stand_in() -> None:
    """Their fixtures import trivup, which the bring-your-own-cluster mode does not use."""
    try:
        import trivup.clusters.KafkaCluster  # noqa: F401
    except ImportError:
        for name in ("trivup", "trivup.clusters", "trivup.clusters.KafkaCluster"):
            sys.modules[name] = types.ModuleType(name)
        sys.modules["trivup.clusters.KafkaCluster"].KafkaCluster = object  # type: ignore[attr-defined]


def _through_the_facades(route: dict[str, Any]) -> None:
    from hotstandby.adapters import kafka as facades

    def routed(conf: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        given = {**(conf if isinstance(conf, dict) else {}), **kwargs}
        if conf is not None and not isinstance(conf, dict):
            raise TypeError("expected configuration dict")
        given.pop("bootstrap.servers", None)
        return {**given, **route}

    def shim(base: type) -> type:
        def __init__(self: Any, conf: Any = None, **kwargs: Any) -> None:
            if conf is None and not kwargs:
                raise TypeError("expected configuration dict")
            base.__init__(self, routed(conf, kwargs))

        return type(base.__name__, (base,), {"__init__": __init__, "__module__": "confluent_kafka"})

    for name in ("Producer", "Consumer", "SerializingProducer", "DeserializingConsumer"):
        setattr(confluent_kafka, name, shim(getattr(facades, name)))


_trivup_stand_in()
if os.environ.get("HS_UPSTREAM_MODE") == "facade":
    _through_the_facades(json.loads(os.environ["HS_CONFIG"]))
