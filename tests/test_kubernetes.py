"""The Kubernetes overlays render, pass strict schema validation, and fit the proxy.

Rendering uses ``kubectl kustomize`` when kubectl is on the PATH (and then checks the
fallback renderer, ``tests/kustomize_lite.py``, against it), else the fallback alone.
Validation is kubernetes-validate in strict mode (unknown fields are errors) against
the newest schema it has and 1.29, the first release with native sidecars.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from proxy.config import load_config
from tests.kustomize_lite import render as render_lite

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("sidecar", "routing-tier")
VERSIONS = (kubernetes_validate.latest_version(), "1.29.0")

Obj = dict[str, Any]


@cache
def render(overlay: str) -> tuple[Obj, ...]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return tuple(render_lite(K8S / "overlays" / overlay))
    done = subprocess.run(
        [kubectl, "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return tuple(o for o in yaml.safe_load_all(done.stdout) if o)


def find(objects: tuple[Obj, ...], kind: str, name: str | None = None) -> Obj:
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in found])
    return found[0]


def configmap_toml(objects: tuple[Obj, ...], tmp_path: Path) -> Path:
    cm = find(objects, "ConfigMap")
    path = tmp_path / "config.toml"
    path.write_text(cm["data"]["config.toml"])
    return path


def pod_spec(deployment: Obj) -> Obj:
    spec: Obj = deployment["spec"]["template"]["spec"]
    return spec


def prestop_seconds(container: Obj) -> float:
    """Seconds a preStop exec hook sleeps, from its `sleep N` commands."""
    command = " ".join(container["lifecycle"]["preStop"]["exec"]["command"])
    return sum(float(n) for n in re.findall(r"\bsleep\s+(\d+(?:\.\d+)?)", command))


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", VERSIONS)
def test_overlay_passes_strict_schema_validation(overlay: str, version: str) -> None:
    objects = render(overlay)
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_strict_validation_catches_a_misspelt_field() -> None:
    deployment = dict(find(render("routing-tier"), "Deployment", "duplex-proxy"))
    deployment["spec"] = {**deployment["spec"], "replica": 2}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSIONS[0], strict=True)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl to compare against")
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_fallback_renderer_matches_kubectl_kustomize(overlay: str) -> None:
    def normalised(objects: tuple[Obj, ...] | list[Obj]) -> str:
        text = yaml.safe_dump(sorted(objects, key=lambda o: (o["kind"], o["metadata"]["name"])))
        return re.sub(r"duplex-proxy-config-[a-z0-9]+", "duplex-proxy-config-HASH", text)

    assert normalised(render_lite(K8S / "overlays" / overlay)) == normalised(render(overlay))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_config_passes_check_config(overlay: str, tmp_path: Path) -> None:
    objects = render(overlay)
    config = load_config(configmap_toml(objects, tmp_path), environ={})
    redis = find(objects, "Service", "duplex-proxy-redis")
    assert config.store.url == f"redis://{redis['metadata']['name']}:6379/0"
    for deployment in (o for o in objects if o["kind"] == "Deployment"):
        volumes = pod_spec(deployment).get("volumes", [])
        for volume in volumes:
            if "configMap" in volume:
                assert volume["configMap"]["name"] == find(objects, "ConfigMap")["metadata"]["name"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_has_requests_limits_and_probes(overlay: str) -> None:
    for deployment in (o for o in render(overlay) if o["kind"] == "Deployment"):
        pod = pod_spec(deployment)
        for container in pod.get("initContainers", []) + pod["containers"]:
            resources = container["resources"]
            assert resources["requests"]["cpu"] and resources["requests"]["memory"]
            assert resources["limits"]["memory"], container["name"]
            assert "readinessProbe" in container, container["name"]


def proxy_container(pod: Obj) -> Obj:
    found = [
        c for c in pod.get("initContainers", []) + pod["containers"] if c["name"] == "duplex-proxy"
    ]
    assert len(found) == 1
    container: Obj = found[0]
    assert container["image"].endswith("duplex-proxy:0.1.0")
    assert container["securityContext"]["runAsNonRoot"] is True
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"ws": 8080}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "ws"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "ws"}
    return container


def test_sidecar_is_native_and_the_model_server_is_on_loopback_only(tmp_path: Path) -> None:
    objects = render("sidecar")
    pod = pod_spec(find(objects, "Deployment", "voice-model"))
    proxy = proxy_container(pod)
    assert proxy in pod["initContainers"] and proxy["restartPolicy"] == "Always"
    model = find_container(pod, "model")
    assert "ports" not in model, "the model server must not be reachable from outside the pod"
    args = model["args"]
    assert args[args.index("--host") + 1] == "127.0.0.1"
    config = load_config(configmap_toml(objects, tmp_path), environ={})
    port = args[args.index("--port") + 1]
    assert [r.upstream for r in config.routes] == [f"ws://127.0.0.1:{port}/v1/realtime"]
    service = find(objects, "Service", "voice-model")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["ws"]
    annotations = find(objects, "Deployment", "voice-model")["spec"]["template"]["metadata"][
        "annotations"
    ]
    assert annotations["prometheus.io/scrape"] == "true"


def find_container(pod: Obj, name: str) -> Obj:
    container: Obj = next(c for c in pod["containers"] if c["name"] == name)
    return container


def test_sidecar_shutdown_drains_the_proxy_before_the_model_stops(tmp_path: Path) -> None:
    objects = render("sidecar")
    pod = pod_spec(find(objects, "Deployment", "voice-model"))
    config = load_config(configmap_toml(objects, tmp_path), environ={})
    drain = config.drain.readiness_delay_s + config.server.drain_timeout_s
    model = find_container(pod, "model")
    script = model["lifecycle"]["preStop"]["exec"]["command"][-1]
    before_kill, after_kill = script.split("kill -TERM")
    assert not re.findall(r"sleep (\d+)", before_kill), "the proxy hears SIGTERM at once"
    (last_sleep,) = (float(n) for n in re.findall(r"sleep (\d+)", after_kill))
    # The model server keeps serving until the proxy had its delay and its whole drain.
    assert last_sleep > drain
    assert pod["terminationGracePeriodSeconds"] > last_sleep
    # The proxy's readiness follows the model server's.
    assert all(route.health_path for route in config.routes)
    assert pod["shareProcessNamespace"] is True
    # The hook finds the proxy by its command line, the one the image runs.
    pattern = re.search(r"grep -q '([^']+)'", script)
    assert pattern is not None
    dockerfile = (ROOT / "Dockerfile").read_text()
    entrypoint = re.search(r'^ENTRYPOINT \["([^"]+)"\]', dockerfile, re.M)
    assert entrypoint is not None
    proxy_args = proxy_container(pod)["args"]
    image_cmdline = shlex.join(
        ["/opt/duplex-proxy/bin/python", f"/opt/duplex-proxy/bin/{entrypoint[1]}", *proxy_args]
    )
    hook_cmdline = shlex.join(model["lifecycle"]["preStop"]["exec"]["command"])
    for cmdline, expected in ((image_cmdline, 0), (hook_cmdline, 1)):
        grep = subprocess.run(
            ["grep", "-q", pattern[1]], input=cmdline + " ", text=True, check=False
        )
        assert grep.returncode == expected, cmdline


def test_routing_tier_has_its_pieces_and_a_drain_that_fits(tmp_path: Path) -> None:
    objects = render("routing-tier")
    deployment = find(objects, "Deployment", "duplex-proxy")
    pod = pod_spec(deployment)
    proxy = proxy_container(pod)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for kind in ("Service", "PodDisruptionBudget"):
        selector = find(objects, kind, "duplex-proxy")["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        assert selector.items() <= labels.items(), kind
    hpa = find(objects, "HorizontalPodAutoscaler", "duplex-proxy")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "duplex-proxy"
    assert hpa["spec"]["minReplicas"] >= 2
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] == "/metrics"
    assert annotations["prometheus.io/port"] == "8080"
    env = {e["name"]: e for e in proxy["env"]}
    secret = env["DUPLEX_PROXY__STORE__URL"]["valueFrom"]["secretKeyRef"]
    assert secret["optional"] is True
    config = load_config(configmap_toml(objects, tmp_path), environ={})
    assert len(config.routes) >= 2
    margin = 5
    prestop = prestop_seconds(proxy) if "lifecycle" in proxy else 0.0
    delay = config.drain.readiness_delay_s
    assert prestop + delay > 0, "time for the endpoint to leave the Service"
    need = prestop + delay + config.server.drain_timeout_s + margin
    assert pod["terminationGracePeriodSeconds"] >= need
    find(objects, "Deployment", "duplex-proxy-redis")
