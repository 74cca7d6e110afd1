"""The type checker sees the adapters as real modules and the facades as their classes.

Each test copies the project's type-checked folders and its mypy configuration into a
temporary directory (symbolic links kept as links), plants one mistake, and runs mypy there:
it must report exactly that mistake. Were ``hotstandby.adapters.*`` resolved to ``Any``, the
mistake would pass unnoticed.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

ROOT = pathlib.Path(__file__).resolve().parents[2]
TREES = ("hotstandby", "adapters", "spark_integration")


def _project_copy(tmp_path: pathlib.Path) -> pathlib.Path:
    for tree in TREES:
        shutil.copytree(ROOT / tree, tmp_path / tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def _mypy(project: pathlib.Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(project / ".mypy_cache"), *extra],
        cwd=project,
        check=False,  # the exit status is what the tests look at
        capture_output=True,
        text=True,
        timeout=300,
    )


def _plant(path: pathlib.Path, after: str, line: str) -> int:
    """Insert ``line`` after the first line that starts with ``after``; its 1-based number."""
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, text in enumerate(lines) if text.startswith(after)) + 1
    lines.insert(at, line + "\n")
    path.write_text("".join(lines))
    return at + 1


def test_a_typo_in_an_adapter_fails_mypy(tmp_path: pathlib.Path) -> None:
    project = _project_copy(tmp_path)
    # A name imported from another adapter module, misspelt: only caught if that module is seen.
    module = project / "adapters" / "pulsar" / "consumer" / "acceptance.py"
    line = _plant(module, "__all__ = ", "_PLANTED = identity_in.no_such_attribute")
    result = _mypy(project)
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [e for e in result.stdout.splitlines() if ": error:" in e]
    assert len(errors) == 1, result.stdout
    assert f"pulsar/consumer/acceptance.py:{line}: error:" in errors[0] and "no_such_attribute" in errors[0], (
        result.stdout
    )


def test_the_facades_carry_their_classes_types(tmp_path: pathlib.Path) -> None:
    project = _project_copy(tmp_path)
    program = project / "user_program.py"
    program.write_text(
        "from hotstandby.adapters.kafka import Consumer, Producer\n"
        "from hotstandby.adapters.pulsar import Client\n"
        "\n"
        "\n"
        "def use(producer: Producer, consumer: Consumer, client: Client) -> None:\n"
        "    producer.flush(1.0)\n"
        "    producer.no_such_method()\n"
        "    consumer.no_such_method()\n"
        "    client.no_such_method()\n"
    )
    result = _mypy(project, "--strict", str(program))
    errors = [e for e in result.stdout.splitlines() if ": error:" in e]
    assert [e.split(": error:")[0] for e in errors] == [f"user_program.py:{n}" for n in (7, 8, 9)], result.stdout
    for name, error in zip(("Producer", "Consumer", "Client"), errors, strict=True):
        assert f'"{name}" has no attribute "no_such_method"' in error
