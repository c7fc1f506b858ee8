"""Reading the ``talk`` command's lines as it runs (tests that drive it as a process)."""

from __future__ import annotations

import asyncio


async def read_until(stream: asyncio.StreamReader, text: str, seen: list[str]) -> None:
    """``talk``'s lines into ``seen`` until one says ``text``."""
    async with asyncio.timeout(30):
        while not seen or text not in seen[-1]:
            line = (await stream.readline()).decode()
            assert line, f"talk ended before {text}:\n" + "".join(seen)
            seen.append(line)
