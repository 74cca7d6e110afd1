"""Configuration of one Pulsar replication flow (source cluster -> target cluster)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from hotstandby.errors import ValidationError

__all__ = ["PulsarFlowConfig"]


@dataclass(frozen=True)
class PulsarFlowConfig:
    """``namespaces`` limits what is copied (``tenant/namespace``). Topics are found in
    ``topics`` and in the config center's topic registry for the source cluster
    (``<ns>/topics/<source>/``): pulsar-lite cannot list a namespace's topics."""

    source_alias: str
    source_url: str
    target_alias: str
    target_url: str
    namespaces: tuple[str, ...] = ("public/default",)
    topics: tuple[str, ...] = ()
    etcd: str = ""
    config_namespace: str = "/hotstandby"
    refresh_topics: float = 1.0
    status_path: str = ""

    @property
    def name(self) -> str:
        return f"{self.source_alias}->{self.target_alias}"

    def in_scope(self, topic: str) -> bool:
        """Is ``persistent://tenant/ns/name`` in one of the configured namespaces?"""
        rest = topic.split("://", 1)[-1]
        return "/".join(rest.split("/")[:2]) in self.namespaces

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def load(cls, path: str | Path) -> PulsarFlowConfig:
        try:
            doc = json.loads(Path(path).read_text())
            doc["namespaces"] = tuple(doc.get("namespaces", ("public/default",)))
            doc["topics"] = tuple(doc.get("topics", ()))
            return cls(**doc)
        except (OSError, ValueError, TypeError) as exc:
            raise ValidationError(str(path), f"not a Pulsar replication flow config: {exc}") from None
