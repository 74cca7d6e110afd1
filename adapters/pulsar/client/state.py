"""What a Pulsar ``Client`` and its switch share: the cluster in use and its pulsar.Client, and
the producers, consumers, readers and table views made through it, under one lock (on which the
client's switch gate is built)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pulsar

from hotstandby.configcenter.documents import ClusterSpec

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.consumer.consumer import Consumer
    from hotstandby.adapters.pulsar.producer.producer import Producer
    from hotstandby.adapters.pulsar.reader.reader import Reader
    from hotstandby.adapters.pulsar.reader.table_view import TableView

__all__ = ["ClientState"]


class ClientState:
    """The one place a client's state lives (see the module doc)."""

    inner: pulsar.Client  # the pulsar.Client of the cluster in use
    spec: ClusterSpec  # the cluster in use

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        self.readers: list[Reader] = []
        self.views: list[TableView] = []

    def members(self) -> tuple[list[Producer], list[Consumer], list[Reader | TableView]]:
        """Producers, consumers, and the rest (readers and table views), as they are now."""
        with self.lock:
            return list(self.producers), list(self.consumers), [*self.readers, *self.views]
