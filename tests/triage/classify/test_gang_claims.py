"""Gangs whose pods ask GPUs through DRA claims, judged as a whole like device-plugin gangs:
whole answers on scenarios-extra/gang-dra-claims (see its README.md), and that recording
changed the way the cluster would change.

Its devices: dra-share-1 (pool share-a) one shared A100, memory 80Gi, 70Gi consumed by chat-a
and chat-b's claims, requestPolicy validRange min 10Gi step 10Gi; dra-share-2 (share-b) the
same, nothing consumed, validValues 10/20/40Gi; dra-l4-1 (l4) two exclusive L4, gpu-0
allocated to fa-second's claim. Template h100-or-l4 is firstAvailable [h100: 1 × H100,
l4: 1 × L4]; no H100 device exists.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conftest import find, load_lists
from tests.paths import FIXTURES
from tests.triage.classify.dra_objects import Lists, answer, dra_object, evidence_of

SCENARIO = FIXTURES / "scenarios-extra" / "gang-dra-claims"
WAITING = ("pod group is unschedulable, waiting for minCount pods from a gang to be scheduled,"
           " one or more plugins asked to wait and no plugin rejected pod")


@pytest.fixture
def claims() -> Lists:
    return load_lists(SCENARIO)


def _group_evidence(group: str, pod: str, min_count: int) -> list[tuple[str, str, str]]:
    return [(f"PodGroup infer/{group}", "spec.schedulingPolicy.gang.minCount", str(min_count)),
            (f"Pod infer/{pod}", "spec.schedulingGroup.podGroupName", group),
            (f"PodGroup infer/{group}", "status.conditions[PodGroupScheduled]",
             "False Unschedulable: pod group is unschedulable"),
            (f"Pod infer/{pod}", "scheduler message", WAITING)]


def _template_alternatives(lists: Lists, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = dra_object(lists, "ResourceClaimTemplate", name)[
        "spec"]["spec"]["devices"]["requests"][0]["firstAvailable"]
    return found


def _claims_of(lists: Lists, prefix: str) -> list[dict[str, Any]]:
    return [o for o in lists["dra"]
            if o["kind"] == "ResourceClaim" and o["metadata"]["name"].startswith(prefix)]


def test_a_claim_gang_larger_than_its_shared_device_is_too_large(claims: Lists) -> None:
    verdict = answer(claims, "infer/kv-0")
    assert (verdict.cause, verdict.action) == (
        "too-large",
        "PodGroup infer/kv-workers needs 3 pods × 1 × gpu.nvidia.com (memory 35Gi) at once (gang"
        " minCount 3); the nodes nodeSelector pool=share-b and taints leave could hold only 2 of"
        " them even with every GPU free (dra-share-2: 2). The scheduler binds none of the gang"
        " until 3 fit together: waiting never helps. Lower minCount, make each pod smaller, or"
        " send the gang to a pool with room for all of it.")
    assert evidence_of(verdict) == [*_group_evidence("kv-workers", "kv-0", 3),
                                    ("Node/dra-share-2", "gang pods it could take empty", "2")]
    assert verdict.node_summary == (
        "17 nodes: 16 not fit (16 selector-mismatch), 1 fit (dra-share-2); gang kv-workers"
        " (minCount 3): 2 pods fit now on 1 node, 2 with every GPU free")


def test_the_request_policys_rounding_sets_how_many_share_a_device(claims: Lists) -> None:
    # 30Gi is a valid value of no policy step on share-b (10/20/40Gi): it rounds to 40Gi too;
    # 20Gi rounds to nothing more, and 80Gi takes four
    for claim in _claims_of(claims, "kv-"):
        claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"][
            "memory"] = "30Gi"
    assert answer(claims, "infer/kv-0").cause == "too-large"
    for claim in _claims_of(claims, "kv-"):
        claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"][
            "memory"] = "20Gi"
    verdict = answer(claims, "infer/kv-0")
    assert verdict.cause == "other-constraint"
    assert verdict.node_summary.endswith(
        "; gang kv-workers (minCount 3): 4 pods fit now on 1 node, 4 with every GPU free")


def test_a_claim_gang_short_of_shared_capacity_now_names_what_the_claims_consume(
        claims: Lists) -> None:
    verdict = answer(claims, "infer/pair-0")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "PodGroup infer/pair-workers needs 2 pods × 1 × gpu.nvidia.com (memory 10Gi) at once"
        " (gang minCount 2): 1 of 2 gang pods fit now (dra-share-1: 1); dra-share-1: gpu-0"
        " shared: memory 70Gi/80Gi used by claims infer/chat-a-gpu-rxw97,"
        " infer/chat-b-gpu-sw5b4. With every GPU free the nodes would hold 8. Wait for them to"
        " finish, or add capacity: the scheduler binds none of the gang until 2 fit.")
    assert evidence_of(verdict)[-1] == (
        "Node/dra-share-1", "ResourceClaims allocated on its devices",
        "gpu-0 shared: memory 70Gi/80Gi used by claims infer/chat-a-gpu-rxw97,"
        " infer/chat-b-gpu-sw5b4")


def test_the_gang_pod_with_the_filter_message_is_told_what_its_counts_include(
        claims: Lists) -> None:
    verdict = answer(claims, "infer/pair-1")
    assert verdict.cause == "exhausted"
    assert verdict.action.endswith(
        " (The scheduler's \"1 cannot allocate all claims\" counts the nodes the other pods of"
        " pair-workers were placed on in the same try: they hold nothing now.)")


def test_a_claim_gang_on_exclusive_devices_names_the_claim_holding_one(claims: Lists) -> None:
    verdict = answer(claims, "infer/l4-0")
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        "PodGroup infer/l4-workers needs 2 pods × first available of h100: 1 × gpu.nvidia.com,"
        " l4: 1 × gpu.nvidia.com at once (gang minCount 2): 1 of 2 gang pods fit now (dra-l4-1:"
        " 1); dra-l4-1: claim infer/fa-second-gpu-xsr9t (pod infer/fa-second): gpu-0. With every"
        " GPU free the nodes would hold 2. Wait for them to finish, or add capacity: the"
        " scheduler binds none of the gang until 2 fit.")


def test_three_pods_on_two_exclusive_devices_are_too_large(claims: Lists) -> None:
    verdict = answer(claims, "infer/l4-trio-1")
    assert verdict.cause == "too-large"
    assert "could hold only 2 of them even with every GPU free (dra-l4-1: 2)" in verdict.action


def test_each_gang_pod_takes_the_first_alternative_with_room(claims: Lists) -> None:
    # [two L4, else one L4]: with both free the first pod takes both, so the second finds
    # none, even empty; now (gpu-0 held) the first pod takes gpu-1 through the second
    alternatives = _template_alternatives(claims, "h100-or-l4")
    alternatives[0] = copy.deepcopy(alternatives[1]) | {"name": "l4-pair", "count": 2}
    for claim in _claims_of(claims, "l4-"):
        claim["spec"]["devices"]["requests"][0]["firstAvailable"] = copy.deepcopy(alternatives)
    verdict = answer(claims, "infer/l4-0")
    assert verdict.cause == "too-large"
    assert verdict.action.startswith(
        "PodGroup infer/l4-workers needs 2 pods × first available of l4-pair: 2 ×"
        " gpu.nvidia.com, l4: 1 × gpu.nvidia.com at once (gang minCount 2); the nodes"
        " nodeSelector pool=l4 and taints leave could hold only 1 of them even with every GPU"
        " free (dra-l4-1: 1).")
    assert verdict.node_summary.endswith(
        "; gang l4-workers (minCount 2): 1 pod fit now on 1 node, 1 with every GPU free")


def test_a_gang_asking_gpus_both_ways_fits_as_the_scarcer_allows(claims: Lists) -> None:
    # dra-l4-1 also gets a device plugin's 8 nvidia.com/gpu, and each l4 pod asks 4 of them
    # besides its claim: 2 pods by the plugin's GPUs, 2 empty / 1 now by the L4 devices
    node = find(claims["nodes"], "dra-l4-1")
    for section in ("capacity", "allocatable"):
        node["status"][section]["nvidia.com/gpu"] = "8"
    for name in ("l4-0", "l4-1"):
        resources = find(claims["pods"], name, "infer")["spec"]["containers"][0]["resources"]
        resources["limits"]["nvidia.com/gpu"] = "4"
        resources["requests"]["nvidia.com/gpu"] = "4"
    verdict = answer(claims, "infer/l4-0")
    assert verdict.cause == "exhausted"
    assert verdict.action.startswith(
        "PodGroup infer/l4-workers needs 2 pods × 4 nvidia.com/gpu + first available of h100:"
        " 1 × gpu.nvidia.com, l4: 1 × gpu.nvidia.com at once (gang minCount 2): 1 of 2 gang pods"
        " fit now (dra-l4-1: 1);")
    # 8 each: the plugin's GPUs take one pod, the devices two
    for name in ("l4-0", "l4-1"):
        resources = find(claims["pods"], name, "infer")["spec"]["containers"][0]["resources"]
        resources["limits"]["nvidia.com/gpu"] = "8"
        resources["requests"]["nvidia.com/gpu"] = "8"
    assert answer(claims, "infer/l4-0").node_summary.endswith(
        "; gang l4-workers (minCount 2): 1 pod fit now on 1 node, 1 with every GPU free")


def test_an_incomplete_claim_gang_that_fits_waits_for_its_pods(claims: Lists) -> None:
    verdict = answer(claims, "infer/solo-0")
    assert (verdict.cause, verdict.action) == (
        "other-constraint",
        "gang incomplete: PodGroup infer/solo-workers has gang minCount 2, only 1 pod (solo-0)"
        " names it. GPU-wise the gang would fit, but kube-scheduler holds its pods back before any"
        " scheduling attempt until 2 exist (no event, no PodScheduled condition). Create the"
        " missing 1 pod, or lower minCount.")


def test_an_incomplete_claim_gang_that_could_never_fit_gets_the_gpu_cause(claims: Lists) -> None:
    verdict = answer(claims, "infer/wide-0")
    assert verdict.cause == "too-large"
    assert verdict.action.endswith(
        "could hold only 2 of them even with every GPU free (dra-share-2: 2). The scheduler"
        " binds none of the gang until 4 fit together: waiting never helps. Lower minCount, make"
        " each pod smaller, or send the gang to a pool with room for all of it. Besides, only 2"
        " of its 4 pods exist yet.")


def test_a_bound_gang_pods_claim_holds_its_share_of_the_device(claims: Lists) -> None:
    # kv-0 bound, its claim allocated 40Gi of dra-share-2: the other pods of the gang find
    # room for one more now, two with the device free, never the three minCount asks
    claim = _claims_of(claims, "kv-0-")[0]
    pod = find(claims["pods"], "kv-0", "infer")
    claim["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com",
                                     "pool": "dra-share-2", "device": "gpu-0",
                                     "consumedCapacity": {"memory": "40Gi"},
                                     "shareID": "5b1c2d3e-0000-4000-8000-00000000c0de"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["dra-share-2"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "kv-0", "uid": pod["metadata"]["uid"]}]}
    pod["spec"]["nodeName"] = "dra-share-2"
    pod["status"]["phase"] = "Running"
    verdict = answer(claims, "infer/kv-1")
    assert verdict.cause == "too-large"
    assert verdict.node_summary.endswith(
        "; gang kv-workers (minCount 3): 1 pod fit now on 1 node, 2 with every GPU free")


def test_a_pod_asking_two_shared_devices_takes_the_emptiest_first(claims: Lists) -> None:
    # dra-share-1 also publishes gpu-1 and gpu-2 of 40Gi and gpu-3 of 80Gi, and each pair pod
    # asks 2 devices × 40Gi: gpu-0's 10Gi takes none. Taking gpu-1 and gpu-2 first would leave
    # gpu-3 alone; gpu-3 with gpu-1, then gpu-3 with gpu-2, places both pods
    devices = next(o for o in claims["dra"] if o["kind"] == "ResourceSlice"
                   and o["spec"].get("nodeName") == "dra-share-1")["spec"]["devices"]
    for index, memory in ((1, "40Gi"), (2, "40Gi"), (3, "80Gi")):
        device = copy.deepcopy(devices[0])
        device["name"] = f"gpu-{index}"
        device["attributes"]["index"] = {"int": index}
        device["attributes"]["uuid"] = {"string": f"GPU-1b36babf-be7f-1e48-1956-7b9e7ebe23c{index}"}
        device["capacity"]["memory"]["value"] = memory
        devices.append(device)
    for claim in _claims_of(claims, "pair-"):
        exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
        exactly["count"] = 2
        exactly["capacity"]["requests"]["memory"] = "40Gi"
    verdict = answer(claims, "infer/pair-0")
    assert verdict.cause == "other-constraint"
    # with nothing consumed: gpu-0 and gpu-3 take two 40Gi each, gpu-1 and gpu-2 one: 3 pods
    assert verdict.node_summary.endswith(
        "; gang pair-workers (minCount 2): 2 pods fit now on 1 node, 3 with every GPU free")


def _extended_gang(pods: int, min_count: int) -> Lists:
    """scenarios-extra/dra-extended (nvidia.com/gpu met by DeviceClass gpu.nvidia.com where a
    node's allocatable lacks it): ext-a100b asks 1 and gets ``pods - 1`` more like it, all in
    PodGroup serving/ext-workers. Its pool a100-b is dra-a100-2: 4 devices, gpu-0 held by
    finetune-1g's claim, gpu-1 and gpu-2 by the claim DRA made for legacy-runner's limit."""
    lists = load_lists(FIXTURES / "scenarios-extra" / "dra-extended")
    group = copy.deepcopy(find(load_lists(SCENARIO)["gangs"], "kv-workers", "infer"))
    group["metadata"].update(name="ext-workers", namespace="serving", uid="ext-workers-uid")
    group["spec"]["schedulingPolicy"]["gang"]["minCount"] = min_count
    lists["gangs"] = [group]
    pod = find(lists["pods"], "ext-a100b", "serving")
    for part in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"].get(part, {})["nvidia.com/gpu"] = "1"
    pod["spec"]["schedulingGroup"] = {"podGroupName": "ext-workers"}
    for number in range(2, pods + 1):
        more = copy.deepcopy(pod)
        more["metadata"].update(name=f"ext-a100b-{number}", uid=f"ext-a100b-{number}-uid")
        lists["pods"].append(more)
    return lists


def test_a_gang_whose_gpu_limit_dra_serves_counts_the_devices() -> None:
    verdict = answer(_extended_gang(2, 2), "serving/ext-a100b")
    assert verdict.cause == "exhausted"
    assert verdict.action.startswith(
        "PodGroup serving/ext-workers needs 2 pods × 1 nvidia.com/gpu at once (gang minCount 2):"
        " 1 of 2 gang pods fit now (dra-a100-2: 1); dra-a100-2: claim"
        " vision/finetune-1g-gpu-7hfk8 (pod vision/finetune-1g): gpu-0, claim"
        " vision/legacy-runner-extended-resources-7k2lq (pod vision/legacy-runner): gpu-1,gpu-2."
        " With every GPU free the nodes would hold 4.")
    assert answer(_extended_gang(5, 5), "serving/ext-a100b").cause == "too-large"
