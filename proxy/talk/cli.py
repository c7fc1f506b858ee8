"""``duplex-proxy talk URL --model M``: say a WAV file (or the microphone) to an endpoint
at real-time pace, write what was heard to a WAV, print the timeline with latencies.

``--barge-in clip.wav@2.5s`` mixes a clip into the input from that time (talking over
the answer); ``--drop-at 3s`` drops the connection then and resumes the session.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proxy.talk.options import TalkOptions

_TIME = re.compile(r"^(\d+(?:\.\d+)?)(ms|s)?$")


def seconds(text: str) -> float:
    """``2.5s``, ``2500ms`` or ``2.5`` (seconds)."""
    match = _TIME.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (e.g. 2.5s or 2500ms)")
    value = float(match.group(1))
    return value / 1000 if match.group(2) == "ms" else value


def barge_in(text: str) -> tuple[Path, float]:
    """``clip.wav@2.5s``: the clip and when it starts."""
    path, sep, at = text.rpartition("@")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected CLIP.wav@TIME, got {text!r}")
    return Path(path), seconds(at)


def add_talk_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``talk`` subcommand of ``duplex-proxy``."""
    configure_parser(sub.add_parser("talk", help="talk to an endpoint: a WAV in, the answer out"))


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="realtime WebSocket URL, e.g. ws://localhost:8080/v1/realtime")
    parser.add_argument("--model", default=None, help="model (route) to ask for, sent as ?model=")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--wav", type=Path, help="what to say: a 16-bit PCM WAV file")
    what.add_argument("--mic", action="store_true", help="the microphone (needs sounddevice)")
    parser.add_argument("--out", type=Path, default=None, help="write what was heard to this WAV")
    parser.add_argument(
        "--api-key",
        default=os.environ.get("DUPLEX_PROXY_API_KEY"),
        help="client key for a proxy with [auth] (default: $DUPLEX_PROXY_API_KEY)",
    )
    parser.add_argument(
        "--barge-in",
        type=barge_in,
        action="append",
        default=[],
        metavar="CLIP.wav@TIME",
        help="also say CLIP from TIME on (e.g. over the answer); repeatable",
    )
    parser.add_argument(
        "--drop-at",
        type=seconds,
        default=None,
        metavar="TIME",
        help="drop the connection at TIME and resume",
    )
    parser.add_argument(
        "--tail",
        type=seconds,
        default=2.0,
        metavar="TIME",
        help="quiet time that ends the talk (2s)",
    )
    parser.add_argument(
        "--max", type=seconds, default=120.0, metavar="TIME", help="stop after TIME"
    )
    parser.add_argument(
        "--verbose", action="store_true", help="print every event, not only the telling ones"
    )
    parser.add_argument("--json", action="store_true", help="end with a JSON summary line")


async def _talk(args: argparse.Namespace, opts: TalkOptions) -> int:
    import aiohttp

    from proxy.talk.audio import FileSource, MicSource, Speaker, overlay, read_wav
    from proxy.talk.options import Source
    from proxy.talk.session import Talk

    source: Source
    speaker = None
    if args.mic:
        source, speaker = MicSource(), Speaker()
    else:
        pcm = read_wav(args.wav)
        for clip, at in args.barge_in:
            pcm = overlay(pcm, read_wav(clip), round(at * 1000))
        source = FileSource(pcm)
    key = {"Authorization": f"Bearer {opts.api_key}"} if opts.api_key else None
    async with aiohttp.ClientSession(headers=key) as http:
        talk = Talk(opts, source, http, speaker)
        summary = await talk.run()
    talk.timeline.summary(summary, args.json)
    return 0 if summary.ok else 1


def run_talk(args: argparse.Namespace) -> int:
    import aiohttp

    from proxy.talk.options import TalkOptions

    opts = TalkOptions(
        url=args.url,
        model=args.model,
        api_key=args.api_key,
        out=args.out,
        drop_at_s=args.drop_at,
        tail_s=args.tail,
        max_s=args.max,
        verbose=args.verbose,
    )
    try:
        return asyncio.run(_talk(args, opts))
    except (OSError, ValueError, RuntimeError, aiohttp.ClientError) as exc:
        print(f"duplex-proxy talk: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
