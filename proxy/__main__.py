"""Command line: ``duplex-proxy [serve] ...``, ``check-config``, ``config-reference``,
``reference-backend ...``, ``probe URL ...``, ``hash-key``, ``--version``.

Heavy modules (pydantic, aiohttp, onnxruntime) are imported inside the command that
needs them, so ``--help`` and ``--version`` answer at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from proxy.reference.cli import add_reference_arguments, options_from_args
from proxy.talk.cli import add_talk_command, run_talk

if TYPE_CHECKING:
    from proxy.config import Config

DEFAULT_CONFIG = "config.toml"
COMMANDS = (
    "serve",
    "check-config",
    "config-reference",
    "reference-backend",
    "probe",
    "talk",
    "hash-key",
)
EXIT_BAD_CONFIG = 2


def package_version() -> str:
    try:
        return version("duplex-proxy")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duplex-proxy",
        description="Honest full duplex in front of realtime voice servers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the proxy (the default command)")
    serve.add_argument("--config", default=None, help=f"TOML config (default ./{DEFAULT_CONFIG})")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=None)
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes on the one port (default: one per core with a shared store,"
        " 1 with the in-memory store)",
    )
    # Set by `--workers N` on the processes it starts (proxy/workers.py).
    serve.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)

    check = sub.add_parser(
        "check-config", help="validate a config (and the environment over it); exit 2 if bad"
    )
    check.add_argument("path", nargs="?", default=None, help=f"default ./{DEFAULT_CONFIG}")

    ref_doc = sub.add_parser("config-reference", help="print every config key as Markdown")
    ref_doc.add_argument("--json-schema", action="store_true", help="print JSON Schema instead")
    ref_doc.add_argument("--update", metavar="FILE", help="rewrite the reference in FILE")

    hash_key = sub.add_parser(
        "hash-key", help="print the SHA-256 digest of an API key for [auth] keys (key on stdin)"
    )
    hash_key.add_argument(
        "--generate", action="store_true", help="make a new random key; print it and its digest"
    )

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
    add_reference_arguments(ref)

    from proxy.probe.cli import configure_parser

    probe = sub.add_parser(
        "probe", help="check what an endpoint really does: duplex, barge-in, resume, ..."
    )
    configure_parser(probe)
    add_talk_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Bare `duplex-proxy [--config ...]` means `serve`.
    if not args_list or args_list[0] not in (*COMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "serve")
    args = _parser().parse_args(args_list)
    if args.command == "serve":
        sys.exit(_serve(args))
    if args.command == "check-config":
        sys.exit(_check_config(args.path))
    if args.command == "config-reference":
        sys.exit(_config_reference(args))
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
                options=options_from_args(args),
            )
        )
    if args.command == "probe":
        from proxy.probe.cli import run_probe

        sys.exit(run_probe(args))
    if args.command == "talk":
        sys.exit(run_talk(args))
    if args.command == "hash-key":
        sys.exit(_hash_key(args.generate))


def _hash_key(generate: bool) -> int:
    """The key comes from stdin, not argv, so it stays out of shell history and ps."""
    from proxy.auth.api_keys import hash_key, new_key

    if generate:
        key = new_key()
        print(f"key:    {key}\nsha256: {hash_key(key)}")
        return 0
    if sys.stdin.isatty():
        print("API key (not echoed): ", end="", file=sys.stderr, flush=True)
        import getpass

        key = getpass.getpass(prompt="")
    else:
        key = sys.stdin.readline()
    key = key.strip()
    if not key:
        print("duplex-proxy: no key given on stdin", file=sys.stderr)
        return EXIT_BAD_CONFIG
    print(hash_key(key))
    return 0


def _default_path(path: str | None) -> str | None:
    if path is None and os.path.exists(DEFAULT_CONFIG):
        return DEFAULT_CONFIG
    return path


def _load(path: str | None) -> Config | None:
    """The config, or None after printing every problem to stderr."""
    from proxy.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        source = path or "(no config file; defaults and environment)"
        print(f"duplex-proxy: invalid configuration in {source}:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return None


def _check_config(path: str | None) -> int:
    from proxy.config_summary import route_lines

    path = _default_path(path)
    config = _load(path)
    if config is None:
        return EXIT_BAD_CONFIG
    print(f"{path or '(defaults and environment)'}: OK, {len(config.routes)} route(s)")
    for line in route_lines(config):
        print(f"  {line}")
    return 0


def _config_reference(args: argparse.Namespace) -> int:
    from pathlib import Path

    from proxy import config_reference

    if args.update:
        changed = config_reference.update(Path(args.update))
        print(f"{args.update}: {'updated' if changed else 'already up to date'}")
        return 0
    text = config_reference.json_schema() if args.json_schema else config_reference.markdown()
    sys.stdout.write(text)
    return 0


def _serve(args: argparse.Namespace) -> int:
    path = _default_path(args.config)
    config = _load(path)
    if config is None:
        return EXIT_BAD_CONFIG
    from proxy.config_summary import log_routes
    from proxy.logging import configure_logging
    from proxy.workers import run_workers, worker_count

    workers = worker_count(config, args.workers)
    if isinstance(workers, str):
        print(f"duplex-proxy: {workers}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    configure_logging(config.server.log_level)
    if workers > 1:
        host = args.host or config.server.host
        port = config.server.port if args.port is None else args.port
        return run_workers(workers, host, port, path)
    from proxy.server import run_server  # heavy imports only once the config is valid

    log_routes(config)
    return run_server(
        config, host=args.host, port=args.port, config_path=path, reuse_port=args.reuse_port
    )


if __name__ == "__main__":
    main()
