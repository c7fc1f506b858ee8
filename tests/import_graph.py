"""The import graph of ``proxy/`` and ``shim/``, read from their source with ``ast``.

Every import counts, including one inside a function or under ``if TYPE_CHECKING``
(such imports hide a circle, they do not break it). Used by ``tests/test_layers.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.layer_map import LAYERS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("proxy", "shim")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in source_files()}


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The module of ours that ``name`` names (or the nearest package that does)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module of ours that ``module`` imports, wherever the import stands."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import mod`` imports the module ``pkg.mod``; any other name
            # comes from ``pkg`` itself.
            names = [f"{base}.{alias.name}" for alias in node.names]
            names = [n for n in names if n in known]
            if len(names) < len(node.names):
                names.append(base)
        else:
            continue
        for name in names:
            target = _target(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def layer_of(module: str) -> int | None:
    for index, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if entry == module:
                return index
            if entry.endswith(".*"):
                package = entry[:-2]
                if module == package or module.startswith(package + "."):
                    return index
    return None


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found
