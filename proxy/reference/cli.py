"""``duplex-proxy reference-backend`` options that tune the stand-in (``ReferenceOptions``).

``proxy/__main__.py`` owns the command line; it adds these arguments to the
sub-command and builds the options with :func:`options_from_args`.
"""

from __future__ import annotations

import argparse

from proxy.reference.model_profiles import PROFILES
from proxy.reference.options import FIDELITY_LENIENT, FIDELITY_STRICT, ReferenceOptions


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be a non-negative number of seconds")
    return value


def add_reference_arguments(parser: argparse.ArgumentParser) -> None:
    fidelity = parser.add_mutually_exclusive_group()
    fidelity.add_argument(
        "--strict",
        dest="fidelity",
        action="store_const",
        const=FIDELITY_STRICT,
        help="behave like vLLM-Omni 0.30.0 where a client can tell (the default; docs/fidelity.md)",
    )
    fidelity.add_argument(
        "--lenient",
        dest="fidelity",
        action="store_const",
        const=FIDELITY_LENIENT,
        help="the earlier, forgiving stand-in",
    )
    parser.set_defaults(fidelity=FIDELITY_STRICT)
    parser.add_argument(
        "--max-sessions",
        type=_positive_int,
        default=None,
        help="live sessions before resource_exhausted (default: 1 strict, unlimited lenient)",
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="generic",
        help="the model the duplex kinds stand in for (default: generic, no open requirements)",
    )
    parser.add_argument(
        "--warmup-s",
        type=_seconds,
        default=0.0,
        help="hold duplex upgrades this many seconds after start, as a warming model does",
    )


def options_from_args(args: argparse.Namespace) -> ReferenceOptions:
    return ReferenceOptions(
        fidelity=args.fidelity,
        max_sessions=args.max_sessions,
        profile=args.profile,
        warmup_s=args.warmup_s,
    )
