"""The Pulsar facades (client, producer, consumer, reader, table view) have pulsar-client's
public attributes; every difference is listed, with its reason, in docs/pulsar-api.md (the one
place that says so), and every method of pulsar-client is described there."""

from __future__ import annotations

import re
from pathlib import Path

import pulsar
import pytest

from hotstandby.adapters.pulsar.client.client import Client
from hotstandby.adapters.pulsar.consumer.consumer import Consumer
from hotstandby.adapters.pulsar.producer.producer import Producer
from hotstandby.adapters.pulsar.reader.reader import Reader
from hotstandby.adapters.pulsar.reader.table_view import TableView

DOC = Path(__file__).resolve().parents[2] / "docs" / "pulsar-api.md"
PAIRS = {"Client": (pulsar.Client, Client), "Producer": (pulsar.Producer, Producer),
         "Consumer": (pulsar.Consumer, Consumer), "Reader": (pulsar.Reader, Reader),
         "TableView": (pulsar.tableview.TableView, TableView)}  # fmt: skip


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def sections() -> dict[str, str]:
    """The page's ``## Title`` sections by title."""
    parts = re.split(r"^## (.+)$", DOC.read_text(), flags=re.MULTILINE)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def first_cells(body: str) -> list[str]:
    """The first cell (a `name`) of each table row in ``body``."""
    return re.findall(r"^\| `([^`]+)` \|", body, flags=re.MULTILINE)


def differences() -> dict[tuple[str, str], str]:
    """(``Class.attribute``, kind) -> reason, from the differences table."""
    rows = re.findall(r"^\| `(\w+\.\w+)` \| (missing|added) \| (.+) \|$", sections()["Differences from pulsar-client"],
                      flags=re.MULTILINE)  # fmt: skip
    return {(name, kind): reason for name, kind, reason in rows}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_facade_differs_from_pulsar_client_only_where_the_docs_say_why(name: str) -> None:
    theirs, ours = PAIRS[name]
    listed = differences()
    documented = {kind: {attr.split(".")[1] for attr, k in listed if k == kind and attr.startswith(f"{name}.")}
                  for kind in ("missing", "added")}  # fmt: skip
    assert public(theirs) - public(ours) == documented["missing"], "missing from the facade, or listed wrongly"
    assert public(ours) - public(theirs) == documented["added"], "added by the facade, or listed wrongly"
    assert all(reason.strip() for reason in listed.values())


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_every_method_of_pulsar_client_is_described_across_a_switch(name: str) -> None:
    theirs, _ours = PAIRS[name]
    described = first_cells(sections()[name])
    assert len(described) == len(set(described)), "described twice"
    assert set(described) == public(theirs)


def test_the_readme_links_the_page() -> None:
    assert "docs/pulsar-api.md" in (DOC.parents[1] / "README.md").read_text()
