"""The probe against the three reference backends directly and through the proxy.

Everything runs for real on loopback: the reference backends (vLLM-Omni 0.30.0
stand-ins), the proxy (``proxy.app.build_app``) and the probe's own client. What
must hold (issue #5): the ``turn`` backend is reported turn-based and fails the
duplex checks; ``duplex-no-barge-in`` fails barge-in; the proxy in front of each
of them, and in front of each model profile's strict stand-in with its shipped
route defaults, passes every check that applies and exits 0.
"""

from __future__ import annotations

import fnmatch
import tomllib
from typing import Any

import pytest

from proxy.app import build_app
from proxy.config import config_from_dict
from proxy.probe.result import CHECK_NAMES
from proxy.reference.options import ReferenceOptions
from proxy.reference.server import build_reference_app
from tests.probe_stacks import (
    BACKEND_MAX_SESSIONS,
    MAX_SESSIONS,
    MODEL,
    REPLY_MS,
    ROOT_DIR,
    backend,
    probe,
    proxied,
    serve,
    table,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def test_turn_backend_directly_is_reported_turn_based_and_fails_the_duplex_checks() -> None:
    async with backend("turn") as url:
        report = await probe(url)
    verdicts = {r.name: r.verdict for r in report.results}
    assert report.turn_based and report.exit_code == 1, table(report)
    declared = report.result("declared")
    assert declared.verdict == "fail" and "turn-based" in declared.summary
    assert declared.data["duplex_refused"] == {
        "code": "unsupported",
        "message": "VAD realtime is not enabled",
        "close_code": 1008,
    }
    assert verdicts["full_duplex_input"] == "fail", table(report)
    assert verdicts["barge_in"] == "fail", table(report)
    assert "not interrupted" in report.result("barge_in").summary
    for name in ("truncation", "resume", "dedup", "backpressure", "gpu_memory"):
        assert verdicts[name] == "unsupported", table(report)
    assert verdicts["capacity"] == "fail", "more sessions than the probe opens are allowed"
    # Not a duplex question: N turn-based sessions are still served alike.
    assert verdicts["fairness"] == "pass", table(report)


async def test_no_barge_in_backend_directly_hears_overlap_but_fails_barge_in() -> None:
    async with backend("duplex-no-barge-in") as url:
        report = await probe(url, only=["full_duplex_input", "barge_in"])
    declared = report.result("declared")
    assert declared.verdict == "pass", table(report)
    assert declared.data["capabilities"]["supports_barge_in"] is False
    assert report.result("full_duplex_input").verdict == "pass", table(report)
    barge_in = report.result("barge_in")
    assert barge_in.verdict == "fail", table(report)
    assert "not interrupted" in barge_in.summary
    assert barge_in.data["status"] == "completed"
    assert report.exit_code == 1


async def test_duplex_backend_directly_passes_all_but_event_id_dedupe() -> None:
    """The baseline the fault tests flip, one check at a time.

    vLLM-Omni (and so the reference) does not drop a client event re-sent with the
    same ``event_id`` after a resume; the replay itself is exact. The reference
    backend holds more sessions than the probe opens, and without ``--metrics-url`` GPU
    memory is not measured.
    """
    async with backend("duplex") as url:
        report = await probe(url)
    verdicts = {r.name: r.verdict for r in report.results}
    expected = dict.fromkeys(CHECK_NAMES, "pass")
    expected.update(resume="fail", dedup="fail", capacity="fail", gpu_memory="unsupported")
    assert verdicts == expected, table(report)
    dedup = report.result("dedup").data
    assert dedup["items_created"] == 2 and dedup["user_turns_after_resend"] >= 1
    assert dedup["gaps"] == dedup["repeats"] == dedup["out_of_order"] == []
    assert report.result("capacity").data["accepted"] == 16
    assert "gpu_memory" not in report.required and report.exit_code == 1
    resume = report.result("resume")
    assert resume.summary == (
        "conversation.item.create re-sent with the same event_id was applied 2 times"
    )
    data = resume.data
    assert data["gaps"] == data["repeats"] == data["out_of_order"] == []
    assert data["duplicate_event_ids"] == []
    assert data["first_seq_after_resume"] == data["last_seq_before_drop"] + 1
    barge_in = report.result("barge_in")
    assert barge_in.data["limit_source"] == "declared target"
    assert barge_in.data["latency_ms"] <= 400 and barge_in.data["status"] == "cancelled"
    truncation = report.result("truncation").data
    assert truncation["transcript_kept_chars"] < truncation["transcript_sent_chars"]


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in", "turn"])
async def test_proxy_in_front_of_each_backend_passes_every_check(kind: str) -> None:
    async with backend(kind) as upstream, proxied(upstream) as url:
        report = await probe(url)
    expected_mode = {
        "duplex": "passthrough",
        "duplex-no-barge-in": "barge_in_emulated",
        "turn": "duplex_emulated",
    }[kind]
    assert report.endpoint["proxy_mode"] == expected_mode
    # Over a turn-based upstream nothing a client sends is echoed back (instructions and
    # items are refused with a coded error: the dialect cannot carry them), so the
    # backpressure check finds nothing to amplify and says so.
    exempt = {"gpu_memory", "backpressure"} if kind == "turn" else {"gpu_memory"}
    failing = [r for r in report.results if r.verdict != "pass" and r.name not in exempt]
    assert not failing, table(report)
    if kind == "turn":
        assert report.result("backpressure").verdict == "unsupported", table(report)
    assert report.result("gpu_memory").verdict == "unsupported", "no --metrics-url"
    capacity = report.result("capacity").data
    assert capacity["limit"] <= MAX_SESSIONS and capacity["refusal_code"] == "server_at_capacity"
    # A check that cannot apply (nothing to amplify) finds no defect: it is reported,
    # and the run still exits 0 (runner.py, the exit status rule).
    assert report.not_applicable == (["backpressure"] if kind == "turn" else [])
    assert report.exit_code == 0, table(report)


def shipped_session_defaults() -> dict[str, dict[str, Any]]:
    """Each model profile's route ``session_defaults`` as the shipped config.toml's
    commented examples give them (read from the file, not copied here)."""
    text = (ROOT_DIR / "config.toml").read_text()
    examples = text[text.index("# Examples for real deployments") :].splitlines()[1:]
    lines = [line.removeprefix("# ") for line in examples if line.startswith("# ")]
    data = tomllib.loads("\n".join(lines))
    by_model = {
        "minicpmo": "openbmb/MiniCPM-o-4_5",
        "nemotron": "nvidia/nemotron-voicechat",
        "qwen3omni": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "personaplex": "personaplex",
    }
    found: dict[str, dict[str, Any]] = {}
    for profile, model in by_model.items():
        routes = [r for r in data["routes"] if fnmatch.fnmatchcase(model, r["model"])]
        assert len(routes) == 1, (profile, routes)
        found[profile] = dict(routes[0].get("session_defaults", {}))
    return found


#: The backend kind each profile stands in front of (its barge-in says which).
PROFILE_KINDS = {
    "minicpmo": "duplex",
    "qwen3omni": "duplex",
    "nemotron": "duplex-no-barge-in",
    "personaplex": "duplex-no-barge-in",
}


@pytest.mark.parametrize("profile", sorted(PROFILE_KINDS))
async def test_proxy_in_front_of_each_model_profile_passes_every_check(profile: str) -> None:
    """The strict stand-in of each model (its open requirements, chunk sizes, formats)
    behind a route with that model's shipped ``session_defaults``: the probe exits 0.

    MiniCPM-o sends 1000 ms chunks, so its answer may be sent whole before the probe
    talks over it (the barge-in latency is then the cancel report's); PersonaPlex reads
    only 24 kHz float, which the route opens it with and the probe then speaks."""
    defaults = shipped_session_defaults()[profile]
    options = ReferenceOptions(max_sessions=BACKEND_MAX_SESSIONS, profile=profile)
    app = build_reference_app(PROFILE_KINDS[profile], reply_ms=REPLY_MS, options=options)
    route = {"model": MODEL, "upstream": "", "max_sessions": MAX_SESSIONS}
    if defaults:
        route["session_defaults"] = defaults
    async with serve(app) as upstream:
        route["upstream"] = upstream
        config = config_from_dict({"routes": [route], "auth": {"mode": "none"}})
        async with serve(build_app(config)) as url:
            report = await probe(url)
    barge_in = options.barge_in_for(PROFILE_KINDS[profile])
    assert report.endpoint["proxy_mode"] == ("passthrough" if barge_in else "barge_in_emulated")
    failing = [r for r in report.results if r.verdict != "pass" and r.name != "gpu_memory"]
    assert not failing, table(report)
    assert report.exit_code == 0 and report.not_applicable == [], table(report)
    if profile == "minicpmo":
        assert report.result("barge_in").data["limit_source"] == "probe default"
