"""``store.url`` and the store section: what each scheme names, and clear refusals that
never quote the password (``proxy/config_store_url.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import SSLConnection
from redis.asyncio.sentinel import SentinelConnectionPool

from proxy.config import ConfigError, StoreConfig, config_from_dict
from proxy.config_store_url import StoreUrl, parse_store_url, redacted
from proxy.config_summary import route_lines
from proxy.store.redis_client import connection_options, open_client, read_password

SECRET = "s3cr3t-pw"


@pytest.mark.parametrize(
    ("url", "cluster", "expected"),
    [
        ("memory://", False, StoreUrl("memory", tls=False)),
        ("unix:///run/redis.sock", False, StoreUrl("single", tls=False)),
        ("redis://r:6380/2", False, StoreUrl("single", False, (("r", 6380),), db=2)),
        ("rediss://u:p%40w@r/0", False, StoreUrl("single", True, (("r", 6379),), "u", "p@w")),
        ("redis://r:7000", True, StoreUrl("cluster", False, (("r", 7000),))),
        (
            "rediss+cluster://:pw@a:7000,[::1]:7001",
            False,
            StoreUrl("cluster", True, (("a", 7000), ("::1", 7001)), None, "pw"),
        ),
        (
            "redis+sentinel://s1:26379,s2/mymaster/3",
            False,
            StoreUrl("sentinel", False, (("s1", 26379), ("s2", 26379)), db=3, service="mymaster"),
        ),
    ],
)
def test_each_scheme(url: str, cluster: bool, expected: StoreUrl) -> None:
    assert parse_store_url(url, cluster) == expected
    StoreConfig(url=url, cluster=cluster)  # the config accepts it too


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ({"url": f"mongodb://:{SECRET}@x"}, "must start with one of"),
        ({"url": f"redis://:{SECRET}@"}, "names no host"),
        ({"url": f"redis://:{SECRET}@a:70000"}, "bad port"),
        ({"url": f"redis://:{SECRET}@a,b"}, "several hosts: use redis+cluster://"),
        ({"url": f"redis://:{SECRET}@a/x"}, "database must be a number"),
        ({"url": f"redis+sentinel://:{SECRET}@s1:26379"}, "must name the Sentinel service"),
        ({"url": f"redis+cluster://:{SECRET}@a/1"}, "only database 0"),
        ({"url": "unix:///r.sock", "cluster": True}, "cannot be reached over unix://"),
        ({"url": "redis+sentinel://s/m", "cluster": True}, "does not go with"),
        ({"url": f"redis://:{SECRET}@a", "password_file": "pw"}, "give one"),
        ({"url": "redis://a", "tls_ca_file": "ca.pem"}, "need a TLS url"),
        ({"url": "rediss://a", "tls_cert_file": "c.pem"}, "go together"),
    ],
)
def test_refused_with_a_clear_message(store: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"store": store})
    assert says in str(err.value)
    assert SECRET not in str(err.value)


def test_the_password_is_never_in_the_summary() -> None:
    config = config_from_dict({"store": {"url": f"redis+sentinel://:{SECRET}@a:1,b:2/m/0"}})
    lines = route_lines(config)
    assert "store: redis+sentinel://a:1,b:2/m/0" in lines
    assert SECRET not in "\n".join(lines)
    assert redacted(f"rediss://u:{SECRET}@h:1/0?x=1") == "rediss://h:1/0"


def test_password_file_and_tls_options(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text(SECRET + "\n")  # as a mounted Secret often ends
    config = StoreConfig(
        url="rediss+cluster://a:7000",
        password_file=str(secret),
        tls_ca_file="ca.pem",
        tls_cert_file="client.pem",
        tls_key_file="client.key",
    )
    url = parse_store_url(config.url)
    options = connection_options(config, url)
    assert options["password"] == SECRET
    assert (options["ssl"], options["ssl_ca_certs"]) == (True, "ca.pem")
    assert (options["ssl_certfile"], options["ssl_keyfile"]) == ("client.pem", "client.key")
    assert "ssl" not in connection_options(
        StoreConfig(url="redis://a"), parse_store_url("redis://a")
    )
    missing = StoreConfig(url="redis://a", password_file=str(tmp_path / "absent"))
    with pytest.raises(ValueError, match="password_file: cannot read it") as err:
        read_password(missing, url)
    assert SECRET not in str(err.value)


async def test_each_kind_builds_its_client_with_tls(tmp_path: Path) -> None:
    """Nothing connects yet: only which client, and that TLS reaches its connections."""
    tls = {"tls_ca_file": "ca.pem", "tls_cert_file": "c.pem", "tls_key_file": "c.key"}
    cluster = open_client(StoreConfig(url="rediss+cluster://a:7000,b:7001", **tls))
    assert isinstance(cluster.client, RedisCluster) and not cluster.sentinels
    seeds = [(n.host, n.port) for n in cluster.client.startup_nodes]
    assert seeds == [("a", 7000), ("b", 7001)]
    assert issubclass(cluster.client.connection_kwargs["connection_class"], SSLConnection)
    assert cluster.client.connection_kwargs["ssl_ca_certs"] == "ca.pem"
    await cluster.aclose()

    sentinel = open_client(StoreConfig(url="rediss+sentinel://s1:26379,s2:26380/main/2", **tls))
    pool = sentinel.client.connection_pool
    assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "main"
    assert issubclass(pool.connection_class, SSLConnection)
    assert pool.connection_kwargs["db"] == 2
    assert len(sentinel.sentinels) == 2
    await sentinel.aclose()

    single = open_client(StoreConfig(url="rediss://r:6380/1", **tls))
    assert issubclass(single.client.connection_pool.connection_class, SSLConnection)
    await single.aclose()
