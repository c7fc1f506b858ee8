"""``duplex-proxy probe URL``: arguments -> run the checks -> table or JSON -> exit status.

Exit status 0 only when every required check passed (all the checks run unless
``--require`` names some) and the endpoint is not turn-based; 1 otherwise; 2 for
bad arguments (an unreadable ``--speech`` file, an unknown check name).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

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


def run_probe(args: argparse.Namespace) -> int:
    from proxy.probe.context import ProbeSettings
    from proxy.probe.report import TerminalProgress, render_table, to_json
    from proxy.probe.runner import parse_checks, run_probe_checks
    from proxy.probe.stimulus import StimulusError, load_stimulus

    try:
        only = parse_checks(args.checks) if args.checks else None
        required = parse_checks(args.require) if args.require else (only or CHECK_NAMES)
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
    if args.sessions < 1:
        print("duplex-proxy probe: --sessions must be at least 1", file=sys.stderr)
        return 2
    if not args.url.startswith(("ws://", "wss://")):
        print("duplex-proxy probe: the URL must start with ws:// or wss://", file=sys.stderr)
        return 2
    settings = ProbeSettings(
        url=args.url, model=args.model, sessions=args.sessions, speech=args.speech
    )
    plain = args.no_color or "NO_COLOR" in os.environ
    progress = TerminalProgress(colour=False if plain else None)
    report = asyncio.run(
        run_probe_checks(settings, required=required, only=only, progress=progress)
    )
    colour = sys.stdout.isatty() and not plain
    if args.json:
        print(to_json(report))
    else:
        print(render_table(report, colour=colour))
    return report.exit_code
