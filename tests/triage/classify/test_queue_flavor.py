"""Admitted by Kueue, judged by the funnel (triage/classify/checks/queue_flavor.py): the flavor
that set the pod's nodeSelector and tolerations is named, on kueue-basics changed the way the
cluster would change; each whole answer worked out by hand from the objects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import find, load_lists
from tests.triage.test_queues import queue_object
from tests.triage.test_traps import Lists, answer

REF = "team-b/sd-train-n7lxm"
FULL = ("h100-node-1 has 8/8 nvidia.com/gpu held by ops/h100-burnin; h100-node-2 has 8/8 "
        "nvidia.com/gpu held by team-b/video-gen-jp9cs. Wait for them to finish, or relax "
        "nodeSelector pool=h100: a100-node-1 has 4 free; or add capacity.")


@pytest.fixture
def kueue() -> Lists:
    return load_lists("kueue-basics")


def _sd_train_pods(lists: Lists) -> list[dict[str, Any]]:
    return [find(lists["pods"], name, "team-b") for name in ("sd-train-n7lxm", "sd-train-r5b8l")]


@pytest.mark.parametrize(("toleration", "said"), [
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
     "nvidia.com/gpu:NoSchedule"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"},
     "nvidia.com/gpu=present"),
    ({"operator": "Exists"}, "*"),
], ids=["exists-with-effect", "equal-without-effect", "exists-without-key"])
def test_the_flavors_toleration_is_named_as_kueue_injected_it(
        kueue: Lists, toleration: dict[str, Any], said: str) -> None:
    queue_object(kueue, "ResourceFlavor", "h100")["spec"]["tolerations"] = [toleration]
    for pod in _sd_train_pods(kueue):
        pod["spec"]["tolerations"][0] = dict(toleration)
    verdict = answer(kueue, REF)
    assert (verdict.cause, verdict.action) == ("exhausted", (
        f"{FULL} Kueue admitted it in ClusterQueue team-b-cq and flavor h100 set nodeSelector "
        f"pool=h100 and toleration {said}: to use other nodes, change the flavors of the "
        "ClusterQueue, not the pod's template. Outside Kueue, ops/h100-burnin 8 holds "
        "nvidia.com/gpu on the flavor's nodes: Kueue's quota does not count it."))
