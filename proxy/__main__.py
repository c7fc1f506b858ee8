"""Command line: ``duplex-proxy [serve] ...``, ``duplex-proxy reference-backend ...``,
``duplex-proxy probe URL ...``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from proxy.config import ConfigError, load_config
from proxy.talk.cli import add_talk_command, run_talk

DEFAULT_CONFIG = "config.toml"
COMMANDS = ("serve", "reference-backend", "probe", "talk")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duplex-proxy",
        description="Honest full duplex in front of realtime voice servers.",
    )
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the proxy (the default command)")
    _serve_args(serve)

    ref = sub.add_parser(
        "reference-backend", help="run a reference backend that speaks vLLM-Omni's protocol"
    )
    ref.add_argument("--mode", required=True, choices=("duplex", "duplex-no-barge-in", "turn"))
    ref.add_argument("--host", default="127.0.0.1")
    ref.add_argument("--port", type=int, default=8091)
    ref.add_argument(
        "--served-model",
        default=None,
        help="accept only this model name (others get model_not_found)",
    )
    ref.add_argument("--reply-ms", type=int, default=4000, help="length of each spoken reply in ms")
    ref.add_argument("--log-level", default="info")

    from proxy.probe.cli import configure_parser

    probe = sub.add_parser(
        "probe", help="check what an endpoint really does: duplex, barge-in, resume, ..."
    )
    configure_parser(probe)
    add_talk_command(sub)
    return parser


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help=f"TOML config (default ./{DEFAULT_CONFIG})")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)


def main(argv: Sequence[str] | None = None) -> None:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Bare `duplex-proxy [--config ...]` means `serve`.
    if not args_list or args_list[0] not in (*COMMANDS, "-h", "--help"):
        args_list.insert(0, "serve")
    args = _parser().parse_args(args_list)
    if args.command == "serve":
        sys.exit(_serve(args))
    if args.command == "reference-backend":
        from proxy.reference.server import run_reference_backend

        sys.exit(
            run_reference_backend(
                args.mode,
                host=args.host,
                port=args.port,
                served_model=args.served_model,
                reply_ms=args.reply_ms,
                log_level=args.log_level,
            )
        )
    if args.command == "probe":
        from proxy.probe.cli import run_probe

        sys.exit(run_probe(args))
    if args.command == "talk":
        sys.exit(run_talk(args))


def _serve(args: argparse.Namespace) -> int:
    import os

    path = args.config
    if path is None and os.path.exists(DEFAULT_CONFIG):
        path = DEFAULT_CONFIG
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"duplex-proxy: invalid configuration: {exc}", file=sys.stderr)
        return 2
    from proxy.server import run_server  # heavy imports only once the config is valid

    return run_server(config, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
