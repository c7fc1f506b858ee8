"""Render this repository's kustomizations without a kustomize binary.

``kubectl kustomize`` is used when kubectl is on the PATH; this covers only what
``deploy/kubernetes`` uses (resources, labels without selectors, configMapGenerator
from files, images) for a machine without it. ``tests/test_kubernetes.py`` checks that
both render the same objects where both are available. Generated ConfigMaps get the
name suffix ``-HASH`` (a stand-in for kustomize's content hash) and every reference
to them in a pod spec follows.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]


def render(directory: Path) -> list[Obj]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    objects: list[Obj] = []
    generated: dict[str, str] = {}
    for entry in spec.get("configMapGenerator", []):
        data = {Path(f).name: (directory / f).read_text() for f in entry.get("files", [])}
        digest = hashlib.sha256(repr(sorted(data.items())).encode()).hexdigest()[:10]
        name = f"{entry['name']}-{digest}"
        generated[entry["name"]] = name
        objects.append(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
        )
    for resource in spec.get("resources", []):
        path = directory / resource
        if path.is_dir():
            objects += render(path)
        else:
            objects += [o for o in yaml.safe_load_all(path.read_text()) if o]
    for obj in objects:
        for label in spec.get("labels", []):
            if label.get("includeSelectors") or label.get("includeTemplates"):
                raise NotImplementedError("labels on selectors or templates")
            obj["metadata"].setdefault("labels", {}).update(label["pairs"])
        for pod in _pod_specs(obj):
            _rename_configmaps(pod, generated)
            for container in pod.get("initContainers", []) + pod.get("containers", []):
                _set_image(container, spec.get("images", []))
    return copy.deepcopy(objects)


def _pod_specs(obj: Obj) -> list[Obj]:
    template = obj.get("spec", {}).get("template", {})
    return [template["spec"]] if "spec" in template else []


def _rename_configmaps(pod: Obj, generated: dict[str, str]) -> None:
    for volume in pod.get("volumes", []):
        ref = volume.get("configMap")
        if ref and ref["name"] in generated:
            ref["name"] = generated[ref["name"]]


def _set_image(container: Obj, images: list[Obj]) -> None:
    name, _, tag = container["image"].partition(":")
    for image in images:
        if image["name"] == name:
            name = image.get("newName", name)
            tag = image.get("newTag", tag)
    container["image"] = f"{name}:{tag}" if tag else name
