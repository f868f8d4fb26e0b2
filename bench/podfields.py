"""A pod list page decoded into only what a per-node free-GPU answer reads of a pod: its
namespace and name, its node, each container's and init container's requests, its phase
(bench/replay.py --decode fields: the least any client must decode of the pages)."""

from __future__ import annotations

from typing import Any

import msgspec


class _Resources(msgspec.Struct):
    requests: dict[str, Any] | None = None


class _Container(msgspec.Struct):
    resources: _Resources | None = None


class _Metadata(msgspec.Struct):
    namespace: str = ""
    name: str = ""


class _Spec(msgspec.Struct):
    nodeName: str = ""
    containers: list[_Container] | None = None
    initContainers: list[_Container] | None = None


class _Status(msgspec.Struct):
    phase: str = ""


class _Pod(msgspec.Struct):
    metadata: _Metadata | None = None
    spec: _Spec | None = None
    status: _Status | None = None


class _PodPage(msgspec.Struct):
    metadata: dict[str, Any] | None = None
    items: list[_Pod] | None = None


pod_page = msgspec.json.Decoder(_PodPage).decode
