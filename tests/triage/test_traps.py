"""Each trap of the design has a test that fails if the trap is fallen into.

Fixtures are the recorded clusters' JSON, changed the way the cluster itself would change
(a phase patched, a node cordoned, events expired).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import SCENARIO_NAMES, SCENARIOS, find, load_lists
from triage.classify import triage
from triage.config import TriageConfig
from triage.pods import effective_request, effective_requests, sum_requests
from triage.refs import PodRef, parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
ToSnapshot = Callable[[Lists], Snapshot]


def answer(lists: Lists, ref: str, config: TriageConfig | None = None) -> Any:
    snapshot = Snapshot(**copy.deepcopy(lists))
    return triage(snapshot, parse_ref(ref), *(() if config is None else (config,)))


def _set_gpu(container: dict[str, Any], resource: str, amount: str) -> None:
    for section in ("limits", "requests"):
        container.setdefault("resources", {}).setdefault(section, {}).pop("nvidia.com/gpu", None)
        container["resources"][section][resource] = amount


# -- scheduled or not: spec.nodeName, never phase or STATUS ---------------------------------

def test_bound_pod_still_pending_is_scheduled(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "ok", "research")
    pod["status"] = {"phase": "Pending"}
    assert answer(seven_states, "research/ok").cause == "scheduled"


def _container_state(lists: Lists, phase: str, state: dict[str, Any],
                     last: dict[str, Any] | None = None, restarts: int = 0) -> None:
    """research/ok's container as the kubelet reports one it cannot run well."""
    pod = find(lists["pods"], "ok", "research")
    pod["status"]["phase"] = phase
    container = pod["status"]["containerStatuses"][0]
    container.update(state=state, lastState=last or {}, restartCount=restarts, ready=False,
                     started=False)


@pytest.mark.parametrize(("phase", "state", "last", "restarts", "says"), [
    ("Pending", {"waiting": {"reason": "ImagePullBackOff", "message":
                             'Back-off pulling image "nvcr.io/nvidia/pytorch:24.05-py3x"'}},
     None, 0, "container train cannot pull its image (ImagePullBackOff): fix the image name "
              "or tag, or the pull secret."),
    ("Pending", {"waiting": {"reason": "CreateContainerConfigError",
                             "message": 'secret "hf-token" not found'}}, None, 0,
     'container train cannot be created (CreateContainerConfigError: secret "hf-token" not '
     'found)'),
    ("Running", {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s "
                             "restarting failed container=train"}},
     {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}, 6,
     "container train keeps crashing (6 restarts), last exit 137 (OOMKilled): raise its memory "
     "limit"),
    ("Running", {"waiting": {"reason": "CrashLoopBackOff"}},
     {"terminated": {"exitCode": 1, "reason": "Error"}}, 3,
     "container train keeps crashing (3 restarts), last exit 1 (Error): read kubectl logs -n "
     "research ok -c train --previous."),
])
def test_a_scheduled_pod_says_what_its_container_is_stuck_on(
        seven_states: Lists, phase: str, state: dict[str, Any], last: dict[str, Any] | None,
        restarts: int, says: str) -> None:
    _container_state(seven_states, phase, state, last, restarts)
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "scheduled"  # the scheduler's part is done either way
    assert "scheduling is done, but " + says in verdict.action
    assert verdict.evidence[-1].field == "status.containerStatuses[train]"


def test_a_running_pod_gets_no_container_advice(seven_states: Lists) -> None:
    verdict = answer(seven_states, "research/ok")
    assert verdict.action.endswith("Nothing is wrong at scheduling level: look at the pod's "
                                   "logs and container statuses.")


def test_unbound_pod_claiming_running_is_not_scheduled(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    pod["status"]["phase"] = "Running"
    assert answer(seven_states, "research/full").cause == "exhausted"


# -- Succeeded / Failed pods hold nothing ------------------------------------------------

def test_terminal_pods_hold_no_gpus(seven_states: Lists) -> None:
    # gpu-a10-full: 2 GPUs; train-b leaves, done + crashed (terminal) stay bound there.
    seven_states["pods"].remove(find(seven_states["pods"], "train-b", "team-b"))
    verdict = answer(seven_states, "research/full")
    assert verdict.cause != "exhausted"
    assert {n.name: n.outcome for n in verdict.nodes}["gpu-a10-full"] == "fit"


def test_terminal_pods_counted_would_exhaust(seven_states: Lists) -> None:
    # The same cluster with done/crashed still running: now the node is really full.
    seven_states["pods"].remove(find(seven_states["pods"], "train-b", "team-b"))
    find(seven_states["pods"], "done", "team-b")["status"]["phase"] = "Running"
    assert answer(seven_states, "research/full").cause == "exhausted"


# -- the effective request ----------------------------------------------------------------

def _pod_spec(init: list[int], app: list[int], sidecar: list[int] | None = None) -> dict[str, Any]:
    def container(name: str, n: int, restart: str | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {"name": name, "image": "x",
                             "resources": {"limits": {"nvidia.com/gpu": str(n)},
                                           "requests": {"nvidia.com/gpu": str(n)}}}
        if restart:
            c["restartPolicy"] = restart
        return c
    inits = [container(f"sc{i}", n, "Always") for i, n in enumerate(sidecar or [])]
    inits += [container(f"init{i}", n) for i, n in enumerate(init)]
    return {"initContainers": inits, "containers": [container(f"c{i}", n)
                                                    for i, n in enumerate(app)]}


@pytest.mark.parametrize(("init", "app", "expected"), [
    ([2], [1, 1], 2),  # max(init, sum app), not the sum of all
    ([3], [1], 3),
    ([1], [2, 2], 4),
    ([], [1, 1, 1], 3),
])
def test_effective_request(init: list[int], app: list[int], expected: int) -> None:
    assert effective_request(_pod_spec(init, app), "nvidia.com/gpu") == expected


def test_sidecar_adds_to_app_containers() -> None:
    assert effective_request(_pod_spec([1], [1], sidecar=[1]), "nvidia.com/gpu") == 2


def _resources(requests: dict[str, str], limits: dict[str, str] | None = None,
               **more: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests, "limits": limits or {}}, **more}


@pytest.mark.parametrize(("spec", "expected"), [
    # quantities as the API server may write them; sums keep Decimal's exact digits
    ({"containers": [_resources({"cpu": "500m", "memory": "1Gi"}, {"nvidia.com/gpu": "1"}),
                     _resources({"cpu": "1.5", "memory": "1e3"})]},
     {"cpu": "2.000", "memory": "1073742824", "nvidia.com/gpu": "1"}),
    ({"containers": [_resources({"cpu": "2"}, {"cpu": "-1"})]}, {"cpu": "0"}),  # never below 0
    ({"containers": [_resources({"nvidia.com/gpu": "1"})],
      "initContainers": [_resources({"nvidia.com/gpu": "3", "cpu": "1"}),
                         _resources({"nvidia.com/gpu": "1"}, restartPolicy="Always")]},
     {"nvidia.com/gpu": "3", "cpu": "1"}),  # init peak 3 > app 1 + sidecar 1
    ({"containers": [_resources({"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "64Mi"}},
     {"cpu": "1.250"}),  # overhead only for what the containers name
    ({"containers": [_resources({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "lots"}),
                     _resources({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"})]},
     {"nvidia.com/gpu": "3"}),  # an unparsable limit leaves the request; a limit wins
    # PodLevelResources: spec.resources replaces the containers' cpu / memory sums
    ({"containers": [_resources({"cpu": "1", "memory": "1Gi"}), _resources({"cpu": "1"})],
      "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "8"}}},
     {"cpu": "4", "memory": "1073741824"}),
    ({"containers": [_resources({"cpu": "1"})], "resources": {"limits": {"memory": "2Gi"}},
      "overhead": {"memory": "64Mi"}},
     {"cpu": "1", "memory": "2214592512"}),  # a limit alone is the request; overhead on top
    ({"containers": [_resources({"nvidia.com/gpu": "1"})],
      "initContainers": [_resources({"cpu": "3"})],
      "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "4", "hugepages-2Mi": "4Mi"}}},
     {"cpu": "2", "nvidia.com/gpu": "1", "hugepages-2Mi": "4194304"}),  # no pod-level GPUs
])
def test_effective_requests_of_every_resource(spec: dict[str, Any],
                                              expected: dict[str, str]) -> None:
    requests = effective_requests(spec)
    assert {name: str(amount) for name, amount in requests.items()} == expected
    assert requests == {name: effective_request(spec, name) for name in expected}


def test_summed_requests_count_the_pods() -> None:
    pods = [{"spec": {"containers": [_resources({"cpu": "250m"}, {"nvidia.com/gpu": "2"})]}},
            {"spec": {"containers": [_resources({"cpu": "1"})]}}]
    totals = sum_requests(pods)
    assert {name: str(amount) for name, amount in totals.items()} == {
        "cpu": "1.250", "nvidia.com/gpu": "2", "pods": "2"}


def test_init_container_request_decides_too_large(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "ok", "research")
    del pod["spec"]["nodeName"]
    pod["status"] = {"phase": "Pending"}
    init = copy.deepcopy(pod["spec"]["containers"][0])
    init["name"] = "warmup"
    _set_gpu(init, "nvidia.com/gpu", "6")
    pod["spec"]["initContainers"] = [init]  # app asks 2, init 6: 6 > 4 allocatable on a100
    assert answer(seven_states, "research/ok").cause == "too-large"


# -- GPU resource names are configurable -------------------------------------------------

def test_a_gpu_limit_of_zero_is_no_gpu_request_and_says_so(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    _set_gpu(pod["spec"]["containers"][0], "nvidia.com/gpu", "0")
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "no-gpu-request"
    assert "name nvidia.com/gpu only with 0, which asks for none" in verdict.action
    assert (verdict.evidence[0].field, verdict.evidence[0].value) == (
        "spec.containers[*].resources.limits", "nvidia.com/gpu: 0")


def test_every_gpu_resource_named_only_at_zero_is_listed(seven_states: Lists) -> None:
    container = find(seven_states["pods"], "full", "research")["spec"]["containers"][0]
    _set_gpu(container, "nvidia.com/gpu", "0")
    container["resources"]["limits"]["amd.com/gpu"] = "0"
    verdict = answer(seven_states, "research/full")
    assert verdict.action == (
        "research/full asks for no GPU: its containers name amd.com/gpu, nvidia.com/gpu only with "
        "0, which asks for none. Add `limits: nvidia.com/gpu: N` to the container that needs it.")
    assert verdict.evidence[0].value == "amd.com/gpu: 0, nvidia.com/gpu: 0"


def test_amd_gpu_request_is_a_gpu_request(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "no-plugin", "research")
    _set_gpu(pod["spec"]["containers"][0], "amd.com/gpu", "1")
    verdict = answer(seven_states, "research/no-plugin")
    assert verdict.cause == "no-gpu-node" and verdict.resource == "amd.com/gpu"


def test_mig_profile_is_a_gpu_request(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "ok", "research")
    _set_gpu(pod["spec"]["containers"][0], "nvidia.com/mig-1g.10gb", "1")
    del pod["spec"]["nodeName"]
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "no-gpu-node" and verdict.resource == "nvidia.com/mig-1g.10gb"


def test_time_sliced_gpus_renamed_by_the_device_plugin_are_a_gpu_request(
        seven_states: Lists) -> None:
    # the NVIDIA device plugin's time-slicing with renameByDefault: nodes and pods say
    # nvidia.com/gpu.shared; gpu-a100-1 offers 8 of them, all free
    node = find(seven_states["nodes"], "gpu-a100-1")
    for section in ("capacity", "allocatable"):
        node["status"][section]["nvidia.com/gpu.shared"] = "8"
    pod = find(seven_states["pods"], "no-plugin", "research")
    _set_gpu(pod["spec"]["containers"][0], "nvidia.com/gpu.shared", "1")
    verdict = answer(seven_states, "research/no-plugin")
    assert verdict.cause == "no-gpu-node" and verdict.resource == "nvidia.com/gpu.shared"
    pod["spec"].pop("nodeSelector")
    assert {n.name: n.outcome for n in answer(seven_states, "research/no-plugin").nodes}[
        "gpu-a100-1"] == "fit"


def test_configured_resource_names(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "no-plugin", "research")
    _set_gpu(pod["spec"]["containers"][0], "example.com/accel", "1")
    assert answer(seven_states, "research/no-plugin").cause == "no-gpu-request"
    config = TriageConfig(gpu_resources=("example.com/accel",))
    assert answer(seven_states, "research/no-plugin", config).cause == "no-gpu-node"


def test_hami_memory_only_request_is_a_gpu_request(hami_sharing: Lists) -> None:
    pod = find(hami_sharing["pods"], "fits-small", "hami")
    for section in ("limits", "requests"):
        del pod["spec"]["containers"][0]["resources"][section]["nvidia.com/gpu"]
    assert answer(hami_sharing, "hami/fits-small").cause != "no-gpu-request"


# -- the Node object, not the hardware ---------------------------------------------------

def test_gfd_labels_do_not_make_a_gpu_node(seven_states: Lists) -> None:
    node = find(seven_states["nodes"], "gpu-t4-noplugin")
    assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == "1"
    assert answer(seven_states, "research/no-plugin").cause == "no-gpu-node"


def test_allocatable_not_hardware_count_decides(seven_states: Lists) -> None:
    node = find(seven_states["nodes"], "gpu-a100-1")
    node["metadata"]["labels"]["nvidia.com/gpu.count"] = "8"  # hardware says 8, Node says 4
    pod = find(seven_states["pods"], "big", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}
    assert answer(seven_states, "research/big").cause == "too-large"


# -- Dynamic Resource Allocation --------------------------------------------------------

def test_dra_pod_is_not_no_gpu_request(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "no-request", "research")
    del pod["spec"]["nodeName"]
    pod["status"] = {"phase": "Pending"}
    pod["spec"]["resourceClaims"] = [{"name": "gpu",
                                      "resourceClaimTemplateName": "single-gpu"}]
    verdict = answer(seven_states, "research/no-request")
    assert verdict.cause == "other-constraint"
    # The template does not exist in this cluster: the claim is named, not guessed about.
    assert "ResourceClaimTemplate research/single-gpu does not exist" in verdict.action


# -- events expire: causes come from object state ---------------------------------------

EXPECTED_SEVEN = {
    "ml/finetune": "quota-exceeded", "infer/vllm": "runtimeclass-missing",
    "research/no-request": "no-gpu-request", "research/wrong-pool": "selector-mismatch",
    "research/tainted": "taint-untolerated", "research/no-plugin": "no-gpu-node",
    "research/broken-node": "allocatable-zero", "research/full": "exhausted",
    "research/big": "too-large", "research/ok": "scheduled", "research/typo": "pod-not-found",
}


@pytest.mark.parametrize("ref", sorted(EXPECTED_SEVEN))
def test_causes_hold_after_events_expire(seven_states: Lists, ref: str) -> None:
    seven_states["events"] = []
    for workload in seven_states["workloads"]:
        workload.get("status", {}).pop("conditions", None)  # and without ReplicaFailure
    assert answer(seven_states, ref).cause == EXPECTED_SEVEN[ref]


def test_quota_from_event_alone(seven_states: Lists) -> None:
    seven_states["resourcequotas"] = []  # quota since deleted; the rejection is on record
    verdict = answer(seven_states, "ml/finetune")
    assert verdict.cause == "quota-exceeded" and "gpu-quota" in verdict.action


def test_scheduler_events_sorted_by_event_time(seven_states: Lists) -> None:
    # Scheduler events have only eventTime; sorting on lastTimestamp alone would lose them.
    for event in seven_states["events"]:
        if event["involvedObject"]["name"] == "full":
            assert event["lastTimestamp"] is None and event["eventTime"]
    assert answer(seven_states, "research/full").scheduler_message.startswith("0/6 nodes")


def _gated(lists: Lists, gate: str, *, condition: bool) -> None:
    """research/full made to fit (its selector dropped) and gated, as the API server stores a
    pod created with spec.schedulingGates; ``condition``: with the SchedulingGated condition
    the API server adds on create."""
    pod = find(lists["pods"], "full", "research")
    pod["spec"].pop("nodeSelector")
    pod["spec"]["schedulingGates"] = [{"name": gate}]
    pod["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
         "message": "Scheduling is blocked due to non-empty scheduling gates",
         "lastProbeTime": None, "lastTransitionTime": "2026-11-30T12:50:44Z"}]
        if condition else []}
    lists["events"] = [e for e in lists["events"] if e["involvedObject"]["name"] != "full"]


@pytest.mark.parametrize("condition", [True, False], ids=["with-condition", "spec-only"])
def test_a_pod_kueue_gates_is_queued_before_the_funnel(seven_states: Lists,
                                                       condition: bool) -> None:
    # Kueue may still set its nodeSelector at admission: the funnel has nothing to judge yet
    _gated(seven_states, "kueue.x-k8s.io/admission", condition=condition)
    find(seven_states["pods"], "full", "research")["spec"]["nodeSelector"] = {"pool": "h200"}
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "queued"
    assert "gpuwhy sees no Kueue objects" in verdict.action
    assert ("spec.schedulingGates", "kueue.x-k8s.io/admission") in [
        (e.field, e.value) for e in verdict.evidence]


def test_a_gate_nothing_known_manages_is_named_with_who_removes_it(seven_states: Lists) -> None:
    _gated(seven_states, "example.com/wait-for-data", condition=True)
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "other-constraint"
    assert "example.com/wait-for-data" in verdict.action and "Kueue" not in verdict.action
    assert "Whoever added it removes it" in verdict.action


def test_an_ungated_pod_no_scheduler_picked_up_is_scheduler_unavailable(
        seven_states: Lists) -> None:
    # Kueue removed its gate; the API server's SchedulingGated condition stays until a
    # scheduler picks the pod up, and the scheduler it names is not running
    _gated(seven_states, "kueue.x-k8s.io/admission", condition=True)
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"].pop("schedulingGates")
    pod["spec"]["schedulerName"] = "volcano"
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "scheduler-unavailable" and "volcano" in verdict.action
    assert verdict.scheduler_message is None  # the API server's words, not a scheduler's


def test_a_gated_pod_quotes_the_api_servers_condition_not_a_scheduler(
        seven_states: Lists) -> None:
    _gated(seven_states, "example.com/wait-for-data", condition=True)
    verdict = answer(seven_states, "research/full")
    assert verdict.scheduler_message is None
    assert [(e.field, e.value) for e in verdict.evidence[1:]] == [
        ("PodScheduled condition (API server)",
         "SchedulingGated: Scheduling is blocked due to non-empty scheduling gates")]


def test_a_gated_pod_still_goes_through_the_funnel_first(seven_states: Lists) -> None:
    _gated(seven_states, "example.com/wait-for-data", condition=True)
    find(seven_states["pods"], "full", "research")["spec"]["nodeSelector"] = {"pool": "h200"}
    assert answer(seven_states, "research/full").cause == "selector-mismatch"


def test_a_taint_for_a_failing_node_condition_asks_for_repair_not_a_toleration(
        seven_states: Lists) -> None:
    node = find(seven_states["nodes"], "gpu-a100-1")  # as the node lifecycle controller leaves it
    node["spec"]["taints"] = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule",
         "timeAdded": "2026-11-30T12:40:00Z"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
         "timeAdded": "2026-11-30T12:40:05Z"}]
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "taint-untolerated"
    assert "Repair gpu-a100-1: the node lifecycle controller put" in verdict.action
    assert "add a toleration" not in verdict.action


def test_a_cordon_after_other_taints_is_still_told_apart(seven_states: Lists) -> None:
    # kubectl cordon on a tainted node: the unschedulable taint comes after the others
    node = find(seven_states["nodes"], "gpu-a100-1")
    node["spec"]["unschedulable"] = True
    node["spec"]["taints"] = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    find(seven_states["pods"], "full", "research")["spec"]["nodeSelector"] = {"pool": "a100"}
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "taint-untolerated"
    assert "Repair gpu-a100-1: the node lifecycle controller put" in verdict.action
    assert "uncordon gpu-a100-1 once it is healthy" in verdict.action


# -- the order of the checks ----------------------------------------------------------------

def test_selector_checked_before_taints(seven_states: Lists) -> None:
    verdict = answer(seven_states, "research/wrong-pool")
    assert verdict.cause == "selector-mismatch"
    assert "taint" not in verdict.action.lower()


def test_taint_advice_never_says_remove(seven_states: Lists) -> None:
    verdict = answer(seven_states, "research/tainted")
    assert "toleration" in verdict.action
    assert "remove taints" not in verdict.action.replace("Don't remove taints", "")


def test_cordon_counts_as_a_taint(seven_states: Lists) -> None:
    find(seven_states["nodes"], "gpu-a10-full")["spec"]["unschedulable"] = True
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "taint-untolerated"
    assert "uncordon gpu-a10-full" in verdict.action


def test_prefer_no_schedule_does_not_block(seven_states: Lists) -> None:
    node = find(seven_states["nodes"], "gpu-h100-reserved")
    node["spec"]["taints"][0]["effect"] = "PreferNoSchedule"
    assert answer(seven_states, "research/tainted").cause != "taint-untolerated"


@pytest.mark.parametrize("toleration", [
    {"key": "dedicated", "operator": "Equal", "value": "llm-team", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
    {"operator": "Exists"},
    {"key": "dedicated", "value": "llm-team"},
])
def test_tolerations_that_match(seven_states: Lists, toleration: dict[str, str]) -> None:
    pod = find(seven_states["pods"], "tainted", "research")
    pod["spec"]["tolerations"].append(toleration)
    assert answer(seven_states, "research/tainted").cause != "taint-untolerated"


def test_toleration_with_wrong_value_does_not_match(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "tainted", "research")
    pod["spec"]["tolerations"].append({"key": "dedicated", "operator": "Equal",
                                       "value": "other-team", "effect": "NoSchedule"})
    assert answer(seven_states, "research/tainted").cause == "taint-untolerated"


@pytest.mark.parametrize(("expression", "cause"), [
    ({"key": "pool", "operator": "In", "values": ["h100"]}, "taint-untolerated"),
    ({"key": "pool", "operator": "In", "values": ["h200"]}, "selector-mismatch"),
    ({"key": "pool", "operator": "NotIn", "values": ["a100", "a10-full", "cpu", "h100",
                                                     "t4-noplugin", "v100-broken"]},
     "selector-mismatch"),
    ({"key": "pool", "operator": "DoesNotExist"}, "selector-mismatch"),
    ({"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["4"]}, "taint-untolerated"),
    ({"key": "nvidia.com/gpu.count", "operator": "Lt", "values": ["1"]}, "selector-mismatch"),
    ({"key": "nvidia.com/gpu.product", "operator": "Exists"}, "too-large"),
])
def test_required_node_affinity_operators(seven_states: Lists, expression: dict[str, Any],
                                          cause: str) -> None:
    pod = find(seven_states["pods"], "big", "research")
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                {"nodeSelectorTerms": [
                                                    {"matchExpressions": [expression]}]}}}
    assert answer(seven_states, "research/big").cause == cause


def test_match_fields_metadata_name(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "big", "research")
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                {"nodeSelectorTerms": [{"matchFields": [
                                                    {"key": "metadata.name", "operator": "In",
                                                     "values": ["gpu-a100-1"]}]}]}}}
    verdict = answer(seven_states, "research/big")
    assert verdict.cause == "too-large"
    assert [n.name for n in verdict.nodes if n.outcome == "too-large"] == ["gpu-a100-1"]


def test_node_affinity_terms_are_ored(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "wrong-pool", "research")
    del pod["spec"]["nodeSelector"]
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["h200"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a100"]}]}]}}}
    assert answer(seven_states, "research/wrong-pool").cause != "selector-mismatch"


def test_a_pin_to_a_deleted_node_says_so_instead_of_asking_for_a_label(
        seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "wrong-pool", "research")
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a100-9"}  # removed node
    verdict = answer(seven_states, "research/wrong-pool")
    assert verdict.cause == "selector-mismatch"
    assert verdict.action.startswith(
        "nodeSelector kubernetes.io/hostname=gpu-a100-9 pins the pod to node gpu-a100-9, and no "
        "node of that name is in the cluster")
    assert "kubelet's own label" in verdict.action and "label a node" not in verdict.action


def test_a_pin_to_a_node_that_exists_is_an_ordinary_mismatch(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "wrong-pool", "research")
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a100-1", "pool": "h200"}
    verdict = answer(seven_states, "research/wrong-pool")
    assert verdict.cause == "selector-mismatch" and "pins the pod" not in verdict.action
    assert "Values present: " in verdict.action


def test_required_affinity_names_what_fails_on_a_node(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "wrong-pool", "research")
    del pod["spec"]["nodeSelector"]
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "pool", "operator": "In", "values": ["h200"]}]}]}}}
    verdict = answer(seven_states, "research/wrong-pool")
    assert verdict.action.startswith("required node affinity matches none of the 6 nodes. On ")
    assert ": unmatched pool In (h200)." in verdict.action


# -- exhausted vs too-large, and what fits ------------------------------------------------

def test_too_large_checked_before_exhausted(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    _set_gpu(pod["spec"]["containers"][0], "nvidia.com/gpu", "3")  # a10-full has 2 in all
    assert answer(seven_states, "research/full").cause == "too-large"


def test_fitting_pod_with_scheduler_complaint_is_other_constraint(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}  # a100 has 2 free; events say cpu
    for event in seven_states["events"]:
        if event["involvedObject"]["name"] == "full":
            event["message"] = "0/6 nodes are available: 1 Insufficient cpu, 5 node(s) didn't " \
                               "match Pod's node affinity/selector."
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "other-constraint" and "Insufficient cpu" in verdict.action


def test_cpu_shortage_from_state_is_other_constraint(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1000"
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "other-constraint"
    assert {n.name: n.detail for n in verdict.nodes}["gpu-a100-1"] == "Insufficient cpu"


def test_pod_level_cpu_request_decides_other_constraint(seven_states: Lists) -> None:
    # the containers ask little cpu, the pod as a whole (spec.resources) asks too much
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}
    pod["spec"]["resources"] = {"requests": {"cpu": "1000"}, "limits": {"cpu": "1000"}}
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "other-constraint"
    assert {n.name: n.detail for n in verdict.nodes}["gpu-a100-1"] == "Insufficient cpu"


def test_fitting_pod_no_scheduler_words_is_scheduler_unavailable(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}
    pod["spec"]["schedulerName"] = "volcano"
    pod["status"] = {"phase": "Pending"}
    seven_states["events"] = [e for e in seven_states["events"]
                              if e["involvedObject"]["name"] != "full"]
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "scheduler-unavailable" and "volcano" in verdict.action


def _preempting(lists: Lists, nominated: str) -> None:
    """research/full nominated for a node, as kube-scheduler leaves a preemptor; team-b/train-b
    (on gpu-a10-full) evicted and still terminating."""
    find(lists["pods"], "full", "research")["status"]["nominatedNodeName"] = nominated
    victim = find(lists["pods"], "train-b", "team-b")
    victim["metadata"].update(deletionTimestamp="2026-11-30T12:55:00Z",
                              deletionGracePeriodSeconds=30)


def test_a_preemption_in_progress_names_the_nominated_node_and_who_is_leaving(
        seven_states: Lists) -> None:
    _preempting(seven_states, "gpu-a10-full")
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "exhausted"  # the victim holds its GPUs until it has stopped
    assert "team-b/train-b (terminating)" in verdict.action
    assert ("nominated gpu-a10-full for it (status.nominatedNodeName)" in verdict.action
            and "when team-b/train-b has gone" in verdict.action)
    assert ("status.nominatedNodeName", "gpu-a10-full") in [(e.field, e.value)
                                                            for e in verdict.evidence]


def test_a_nomination_for_a_node_the_pod_cannot_use_is_not_named(seven_states: Lists) -> None:
    _preempting(seven_states, "gpu-a100-1")  # outside its nodeSelector: a stale nomination
    verdict = answer(seven_states, "research/full")
    assert verdict.cause == "exhausted" and "nominated" not in verdict.action


# -- bound, but the node fails it -----------------------------------------------------------

def _bind_failing(lists: Lists, reason: str, message: str) -> None:
    pod = find(lists["pods"], "ok", "research")
    pod["status"] = {"phase": "Pending"}
    lists["events"].append({
        "apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": reason,
        "message": message, "count": 3, "eventTime": None,
        "firstTimestamp": "2026-11-30T12:51:00Z", "lastTimestamp": "2026-11-30T12:52:00Z",
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "ok",
                           "namespace": "research", "uid": pod["metadata"]["uid"]},
        "metadata": {"name": "ok.18ecd3a2ffffffff", "namespace": "research",
                     "creationTimestamp": "2026-11-30T12:51:00Z"},
        "reportingComponent": "kubelet", "reportingInstance": "gpu-a100-1",
        "source": {"component": "kubelet", "host": "gpu-a100-1"}})


def test_sandbox_runtime_error_is_node_runtime_error(seven_states: Lists) -> None:
    _bind_failing(seven_states, "FailedCreatePodSandBox",
                  'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get '
                  'sandbox runtime: no runtime for "nvidia" is configured')
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "node-runtime-error" and "gpu-a100-1" in verdict.action


def test_a_sandbox_the_network_plugin_fails_is_node_runtime_error(seven_states: Lists) -> None:
    _bind_failing(seven_states, "FailedCreatePodSandBox",
                  'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup '
                  'network for sandbox "9c1e": plugin type="calico" failed (add): error getting '
                  "ClusterInformation: connection is unauthorized")
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "node-runtime-error"
    assert "cannot create the pod's sandbox (its network plugin" in verdict.action


def test_a_pending_bound_pod_quotes_the_kubelets_warning(seven_states: Lists) -> None:
    _bind_failing(seven_states, "FailedMount", 'MountVolume.SetUp failed for volume "data" : '
                  'configmap "train-config" not found')
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "scheduled"
    assert ('but the kubelet says FailedMount: MountVolume.SetUp failed for volume "data" : '
            'configmap "train-config" not found. Fix what it names.') in verdict.action
    assert verdict.evidence[-1].field == "event FailedMount"


def test_unexpected_admission_error_is_node_runtime_error(seven_states: Lists) -> None:
    _bind_failing(seven_states, "UnexpectedAdmissionError",
                  "Allocate failed due to requested number of devices unavailable for "
                  "nvidia.com/gpu. Requested: 2, Available: 0, which is unexpected")
    assert answer(seven_states, "research/ok").cause == "node-runtime-error"


def test_a_pod_the_kubelet_rejected_for_resources_is_node_runtime_error(
        seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "ok", "research")
    pod["status"] = {"phase": "Failed", "reason": "OutOfnvidia.com/gpu",
                     "message": "Pod was rejected: Node didn't have enough resource: "
                                "nvidia.com/gpu, requested: 1, used: 2, capacity: 2"}
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "node-runtime-error"
    assert "the kubelet on gpu-a100-1 rejected it" in verdict.action
    assert "OutOfnvidia.com/gpu: Pod was rejected" in verdict.evidence[0].value


def test_runtime_handler_missing_on_node_from_state(seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "no-request", "research")
    pod["spec"]["runtimeClassName"] = "runc-gpu"  # handler nvidia
    pod["spec"]["nodeName"] = "cpu-1"
    pod["status"] = {"phase": "Pending"}
    _set_gpu(pod["spec"]["containers"][0], "nvidia.com/gpu", "1")
    verdict = answer(seven_states, "research/no-request")
    assert verdict.cause == "node-runtime-error" and "nvidia" in verdict.action


def test_running_pod_with_old_sandbox_event_is_scheduled(seven_states: Lists) -> None:
    _bind_failing(seven_states, "FailedCreatePodSandBox", 'no runtime for "nvidia" is configured')
    find(seven_states["pods"], "ok", "research")["status"]["phase"] = "Running"
    assert answer(seven_states, "research/ok").cause == "scheduled"


def test_events_of_an_earlier_pod_of_the_same_name_are_not_this_pods(seven_states: Lists) -> None:
    # research/ok deleted and made again (a StatefulSet's pod, a re-applied manifest): the
    # sandbox error from before is about the old uid, and the new pod is bound and fine.
    _bind_failing(seven_states, "FailedCreatePodSandBox",
                  'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get '
                  'sandbox runtime: no runtime for "nvidia" is configured')
    seven_states["events"][-1]["involvedObject"]["uid"] = "uid-of-the-pod-before"
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "scheduled"
    assert "no runtime" not in " ".join(e.value for e in verdict.evidence)


def test_an_earlier_pods_scheduler_events_do_not_say_a_scheduler_saw_this_one(
        seven_states: Lists) -> None:
    pod = find(seven_states["pods"], "full", "research")
    pod["spec"]["nodeSelector"] = {"pool": "a100"}  # fits GPU-wise
    pod["spec"]["schedulerName"] = "volcano"
    pod["status"] = {"phase": "Pending"}
    for event in seven_states["events"]:
        if event["involvedObject"]["name"] == "full":
            event["involvedObject"]["uid"] = "uid-of-the-pod-before"
    assert answer(seven_states, "research/full").cause == "scheduler-unavailable"


def test_a_pod_bound_to_a_deleted_node_is_a_node_side_error(seven_states: Lists) -> None:
    seven_states["nodes"].remove(find(seven_states["nodes"], "gpu-a100-1"))  # research/ok's
    find(seven_states["pods"], "ok", "research")["status"] = {"phase": "Pending"}
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "node-runtime-error"
    assert "no Node gpu-a100-1 exists any more" in verdict.action
    # a bare pod: nothing makes it again once deleted
    assert "Delete the pod and create it again (it has no controller" in verdict.action


def test_a_dump_without_nodes_does_not_call_every_node_deleted(seven_states: Lists) -> None:
    seven_states["nodes"] = []
    find(seven_states["pods"], "ok", "research")["status"] = {"phase": "Pending"}
    assert answer(seven_states, "research/ok").cause == "scheduled"


def _kubelet_gone(lists: Lists) -> None:
    """gpu-a100-1 as the node lifecycle controller leaves a node whose kubelet stopped."""
    node = find(lists["nodes"], "gpu-a100-1")
    for condition in node["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition.update(status="Unknown", reason="NodeStatusUnknown",
                             message="Kubelet stopped posting node status.")


def test_a_pending_pod_bound_to_a_node_that_is_not_ready_is_a_node_side_error(
        seven_states: Lists) -> None:
    _kubelet_gone(seven_states)
    find(seven_states["pods"], "ok", "research")["status"] = {"phase": "Pending"}
    verdict = answer(seven_states, "research/ok")
    assert verdict.cause == "node-runtime-error"
    assert ("gpu-a100-1 is not Ready (Unknown: NodeStatusUnknown, Kubelet stopped posting node "
            "status.)") in verdict.action


def test_a_running_pod_on_a_node_that_is_not_ready_is_still_scheduled(seven_states: Lists) -> None:
    _kubelet_gone(seven_states)
    find(seven_states["pods"], "ok", "research")["status"]["phase"] = "Running"
    assert answer(seven_states, "research/ok").cause == "scheduled"


def test_a_workload_refused_by_another_admission_policy_quotes_it(seven_states: Lists) -> None:
    # infer/vllm's pods refused by PodSecurity, not for their RuntimeClass (now unset)
    refusal = ('pods "vllm-79f7bb9f55-" is forbidden: violates PodSecurity "restricted:latest": '
               'allowPrivilegeEscalation != false (container "vllm" must set '
               "securityContext.allowPrivilegeEscalation=false)")
    for event in seven_states["events"]:
        if event["reason"] == "FailedCreate" and event["involvedObject"]["name"].startswith(
                "vllm"):
            event["message"] = f"Error creating: {refusal}"
    for workload in seven_states["workloads"]:
        if workload["metadata"]["name"].startswith("vllm"):
            workload["spec"]["template"]["spec"].pop("runtimeClassName", None)
            for condition in workload.get("status", {}).get("conditions") or []:
                if condition["type"] == "ReplicaFailure":
                    condition["message"] = refusal
    verdict = answer(seven_states, "infer/vllm")
    assert verdict.cause == "pod-not-found"
    assert f"refuses them at creation: {refusal}." in verdict.action
    assert "no admission error" not in verdict.action


# -- workloads -----------------------------------------------------------------------------

def _owned_copy(lists: Lists, source: str, name: str, owner: dict[str, Any]) -> None:
    pod = copy.deepcopy(find(lists["pods"], source, "research"))
    pod["metadata"].update(name=name, namespace="infer", uid=f"uid-{name}",
                           ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": owner["metadata"]["name"],
                                             "uid": owner["metadata"]["uid"],
                                             "controller": True}])
    lists["pods"].append(pod)


def test_workload_answers_for_its_worst_pod(seven_states: Lists) -> None:
    replicaset = find(seven_states["workloads"], "vllm-79f7bb9f55", "infer")
    replicaset["status"].pop("conditions")
    find(seven_states["workloads"], "vllm", "infer")["status"].pop("conditions", None)
    seven_states["events"] = [e for e in seven_states["events"]
                              if e["involvedObject"]["namespace"] != "infer"]
    find(seven_states["workloads"], "vllm", "infer")["spec"]["template"]["spec"][
        "runtimeClassName"] = "runc-gpu"
    _owned_copy(seven_states, "ok", "vllm-79f7bb9f55-aaaaa", replicaset)
    _owned_copy(seven_states, "full", "vllm-79f7bb9f55-bbbbb", replicaset)
    _owned_copy(seven_states, "full", "vllm-79f7bb9f55-ccccc", replicaset)
    verdict = answer(seven_states, "infer/vllm")
    assert verdict.kind == "Deployment" and verdict.cause == "exhausted"
    assert verdict.pods_total == 3 and len(verdict.pods) == 2


def test_generated_pod_name_from_event_resolves_to_the_job(seven_states: Lists) -> None:
    verdict = answer(seven_states, "ml/finetune-2dtfx")
    assert verdict.cause == "quota-exceeded" and verdict.kind == "Job"


def test_runtimeclass_from_state_when_events_expired(seven_states: Lists) -> None:
    seven_states["events"] = []
    for workload in seven_states["workloads"]:
        workload["status"].pop("conditions", None)
    verdict = answer(seven_states, "infer/vllm")
    assert verdict.cause == "runtimeclass-missing" and "runc-gpu" in verdict.action


@pytest.mark.parametrize("scenario", SCENARIO_NAMES)
def test_every_pod_of_every_scenario_gets_an_answer(scenario: str) -> None:
    snapshot = Snapshot.from_dir(SCENARIOS / scenario)
    lists = load_lists(scenario)
    for pod in lists["pods"]:
        meta = pod["metadata"]
        verdict = triage(snapshot, PodRef(meta["namespace"], meta["name"]))
        assert verdict.cause and verdict.action


def test_stale_gpu_message_with_gpus_now_free(seven_states: Lists) -> None:
    seven_states["pods"].remove(find(seven_states["pods"], "train-b", "team-b"))
    verdict = answer(seven_states, "research/full")  # its message still says Insufficient GPU
    assert verdict.cause == "other-constraint"
    assert "cluster has changed since" in verdict.action
    assert "something else" not in verdict.action


def test_answer_does_not_depend_on_list_order(seven_states: Lists) -> None:
    forward = answer(seven_states, "research/big")
    seven_states["nodes"].reverse()
    seven_states["events"].reverse()
    seven_states["pods"].reverse()
    assert answer(seven_states, "research/big") == forward


def test_suspended_job_says_so(seven_states: Lists) -> None:
    seven_states["events"] = []
    seven_states["resourcequotas"] = []
    find(seven_states["workloads"], "finetune", "ml")["spec"]["suspend"] = True
    verdict = answer(seven_states, "ml/finetune")
    assert verdict.cause == "pod-not-found" and "is suspended" in verdict.action
    assert verdict.evidence[0].field == "spec.suspend"


def test_deployment_scaled_to_zero_says_so(seven_states: Lists) -> None:
    seven_states["events"] = []
    vllm = find(seven_states["workloads"], "vllm", "infer")
    vllm["spec"]["replicas"] = 0
    vllm["spec"]["template"]["spec"]["runtimeClassName"] = "runc-gpu"
    for workload in seven_states["workloads"]:
        workload["status"].pop("conditions", None)
    verdict = answer(seven_states, "infer/vllm")
    assert verdict.cause == "pod-not-found" and "scaled to 0" in verdict.action


def test_suspended_job_with_a_full_quota_is_not_rejected_yet(seven_states: Lists) -> None:
    seven_states["events"] = []  # the quota is still full, but nothing tries to create pods
    find(seven_states["workloads"], "finetune", "ml")["spec"]["suspend"] = True
    assert answer(seven_states, "ml/finetune").cause == "pod-not-found"


# -- a StatefulSet's ordinal pod that was never created -------------------------------------

ADMISSION_REFS = SCENARIOS.parent / "scenarios-extra" / "admission-refs"


def test_a_never_created_ordinal_pod_is_answered_from_its_statefulset() -> None:
    # dbs/db-0 was refused by quota dbs/sts-gpu; with its FailedCreate expired only the
    # StatefulSet (replicas 1) and the quota remain.
    recorded = Snapshot.from_dir(ADMISSION_REFS)
    expired = Snapshot(**{**{a: getattr(recorded, a) for a in (
        "nodes", "pods", "resourcequotas", "runtimeclasses", "workloads", "dra")}, "events": []})
    verdict = triage(expired, parse_ref("dbs/db-0"))
    assert (verdict.cause, verdict.kind) == ("quota-exceeded", "StatefulSet")
    assert "sts-gpu" in verdict.action
    # db-1 is beyond its replicas: no such pod is wanted, so nothing answers for it.
    assert triage(expired, parse_ref("dbs/db-1")).cause == "pod-not-found"


# -- HAMi's device-unfit: the action follows the codes ----------------------------------------

@pytest.mark.parametrize(("ref", "advice"), [
    ("hami/needs-40g", "Lower the memory / cores request, or wait for the holders to finish"),
    ("hami/wants-h100", "Change the card type filter (nvidia.com/use-gputype / nouse-gputype)"),
    ("hami/too-many-cards", "Ask for fewer cards per pod (nvidia.com/gpu) than a node has."),
])
def test_hami_device_unfit_asks_what_its_codes_call_for(hami_sharing: Lists, ref: str,
                                                         advice: str) -> None:
    verdict = answer(hami_sharing, ref)
    assert verdict.cause == "device-unfit" and advice in verdict.action


@pytest.mark.parametrize(("reasons", "advice"), [
    (["1/4 CardNotHealth, 3/4 CardInsufficientMemory"], "Lower the memory"),
    (["3/4 CardNotHealth, 1/4 CardInsufficientMemory"], "Repair the unhealthy cards"),
    (["2/4 CardCordoned, 2/4 CardTypeMismatch"], "Uncordon the cards"),  # a tie: HAMi's order
    (["NodeInsufficientDevice", "NodeInsufficientDevice", "1/2 NumaNotFit"], "fewer cards"),
    (["2/2 CardUuidMismatch"], "nvidia.com/use-gpuuuid"),
    (["node unregistered"], None),
])
def test_hami_advice_weighs_each_code_by_the_cards_it_names(reasons: list[str],
                                                           advice: str | None) -> None:
    from triage.classify.checks.hami import _advice

    got = _advice([(None, why) for why in reasons])  # type: ignore[misc]
    assert (got is None) if advice is None else (got is not None and advice in got)
