"""Reloading the config file without a restart: on SIGHUP, or when the file changes.

Kubernetes updates a mounted ConfigMap by swapping a symlink (``..data``) to a new
directory, so the file's inode changes while the path stays; an editor may instead
rewrite it in place. Both change what ``os.stat`` of the path reports, which the
watcher compares every ``reload.watch_interval_s``.

A new config applies to new sessions: a live session holds its ``Route`` from the
handshake and keeps it. A config that fails validation is refused with the problems
``check-config`` prints, and the old one stays in force. Keys read only at start-up
(where the proxy listens, the store, how the VAD runner was built) are logged as needing
a restart; ``[vad] gather_ms`` applies to the running VAD's next batch.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from proxy.config import Config, ConfigError, load_config
from proxy.config_summary import safe_upstream
from proxy.logging import get_logger
from proxy.state import ProxyState

RESTART_KEYS = (
    ("server", "host"),
    ("server", "port"),
    ("store", "url"),
    ("vad", "max_batch"),
    ("vad", "threads"),
    ("vad", "inline_rows"),
    ("vad", "quiet_gate_dbfs"),
    ("web", "enabled"),
)
Fingerprint = tuple[int, int, int, int] | None


def _fingerprint(path: Path) -> Fingerprint:
    try:
        st = os.stat(path)  # follows the ConfigMap's symlinks to the current file
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def restart_needed(old: Config, new: Config) -> list[str]:
    return [
        f"{section}.{key}"
        for section, key in RESTART_KEYS
        if getattr(getattr(old, section), key) != getattr(getattr(new, section), key)
    ]


class ConfigReloader:
    """Reloads ``path`` into ``state.config``; ``prepare`` runs on a valid new config
    before it takes effect (it starts the embedded backends the new routes name)."""

    def __init__(
        self,
        path: Path,
        state: ProxyState,
        prepare: Callable[[Config], Awaitable[None]],
        checked: Callable[[], Awaitable[None]],
    ) -> None:
        self.path = path
        self.state = state
        self._prepare = prepare
        self._checked = checked
        self._seen = _fingerprint(path)
        self._lock = asyncio.Lock()
        self._log = get_logger(replica_id=state.replica_id)

    async def reload(self, reason: str) -> bool:
        """True if the file's config is now in force."""
        async with self._lock:
            self._seen = _fingerprint(self.path)
            try:
                new = load_config(self.path)
            except ConfigError as exc:
                self.state.metrics.config_reloads.labels("refused").inc()
                self._log.error(
                    "config_reload_refused",
                    reason=reason,
                    path=str(self.path),
                    problems=[str(p) for p in exc.problems],
                    kept="the running config stays in force",
                )
                return False
            old = self.state.config
            try:
                await self._prepare(new)
            except Exception:
                self.state.metrics.config_reloads.labels("refused").inc()
                self._log.exception("config_reload_refused", reason=reason, path=str(self.path))
                return False
            self.state.config = new
            if self.state.vad is not None:  # read each time it arms a batch
                self.state.vad.gather_s = new.vad.gather_ms / 1000
            self.state.metrics.config_reloads.labels("applied").inc()
            self._log.info(
                "config_reloaded",
                reason=reason,
                path=str(self.path),
                routes={r.model: safe_upstream(r.upstream) for r in new.routes},
                restart_needed=restart_needed(old, new),
            )
        await self._checked()  # the new routes' upstreams, before the next period
        return True

    async def watch(self) -> None:
        """Reload whenever the file changes; runs until cancelled."""
        while (interval := self.state.config.reload.watch_interval_s) > 0:
            await asyncio.sleep(interval)
            now = _fingerprint(self.path)
            if now is not None and now != self._seen:
                await self.reload("file changed")
