"""The adapter contract for Pulsar, on the reference cluster."""

from __future__ import annotations

from tests.contract.adapter import AdapterContract


class TestPulsarAdapter(AdapterContract):
    kind = "pulsar"
    cluster = "pulsar-a"
