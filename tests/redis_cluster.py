"""A real Redis Cluster and a real Sentinel set for tests, on free loopback ports.

Fixtures:

* ``redis_cluster`` (one per run): 3 masters with a replica each, six
  ``redis-server --cluster-enabled yes`` processes joined by
  ``redis-cli --cluster create ... --cluster-replicas 1``. Tests may fail a master
  over to its replica (``failover``); the cluster stays whole, only roles move.
* ``redis_sentinel`` (one per test): a master, its replica and one Sentinel
  watching them as ``mymaster``.

``redis-cli`` ships with redis-server (Debian's redis-tools, a dependency of
redis-server). When it is missing the tests skip locally but fail in CI (``CI``
set), as in ``tests/redis_server.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis.crc import key_slot

from tests.ports import free_port
from tests.redis_server import RedisServer, find_binary, find_redis_server

WAIT_S = 30.0
SERVICE = "mymaster"


def find_redis_cli() -> str:
    return find_binary("redis-cli", "REDIS_CLI", "redis-tools")


def cli(port: int, *args: str) -> str:
    """One redis-cli command against 127.0.0.1:``port``; its raw reply."""
    argv = [find_redis_cli(), "-h", "127.0.0.1", "-p", str(port), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT_S, check=True)
    return done.stdout


def wait_until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"redis: still not {what} after {WAIT_S} s")
        time.sleep(0.05)


def _info(port: int, section: str) -> dict[str, str]:
    lines = cli(port, "INFO", section).splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line)


def _role(port: int) -> str | None:
    """The node's role, or None while it cannot say: a node being reconfigured
    (Sentinel's REPLICAOF then CLIENT KILL, a cluster failover) may drop the
    connection mid-command, and redis-cli then exits 1."""
    try:
        lines = cli(port, "ROLE").splitlines()
    except subprocess.CalledProcessError:
        return None
    return lines[0] if lines else None


def _is_master(port: int) -> bool:
    return _role(port) == "master"


def _is_demoted(port: int) -> bool:
    role = _role(port)
    return role is not None and role != "master"


class Cluster:
    def __init__(self, nodes: list[RedisServer]) -> None:
        self.nodes = nodes

    @property
    def url(self) -> str:
        """Two seeds, as a deployment would list a few of its nodes."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes[:2])

    def create(self) -> None:
        addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
        argv = [find_redis_cli(), "--cluster", "create", *addresses]
        argv += ["--cluster-replicas", "1", "--cluster-yes"]
        subprocess.run(argv, capture_output=True, timeout=WAIT_S * 2, check=True)
        self.wait_settled()

    def wait_settled(self) -> None:
        """Every node says the cluster is ok, every replica is in sync with its master."""

        def settled() -> bool:
            for node in self.nodes:
                if "cluster_state:ok" not in cli(node.port, "CLUSTER", "INFO"):
                    return False
                repl = _info(node.port, "replication")
                if repl["role"] == "slave" and repl.get("master_link_status") != "up":
                    return False
            return len(self._masters(self.nodes[0].port)) == 3

        wait_until("settled", settled)

    def _masters(self, port: int) -> dict[str, tuple[int, list[str]]]:
        """node id -> (port, slot ranges) of each master, as ``port`` sees the cluster."""
        masters = {}
        for line in cli(port, "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "master" in fields[2].split(",") and "fail" not in fields[2]:
                address = fields[1].split("@")[0]
                masters[fields[0]] = (int(address.rsplit(":", 1)[1]), fields[8:])
        return masters

    def master_port_of(self, key: str, via: int | None = None) -> int:
        slot = key_slot(key.encode())
        for port, ranges in self._masters(via or self.nodes[0].port).values():
            for r in ranges:
                low, _, high = r.partition("-")
                if int(low) <= slot <= int(high or low):
                    return port
        raise LookupError(f"no master serves slot {slot}")

    def replica_port_of(self, master_port: int) -> int:
        for node in self.nodes:
            repl = _info(node.port, "replication")
            if repl["role"] == "slave" and int(repl["master_port"]) == master_port:
                return node.port
        raise LookupError(f"no replica of {master_port}")

    def failover(self, key: str) -> tuple[int, int]:
        """Promote the replica of the master serving ``key`` (a manual, lossless failover:
        the master hands over only once the replica has caught up). (old, new) ports."""
        old = self.master_port_of(key)
        new = self.replica_port_of(old)
        cli(new, "CLUSTER", "FAILOVER")
        wait_until("failed over", lambda: _is_master(new) and self.master_port_of(key) == new)
        self.wait_settled()
        return old, new

    def crash_master(self, key: str) -> tuple[RedisServer, int]:
        """SIGKILL the master serving ``key`` once its replica has every write; wait for
        the replica's election. (the dead node, the new master's port)"""
        old = self.master_port_of(key)
        new = self.replica_port_of(old)
        cli(old, "WAIT", "1", "5000")
        dead = next(n for n in self.nodes if n.port == old)
        dead.kill()
        survivor = next(n for n in self.nodes if n.port != old)

        def promoted() -> bool:
            try:
                return _is_master(new) and self.master_port_of(key, survivor.port) == new
            except LookupError:  # the old master failed, the election not yet won
                return False

        wait_until("promoted", promoted)
        return dead, new

    def rejoin(self, node: RedisServer) -> None:
        """Start a crashed node again: its nodes.conf makes it a replica of its successor."""
        node.start()
        self.wait_settled()

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()


def _cluster_node(binary: str) -> RedisServer:
    for attempt in range(3):
        # The bus port defaults to port + 10000, which may be taken or out of range.
        args = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
        args += ("--cluster-port", str(free_port()), "--cluster-node-timeout", "2000")
        node = RedisServer(binary, args)
        try:
            node.start()
        except RuntimeError:
            # Another process may have taken a free port in between: try others.
            node.cleanup()
            if attempt == 2:
                raise
            continue
        return node
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[Cluster]:
    binary = find_redis_server()
    find_redis_cli()
    nodes = []
    try:
        for _ in range(6):
            nodes.append(_cluster_node(binary))
        cluster = Cluster(nodes)
        cluster.create()
        yield cluster
    finally:
        for node in nodes:
            node.cleanup()


class SentinelSet:
    """A master, one replica and one Sentinel (quorum 1) watching ``SERVICE``."""

    def __init__(self, master: RedisServer, replica: RedisServer, binary: str) -> None:
        self.master, self.replica = master, replica
        self.dir = Path(tempfile.mkdtemp(prefix="dxp-sentinel-"))
        self.port = free_port()
        self._binary = binary
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.port}/{SERVICE}/0"

    def start(self) -> None:
        config = self.dir / "sentinel.conf"  # Sentinel rewrites it: a file of its own
        config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.master.port} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} 2000\n"
            f"sentinel failover-timeout {SERVICE} 10000\n"
        )
        log = self.dir / "sentinel.log"
        argv = [self._binary, str(config), "--sentinel", "--logfile", str(log)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until("watching the replica", lambda: self._knows_replica())

    def _knows_replica(self) -> bool:
        try:
            return f"{self.replica.port}" in cli(self.port, "SENTINEL", "REPLICAS", SERVICE)
        except subprocess.CalledProcessError:
            return False

    def master_port(self) -> int:
        reply = cli(self.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE).split()
        return int(reply[1])

    def failover(self) -> None:
        """Promote the replica (once it has everything the master has)."""
        cli(self.master.port, "WAIT", "1", "5000")
        # Refused (NOGOODSLAVE) until Sentinel has heard from the replica itself, which
        # can take a few seconds after it learned of it: ask until it starts.
        wait_until("starting a failover", lambda: self._failover_started())
        old, new = self.master.port, self.replica.port
        wait_until("failed over", lambda: self.master_port() == new and _is_master(new))
        # Until Sentinel demotes it the old master still takes writes; wait for that.
        wait_until("demoted", lambda: _is_demoted(old))
        self.master, self.replica = self.replica, self.master

    def _failover_started(self) -> bool:
        reply = cli(self.port, "SENTINEL", "FAILOVER", SERVICE)
        if reply.strip() == "OK" or "INPROG" in reply:
            return True
        time.sleep(0.5)
        return False

    def cleanup(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def redis_sentinel() -> Iterator[SentinelSet]:
    binary = find_redis_server()
    find_redis_cli()
    master = RedisServer(binary)
    replica: RedisServer | None = None
    sentinel: SentinelSet | None = None
    try:
        master.start()
        replica = RedisServer(binary, ("--replicaof", "127.0.0.1", str(master.port)))
        replica.start()
        wait_until(
            "replicating",
            lambda: _info(replica.port, "replication").get("master_link_status") == "up",
        )
        sentinel = SentinelSet(master, replica, binary)
        sentinel.start()
        yield sentinel
    finally:
        if sentinel is not None:
            sentinel.cleanup()
        if replica is not None:
            replica.cleanup()
        master.cleanup()
