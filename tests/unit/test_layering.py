"""Dependencies point one way: cli -> drill, refcluster -> adapters -> failover -> configcenter
-> the base (errors, settings, logs, and the seam: the adapter interface and its registry).

Read from the source, every import counts, also one inside a function; only imports for type
checkers (``if TYPE_CHECKING:``) are left out. No module is exempt.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = {
    "hotstandby": ROOT / "hotstandby",
    "hotstandby.adapters": ROOT / "adapters",
    "hotstandby.spark_integration": ROOT / "spark_integration",
}

BASE, CONFIGCENTER, CORE, ADAPTER, TOOL, CLI = range(6)
LAYER_NAMES = ("base", "configcenter", "failover", "adapters", "tools", "cli")


def _module_names() -> dict[str, pathlib.Path]:
    names = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            relative = path.relative_to(folder)
            if relative.parts[0] in ("adapters", "spark_integration"):  # the links to the top-level folders
                continue
            parts = [package, *relative.with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    del names["hotstandby"]  # the package root: the curated public API, re-exported from below
    return names


def layer(module: str) -> int | None:
    """The layer of one of our modules; None for a foreign module (and the package root)."""
    parts = module.split(".")
    if parts[0] != "hotstandby" or len(parts) == 1:
        return None
    if parts[1] == "adapters":
        return ADAPTER
    if parts[1] == "spark_integration":
        return ADAPTER
    return {
        "configcenter": CONFIGCENTER,
        "failover": CORE,
        "drill": TOOL,
        "refcluster": TOOL,
        "cli": CLI,
    }.get(parts[1], BASE)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: pathlib.Path, module: str) -> list[tuple[int, str, bool]]:
    """``(line, imported module, inside a function)`` for every run-time import of ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str, bool]] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, in_function)
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - child.level + 1], base]).strip(".")
                found.append((child.lineno, base, in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


MODULES = _module_names()


def test_the_modules_are_found() -> None:
    assert {
        "hotstandby.failover.identity",
        "hotstandby.adapters.kafka.producer.producer",
        "hotstandby.drill.runner",
    } <= set(MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    own = layer(module)
    assert own is not None
    wrong = []
    for line, imported, in_function in imports(MODULES[module], module):
        other = layer(imported)
        if other is None:
            continue
        if other > own:
            wrong.append(f"line {line}: {imported} ({LAYER_NAMES[other]}) from {LAYER_NAMES[own]}")
        elif in_function and other >= ADAPTER and imported.split(".")[:3] != module.split(".")[:3]:
            # Tools find a system's parts through their registrations; no import hidden in a function.
            wrong.append(f"line {line}: {imported} imported inside a function")
    assert not wrong, "\n".join(wrong)


def _reaches_center_store(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Attribute) and node.attr == "store"):
        return False
    owner = node.value
    name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return name.lstrip("_").endswith("center")


def test_only_the_config_center_uses_its_store() -> None:
    users = {
        module
        for module, path in MODULES.items()
        if layer(module) != CONFIGCENTER
        and any(_reaches_center_store(n) for n in ast.walk(ast.parse(path.read_text())))
    }
    # The config center's store is its own: others use ConfigCenter's documents and methods.
    assert not users, sorted(users)
