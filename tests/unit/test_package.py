"""Import hygiene and the curated public API."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import hotstandby
from hotstandby.errors import MissingDependencyError, ValidationError
from hotstandby.registry import import_adapter_module

HEAVY = ("confluent_kafka", "pulsar", "pyspark", "pyetcd", "grpc")


def test_import_hotstandby_does_not_import_clients() -> None:
    code = (
        "import sys, hotstandby, hotstandby.cli, hotstandby.refcluster, hotstandby.adapters, hotstandby.spark_integration;"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported at import time: {out.stdout.strip()}"


def test_all_is_sorted_and_complete() -> None:
    names = [n for n in hotstandby.__all__ if n != "__version__"]
    assert names == sorted(names)
    for name in hotstandby.__all__:
        assert hasattr(hotstandby, name), name
    public = {n for n in vars(hotstandby) if not n.startswith("_") and isinstance(getattr(hotstandby, n), type)}
    assert public <= set(hotstandby.__all__), public - set(hotstandby.__all__)


def test_every_error_derives_from_the_root() -> None:
    from hotstandby import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.HotStandbyError), name
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.ConfigCenterUnavailable, ConnectionError)


def test_missing_client_library_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    import hotstandby.adapters.kafka as pkg

    # An adapter module that needs the client library, as the facades do.
    (tmp_path / "needs_client.py").write_text("import confluent_kafka\n")
    monkeypatch.setattr(pkg, "__path__", [*pkg.__path__, str(tmp_path)])
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "hotstandby.adapters.kafka.needs_client", raising=False)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hotstandby\[kafka\]'"):
        import_adapter_module("kafka", "needs_client")
    # The probe needs no client library at all.
    assert import_adapter_module("kafka", "wire.probe").probe


def test_unknown_adapter_kind() -> None:
    with pytest.raises(ValidationError, match="no adapter for 'rabbitmq'"):
        import_adapter_module("rabbitmq")


@pytest.mark.parametrize("kind", ["kafka", "pulsar"])
def test_the_client_library_floor_is_the_one_pyproject_declares(kind: str) -> None:
    tomllib = pytest.importorskip("tomllib")
    from hotstandby.registry import adapter_info

    info = adapter_info(kind)
    project = tomllib.loads((pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert f"{info.distribution}>={info.floor}" in project["optional-dependencies"][info.extra]


def test_a_client_library_older_than_the_floor_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from hotstandby import registry

    monkeypatch.setattr(registry, "_CHECKED", set())
    monkeypatch.setattr(registry, "installed_version", lambda distribution: "2.15.2")
    with pytest.raises(MissingDependencyError, match=r"confluent-kafka>=2\.16, 2\.15\.2 is installed"):
        import_adapter_module("kafka", "producer")
    monkeypatch.setattr(registry, "installed_version", lambda distribution: "2.16.0")
    assert import_adapter_module("kafka", "producer").Producer
