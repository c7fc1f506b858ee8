"""``duplex-proxy probe URL``: arguments -> run the checks -> table or JSON (+ HTML) -> exit status.

Exit status 0 when no required check failed or could not measure (all the checks
run unless ``--require`` names some; ``gpu_memory`` is required only with
``--metrics-url``) and the endpoint is not turn-based; 1 otherwise; 2 for bad
arguments (an unreadable ``--speech`` file, an unknown check name). A check that
cannot apply (``unsupported``) does not fail the run unless ``--require`` or
``--checks`` names it. With ``--compare`` the status is that of the run through
the proxy (URL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from proxy.probe.result import CHECK_NAMES


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="realtime WebSocket URL, e.g. ws://host:8091/v1/realtime (vLLM-Omni, the proxy, ...)",
    )
    parser.add_argument(
        "--model", default=None, help="model name (sent as ?model= and in session.update)"
    )
    parser.add_argument(
        "--sessions",
        type=int,
        default=4,
        help="concurrent sessions of the fairness check (default 4)",
    )
    parser.add_argument(
        "--speech", default=None, help="16-bit PCM WAV to speak (default: the bundled stimulus)"
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("DUPLEX_PROXY_API_KEY"),
        help="client key for a proxy with [auth] (default: $DUPLEX_PROXY_API_KEY)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for CI)")
    parser.add_argument(
        "--require",
        default=None,
        metavar="a,b,...",
        help=f"checks that must pass for exit 0 (default all: {','.join(CHECK_NAMES)})",
    )
    parser.add_argument(
        "--checks",
        default=None,
        metavar="a,b,...",
        help="run only these checks (default all; declared always runs)",
    )
    parser.add_argument("--no-color", action="store_true", help="no ANSI colours in the table")
    parser.add_argument(
        "--metrics-url",
        default=None,
        metavar="URL",
        help="the model server's Prometheus endpoint (http://host:port/metrics): "
        "enables the gpu_memory check",
    )
    parser.add_argument(
        "--barge-in-trials",
        type=int,
        default=3,
        metavar="N",
        help="times the barge-in check talks over an answer, for a latency distribution "
        "(default 3; every trial must pass)",
    )
    parser.add_argument(
        "--capacity-max",
        type=int,
        default=16,
        metavar="N",
        help="most sessions the capacity check opens looking for the limit (default 16)",
    )
    parser.add_argument(
        "--compare",
        default=None,
        metavar="DIRECT_URL",
        help="also probe the model server directly and show both runs side by side "
        "(URL is then the proxy in front of it)",
    )
    parser.add_argument(
        "--report",
        default=None,
        metavar="PATH",
        help="write a self-contained HTML report with figures (needs the 'report' extra)",
    )


def run_probe(args: argparse.Namespace) -> int:
    from proxy.probe.context import ProbeSettings
    from proxy.probe.report import TerminalProgress, render_table, to_json
    from proxy.probe.runner import parse_checks, run_probe_checks
    from proxy.probe.stimulus import StimulusError, load_stimulus

    try:
        only = parse_checks(args.checks) if args.checks else None
        required = parse_checks(args.require) if args.require else (only or CHECK_NAMES)
        if not args.require and args.metrics_url is None and not only:
            required = tuple(n for n in required if n != "gpu_memory")
        if args.speech is not None:
            load_stimulus(args.speech)
    except (ValueError, OSError) as exc:
        kind = "bad --speech" if isinstance(exc, StimulusError | OSError) else "bad check list"
        print(f"duplex-proxy probe: {kind}: {exc}", file=sys.stderr)
        return 2
    if only is not None:
        only = tuple(dict.fromkeys(("declared", *only)))
        skipped = [n for n in required if n not in only]
        if skipped:
            print(
                f"duplex-proxy probe: --require names checks --checks leaves out: "
                f"{', '.join(skipped)}",
                file=sys.stderr,
            )
            return 2
    problem = _bad_numbers_or_urls(args)
    if problem:
        print(f"duplex-proxy probe: {problem}", file=sys.stderr)
        return 2
    settings = ProbeSettings(
        url=args.url,
        model=args.model,
        api_key=args.api_key,
        sessions=args.sessions,
        speech=args.speech,
        capacity_max=args.capacity_max,
        barge_in_trials=args.barge_in_trials,
        metrics_url=args.metrics_url,
    )
    plain = args.no_color or "NO_COLOR" in os.environ
    progress = TerminalProgress(colour=False if plain else None)
    colour = sys.stdout.isatty() and not plain
    need = tuple(required) if (args.require or only) else None
    if args.compare:

        def labelled(label: str) -> TerminalProgress:
            return TerminalProgress(colour=False if plain else None, prefix=f"{label} ")

        return _compare(args, settings, need, only, labelled, colour)
    report = asyncio.run(run_probe_checks(settings, required=need, only=only, progress=progress))
    if args.json:
        print(to_json(report))
    else:
        print(render_table(report, colour=colour))
    if args.report:
        _write_report(args.report, report=report)
    return report.exit_code


def _bad_numbers_or_urls(args: argparse.Namespace) -> str | None:
    if args.sessions < 1:
        return "--sessions must be at least 1"
    if args.barge_in_trials < 1:
        return "--barge-in-trials must be at least 1"
    if args.capacity_max < 1:
        return "--capacity-max must be at least 1"
    for url in (args.url, args.compare):
        if url is not None and not url.startswith(("ws://", "wss://")):
            return "the URL must start with ws:// or wss://"
    if args.metrics_url is not None and not args.metrics_url.startswith(("http://", "https://")):
        return "--metrics-url must start with http:// or https://"
    if args.report is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return "--report needs matplotlib: pip install 'duplex-proxy[report]'"
    return None


def _compare(
    args: argparse.Namespace,
    settings: Any,
    required: tuple[str, ...] | None,
    only: tuple[str, ...] | None,
    progress: Any,
    colour: bool,
) -> int:
    from proxy.probe.compare import comparison_json, render_comparison, run_comparison

    comparison = asyncio.run(
        run_comparison(settings, args.compare, required=required, only=only, progress=progress)
    )
    if args.json:
        print(comparison_json(comparison))
    else:
        print(render_comparison(comparison, colour=colour))
    if args.report:
        _write_report(args.report, comparison=comparison)
    return comparison.exit_code


def _write_report(path: str, **what: Any) -> None:
    from proxy.probe.html_report import write_report

    written = write_report(path, **what)
    print(f"report: {written}", file=sys.stderr)
