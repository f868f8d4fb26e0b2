"""DeviceTaintRules: a rule's taint counts as if the driver had put it on the devices it
selects, from a dump (dra.json), the live reader and the watch cache alike."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from bot.clusters.sources import LiveSource
from scoring.dra.taint_rules import with_rule_taints
from tests.conftest import SCENARIOS, find, load_lists
from tests.kubeapi import FakeKubeAPI
from tests.triage.cluster.conftest import eventually, ready_cache, ref_of
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

Lists = dict[str, list[dict[str, Any]]]
RULES_PATH = "/apis/resource.k8s.io/v1beta2/devicetaintrules"


def _rule(name: str, selector: dict[str, Any] | None, effect: str = "NoSchedule"
          ) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": {"key": "example.com/maintenance", "value": "true",
                                      "effect": effect}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "5000"},
            "spec": spec}


def _freed() -> Lists:
    """fa-none fits dra-excl-1 once embed-batch and its claim are gone."""
    lists = load_lists("gang-dra-basics")
    lists["dra"] = [o for o in lists["dra"] if o["metadata"]["name"] != "embed-batch-gpu-txh2n"]
    lists["pods"].remove(find(lists["pods"], "embed-batch", "infer"))
    return lists


def _outcome(lists: Lists, node: str) -> str:
    verdict = triage(Snapshot(**lists), parse_ref("infer/fa-none"))
    return {n.name: n.outcome for n in verdict.nodes}[node]


def test_a_rule_tainting_a_pool_keeps_the_allocator_off_its_devices() -> None:
    lists = _freed()
    assert _outcome(lists, "dra-excl-1") == "fit"
    lists["dra"].append(_rule("excl-maintenance", {"driver": "gpu.nvidia.com",
                                                   "pool": "dra-excl-1"}))
    verdict = triage(Snapshot(**lists), parse_ref("infer/fa-none"))
    assert verdict.cause == "device-unfit"
    assert "example.com/maintenance=true:NoSchedule (DeviceTaintRule excl-maintenance)" in \
        verdict.action


def test_a_tolerated_rule_taint_does_not_count() -> None:
    lists = _freed()
    lists["dra"].append(_rule("excl-maintenance", {"pool": "dra-excl-1"}))
    claim = next(o for o in lists["dra"] if o["metadata"]["name"] == "fa-none-gpu-7bztn")
    for alternative in claim["spec"]["devices"]["requests"][0]["firstAvailable"]:
        alternative["tolerations"] = [{"key": "example.com/maintenance", "operator": "Exists"}]
    assert _outcome(lists, "dra-excl-1") == "fit"


def test_which_devices_a_rule_selects() -> None:
    slices = [o for o in load_lists("gang-dra-basics")["dra"] if o["kind"] == "ResourceSlice"]
    before = copy.deepcopy(slices)

    def tainted(rule: dict[str, Any]) -> set[tuple[str, str]]:
        return {(s["spec"]["pool"]["name"], d["name"]) for s in with_rule_taints(slices, [rule])
                for d in s["spec"]["devices"] if d.get("taints")}

    assert tainted(_rule("none", None)) == set()  # no selector: no device
    assert len(tainted(_rule("all", {}))) == 6  # empty selector: every device
    assert tainted(_rule("one", {"pool": "dra-l4-1", "device": "gpu-1"})) == {
        ("dra-l4-1", "gpu-1")}
    assert tainted(_rule("other-driver", {"driver": "tpu.example.com"})) == set()
    assert slices == before  # the slices read are never changed


def test_rules_are_read_live_and_followed_by_the_cache(tmp_path: Path) -> None:
    with FakeKubeAPI(SCENARIOS / "gang-dra-basics", bookmark_interval=0.05) as api:
        api.delete("ResourceClaim", "infer", "embed-batch-gpu-txh2n")
        api.delete("Pod", "infer", "embed-batch")
        with ready_cache(api, tmp_path) as cache:
            live = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
            assert live.triage(ref_of("infer/fa-none")).cause != "device-unfit"
            api.apply(_rule("excl-maintenance", {"pool": "dra-excl-1"}))
            before = api.mark()
            assert live.triage(ref_of("infer/fa-none")).cause == "device-unfit"
            assert RULES_PATH in {r.path for r in api.requests[before:]}
            eventually(lambda: cache.triage(ref_of("infer/fa-none")).cause == "device-unfit")


def test_a_cluster_not_serving_rules_is_read_without_them(tmp_path: Path) -> None:
    with FakeKubeAPI(SCENARIOS / "gang-dra-basics",
                     unserved=["resource.k8s.io/v1beta2"]) as api:
        live = LiveSource(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("infer/fa-none"))
        assert verdict.cause == "exhausted" and verdict.error is None
