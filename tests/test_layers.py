"""The import structure of ``proxy/`` and ``shim/``: layers, no circles, small modules.

Every module is parsed with ``ast``; every import counts, including one inside a
function or under ``if TYPE_CHECKING`` (such imports hide a circle, they do not
break it). A module imports only from its own layer or the layers below it, and no
modules import each other in a loop. ``docs/architecture.md`` describes the layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("proxy", "shim")

# Bottom to top: a module may import from its own layer and from the layers before
# it. An entry names one module, or a whole package with ``.*``.
LAYERS: list[tuple[str, list[str]]] = [
    (
        "shim: pure building blocks",
        [
            "shim",
            "shim.wire",
            "shim.g711",
            "shim.audio",
            "shim.audio_formats",
            "shim.native_formats",
            "shim.native_session_object",
            "shim.native_turns",
            "shim.resample_polyphase",
            "shim.resample_low_delay",
            "shim.upstream_input",
            "shim.actions",
            "shim.inputs",
            "shim.fault",
            "shim.bounded_ids",
            "shim.journal",
            "shim.capabilities",
            "shim.vad_gate",
            "shim.idle_timeout",
            "shim.open_refusal",
            "shim.settings",
            "shim.playback",
            "shim.echo_clock",
            "shim.echo_far",
            "shim.echo_ola",
            "shim.echo_fit",
            "shim.echo_mic",
            "shim.echo_lock",
            "shim.echo",
            "shim.overlap_directness",
            "shim.overlap_voicing",
            "shim.sample_ring",
            "shim.overlap_evidence",
            "shim.overlap_decision",
            "shim.overlap_onset",
            "shim.overlap_hold",
            "shim.overlap",
            "shim.echo_run",
            "shim.background_run",
            "shim.snapshot_split",
            "shim.snapshot",
            "shim.input_history",
            "shim.vad_timeline",
            "shim.upstream_timeline",
            "shim.resampler_carry",
            "shim.assistant_audio",
            "shim.realtime_items",
        ],
    ),
    (
        "shim: session settings",
        [
            "shim.session_options",
            "shim.session_told",
            "shim.turn_detection_config",
            "shim.session_config",
            "shim.ga_upstream",
            "shim.turn_params",
        ],
    ),
    (
        "shim: the session's parts",
        [
            "shim.output",
            "shim.answer_ahead",
            "shim.response_close",
            "shim.turn_host",
            "shim.vad_runs",
            "shim.barge_in",
            "shim.turns",
            "shim.native_truncate",
            "shim.client_events",
            "shim.native_client",
            "shim.played_snapshot",
            "shim.told_run",
            "shim.snapshot_clock",
        ],
    ),
    (
        "shim: the emulated session",
        ["shim.session_parts", "shim.session_durable", "shim.session"],
    ),
    ("shim: dialects", ["shim.dialects.*"]),
    (
        "proxy: foundations",
        [
            "proxy",
            "proxy.log_redaction",
            "proxy.logging",
            "proxy.metrics",
            "proxy.clock",
            "proxy.json_depth",
            "proxy.json_top_level",
        ],
    ),
    ("proxy: latencies read off a session's events", ["proxy.latency"]),
    (
        "proxy: configuration",
        [
            "proxy.config_errors",
            "proxy.config_ops",
            "proxy.config_redial",
            "proxy.config_store",
            "proxy.config_auth",
            "proxy.config_store_url",
            "proxy.config_route",
            "proxy.config_vad",
            "proxy.config_model",
            "proxy.config_routes",
            "proxy.config_sources",
            "proxy.config_reference",
            "proxy.config_summary",
            "proxy.config",
        ],
    ),
    (
        "proxy: adapters (client, upstream, store, VAD) and the tools beside the proxy",
        [
            "proxy.vad_stream",
            "proxy.vad_thread",
            "proxy.vad_model",
            "proxy.vad_batches",
            "proxy.vad",
            "proxy.ws_heartbeat",
            "proxy.ws_raw",
            "proxy.ws_write",
            "proxy.ws_direct",
            "proxy.ws_close",
            "proxy.client_limits",
            "proxy.client_watch",
            "proxy.client_fields",
            "proxy.client_frames",
            "proxy.client_made",
            "proxy.client_queue",
            "proxy.client_outbox",
            "proxy.client_io",
            "proxy.upstream_opening",
            "proxy.upstream",
            "proxy.upstream_book",
            "proxy.upstream_fresh",
            "proxy.store.base",
            "proxy.store.ids",
            "proxy.store.redis_scripts",
            "proxy.store.secret_box",
            "proxy.store.redis_client",
            "proxy.reference.*",
            "proxy.probe.*",
            "proxy.web.*",
            "proxy.talk.*",
        ],
    ),
    ("proxy: store backends", ["proxy.store.memory", "proxy.store.redis"]),
    ("proxy: opening a store", ["proxy.store"]),
    ("proxy: client authentication and admission", ["proxy.auth.*"]),
    ("proxy: shared process state", ["proxy.state"]),
    ("proxy: whether a new session fits (replica, route, upstream)", ["proxy.capacity"]),
    ("proxy: a client connection as the modes see it", ["proxy.connection"]),
    ("proxy: persistence of emulated sessions", ["proxy.persist.*"]),
    ("proxy: passthrough mode", ["proxy.passthrough.*"]),
    ("proxy: emulated modes", ["proxy.emulated.*"]),
    ("proxy: resume", ["proxy.resume.*"]),
    ("proxy: handshake", ["proxy.handshake.*"]),
    (
        "proxy: operations (readiness checks, embedded backends, config reload)",
        ["proxy.readiness", "proxy.embedded", "proxy.config_reload"],
    ),
    ("proxy: the aiohttp application", ["proxy.app"]),
    ("proxy: the server process", ["proxy.server"]),
    ("proxy: worker processes on one port", ["proxy.workers"]),
    ("proxy: the command line", ["proxy.__main__"]),
]

MAX_LINES = 300


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


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    assert not unplaced, (
        f"place these modules in LAYERS in {Path(__file__).name} "
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


def test_modules_stay_small() -> None:
    too_long = []
    for path in source_files():
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
