"""The import structure of ``proxy/`` and ``shim/``: layers, no circles, small modules.

Every module is parsed with ``ast``; every import counts, including one inside a
function or under ``if TYPE_CHECKING`` (such imports hide a circle, they do not
break it). A module imports only from its own layer or the layers below it
(``tests/layer_map.py``), and no modules import each other in a loop.
``docs/architecture.md`` describes the layers. Every Python file of the project, its
tests and benches included, stays under ``MAX_LINES``, and no test module is
imported by another (what tests share lives in helper modules).
"""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import ROOT, circles, graph, imports_of, layer_of, modules
from tests.layer_map import LAYERS

MAX_LINES = 300
# Where the project's Python lives: the packages, and what checks and measures them.
CHECKED_DIRS = ("proxy", "shim", "bench", "tests")


def project_files() -> list[Path]:
    return sorted(p for d in CHECKED_DIRS for p in (ROOT / d).rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    assert not unplaced, (
        "place these modules in LAYERS in tests/layer_map.py "
        f"(and in docs/architecture.md): {unplaced}"
    )


def test_no_import_circles() -> None:
    found = circles(graph())
    assert not found, f"modules importing each other in a loop: {found}"


def test_imports_point_down() -> None:
    upward = []
    for module, targets in sorted(graph().items()):
        mine = layer_of(module)
        for target in sorted(targets):
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(
                    f"{module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})"
                )
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_shim_never_imports_the_proxy() -> None:
    offenders = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if m.split(".")[0] == "shim"
        for t in targets
        if t.split(".")[0] == "proxy"
    )
    assert not offenders, offenders


def test_no_test_module_is_a_library() -> None:
    """What tests share lives in helper modules (``tests/resume_client.py``, ...): a
    test module imported by another runs its fixtures and module code twice over and
    ties two subjects together."""
    files = {f"{d}.{p.stem}": p for d in ("tests", "bench") for p in (ROOT / d).glob("*.py")}
    offenders = sorted(
        f"{m} imports {t}"
        for m, p in files.items()
        for t in imports_of(m, p, files)
        if t.startswith("tests.test_")
    )
    assert not offenders, "move what these share into a helper module:\n" + "\n".join(offenders)


def test_modules_stay_small() -> None:
    too_long = []
    for path in project_files():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            too_long.append(f"{rel}: {lines} lines")
    assert not too_long, f"modules over {MAX_LINES} lines (split them along their jobs): {too_long}"


# ---------------------------------------------------------------------- the checker itself


def test_the_graph_counts_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.b import B\n"
        "def f():\n    from pkg import c\n"
    )
    (pkg / "b.py").write_text("from pkg.a import f\n")
    (pkg / "c.py").write_text("")
    known = {"pkg": pkg / "__init__.py", **{f"pkg.{n}": pkg / f"{n}.py" for n in "abc"}}
    edges = {m: imports_of(m, p, known) for m, p in known.items()}
    assert edges["pkg.a"] == {"pkg.b", "pkg.c"}
    assert circles(edges) == [["pkg.a", "pkg.b"]]


def test_an_unplaced_module_has_no_layer() -> None:
    assert layer_of("proxy.not_placed_anywhere") is None
    assert layer_of("proxy.resume.anything_new") == layer_of("proxy.resume.takeover")
