"""``duplex-proxy talk``, run for real: the proxy as a process on loopback (its embedded
reference backends behind two routes), the talk command as another process.

The talk says a corpus sentence, a second sentence over the answer (``--barge-in``),
and drops its connection mid-session (``--drop-at``); its JSON summary must show the
barge-in with a truncation at what it had played, and a resume that lost nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
import urllib.request
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from proxy.talk.cli import barge_in, seconds
from proxy.talk.player import Player
from tests.ports import free_port
from tests.servers import CORPUS, ROOT
from tests.talk_command import command, env

CONFIG = """
[server]
host = "127.0.0.1"
port = {port}

[[routes]]
model = "demo"
upstream = "embedded://turn"

[[routes]]
model = "relay"
upstream = "embedded://duplex-no-barge-in"

[[routes]]
model = "native"
upstream = "embedded://duplex"
"""


@contextmanager
def running_proxy(tmp: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``duplex-proxy serve`` with CONFIG on a free port; yields it and its realtime URL."""
    port = free_port()
    (tmp / "config.toml").write_text(CONFIG.format(port=port))
    log = (tmp / "proxy.log").open("wb")
    proc = subprocess.Popen(
        command("serve", "--config", str(tmp / "config.toml")),
        cwd=ROOT,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60  # the proxy loads Silero before it listens
        while True:
            if proc.poll() is not None:
                pytest.fail(f"proxy exited: {(tmp / 'proxy.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"proxy not up: {(tmp / 'proxy.log').read_text()[-3000:]}")
                time.sleep(0.2)
        yield proc, f"ws://127.0.0.1:{port}/v1/realtime"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def proxy_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_proxy(tmp_path_factory.mktemp("proxy")) as (_, url):
        yield url


def talk(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command("talk", *args), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("model", "mode"),
    [("demo", "duplex_emulated"), ("relay", "barge_in_emulated"), ("native", "barge_in_emulated")],
)
def test_talk_barge_in_and_resume(proxy_url: str, tmp_path: Path, model: str, mode: str) -> None:
    out = tmp_path / "heard.wav"
    done = talk(
        proxy_url,
        "--model", model,
        "--wav", str(CORPUS / "utt00_clean.wav"),
        "--barge-in", f"{CORPUS / 'utt01_clean.wav'}@5s",
        "--drop-at", "8s",
        "--out", str(out),
        "--json",
    )  # fmt: skip
    report = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, report
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    timeline = done.stdout
    assert summary["mode"] == mode, report
    assert "first audio" in timeline and "speech_started" in timeline, report

    # The second sentence cut the answer; where the proxy cut it (the emulated modes),
    # the truncation is at what talk had played (its playback.ack), never beyond.
    assert len(summary["barge_ins"]) == 1, report
    cut = summary["barge_ins"][0]
    assert cut["cut_ms"] is not None and cut["detect_ms"] >= 0, report
    if mode != "passthrough":
        assert cut["truncated_at_ms"] is not None, report
        assert cut["truncated_at_ms"] <= cut["heard_ms"], report
    assert summary["responses"].get("cancelled") == 1, report

    # The dropped connection resumed with nothing lost or repeated.
    assert len(summary["resumes"]) == 1 and summary["resumes"][0]["ok"], report
    assert summary["resumes"][0]["first_seq"] == summary["resumes"][0]["after_seq"] + 1
    assert (summary["lost"], summary["duplicated"]) == (0, 0), report
    assert summary["responses"].get("completed", 0) >= 1, report
    assert not summary["errors"], report

    # What was heard is on the input's timeline: as long as what was said, or longer.
    with wave.open(str(out)) as w:
        heard_s = w.getnframes() / w.getframerate()
        pcm = w.readframes(w.getnframes())
    assert heard_s >= 5 + 4.0, report
    assert any(pcm), "the written answer is silent"
    assert summary["played_ms"] > 0 and summary["played_ms"] <= summary["received_ms"]


@pytest.mark.timeout(120)
def test_talk_ends_when_the_proxy_goes_away(tmp_path: Path) -> None:
    with running_proxy(tmp_path) as (proxy, url):
        args = ["--model", "demo", "--wav", str(CORPUS / "utt00_clean.wav"), "--json"]
        talking = subprocess.Popen(
            command("talk", url, *args), cwd=ROOT, env=env(), stdout=subprocess.PIPE, text=True
        )
        try:
            assert talking.stdout is not None
            seen = []
            for line in talking.stdout:
                seen.append(line)
                if "session.created" in line:
                    break
            proxy.kill()  # mid-sentence: the socket closes, and nothing answers a resume
            out, _ = talking.communicate(timeout=60)
        finally:
            talking.kill()
    report = "".join(seen) + out
    assert talking.returncode == 1, report
    summary = json.loads(out.strip().splitlines()[-1])
    assert [e["code"] for e in summary["errors"]] == ["connection_lost"], report
    assert not summary["ok"]


def test_talk_rejects_bad_arguments(tmp_path: Path) -> None:
    done = talk("ws://127.0.0.1:9/v1/realtime", "--wav", "x.wav", "--barge-in", "nowhen")
    assert done.returncode == 2 and "CLIP.wav@TIME" in done.stderr
    done = talk("ws://127.0.0.1:9/v1/realtime", "--wav", str(tmp_path / "missing.wav"))
    assert done.returncode == 2 and "duplex-proxy talk:" in done.stderr


def test_times_and_clips_parse() -> None:
    assert seconds("2.5s") == 2.5 and seconds("2500ms") == 2.5 and seconds("3") == 3.0
    assert barge_in("a@b.wav@1.5s") == (Path("a@b.wav"), 1.5)
    for bad in ("soon", "-1s", "1.5 min"):
        with pytest.raises(argparse.ArgumentTypeError):
            seconds(bad)


def test_player_acks_what_it_played_and_flushes_the_rest() -> None:
    player = Player(rate=24000)
    player.push("item_a", "resp_a", b"\1\0" * 24000)  # 1 s
    acks = [ack for _ in range(15) for ack in player.tick(20)]  # 300 ms
    assert [a["played_ms"] for a in acks] == [200]
    assert acks[0]["item_id"] == "item_a" and acks[0]["response_id"] == "resp_a"
    ack, dropped = player.flush()
    assert ack is not None and ack["played_ms"] == 300 and dropped == 700
    assert player.tick(20) == [] and player.queued_bytes == 0
    assert len(player.heard) == 2 * 24000 * 320 // 1000  # silence after the flush, on time
