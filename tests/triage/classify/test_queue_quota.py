"""A ClusterQueue's quota against what a workload asks (triage/classify/checks/queue_quota.py):
``preview_admission`` (what ``gpuwhy check`` and ``/gpuwhy where`` say of a new workload) on
kueue-basics' recorded Kueue objects, and ``_ordinal`` (Kueue's own place in line), each
sentence worked out by hand from the objects."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import load_lists
from tests.paths import FIXTURES
from triage.classify import triage
from triage.classify.checks.queue_quota import _ordinal, preview_admission
from triage.queues import QueueIndex
from triage.refs import parse_ref
from triage.snapshot import Snapshot

GPU = "nvidia.com/gpu"


def _recorded() -> list[dict[str, Any]]:
    path = FIXTURES / "scenarios" / "kueue-basics" / "queues.json"
    items: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["items"]
    return items


def _preview(queue: str, need: int, namespace: str = "team-b",
             objects: list[dict[str, Any]] | None = None) -> tuple[str | None, str]:
    index = QueueIndex(_recorded() if objects is None else objects)
    return preview_admission(index, "Job team-b x", namespace, queue, GPU, Decimal(need))


def test_without_kueue_objects_nothing_would_admit_it() -> None:
    assert _preview("team-b-lq", 1, objects=[]) == (
        None, "gpuwhy sees no Kueue objects in this cluster (kueue.x-k8s.io not served or not "
              "readable): nothing would admit it.")


def test_a_missing_local_queue_names_the_workload_and_the_existing_one() -> None:
    assert _preview("team-b-queue", 1) == (
        None, "Job team-b x waits forever as things are: it names LocalQueue 'team-b-queue' in "
              "label kueue.x-k8s.io/queue-name, which does not exist in namespace team-b, so "
              "Kueue admits nothing of it; the namespace has LocalQueue team-b-lq. Fix the "
              "label (kueue.x-k8s.io/queue-name: team-b-lq) and recreate it.")


def test_an_inactive_cluster_queue_names_the_workload() -> None:
    assert _preview("team-c-lq", 1, namespace="team-c") == (
        None, "Job team-b x waits in LocalQueue team-c/team-c-lq, but ClusterQueue team-c-cq "
              "is inactive: it names ResourceFlavor h200, which does not exist (existing: "
              "a100, h100). Nothing in it is admitted until that is fixed. Create the "
              "ResourceFlavor (or fix the name in the ClusterQueue).")


def test_as_much_as_the_queue_can_ever_give_is_not_forever() -> None:
    # team-a-cq: a100 nominal 8 + borrowingLimit 0 = 8, all 8 reserved now
    assert _preview("team-a-lq", 8, namespace="team-a") == (
        None, f"flavor a100 has 0 of 8 {GPU} free; it needs 8.")
    assert _preview("team-a-lq", 9, namespace="team-a") == (
        None, f"Job team-b x needs 9 {GPU}, more than ClusterQueue team-a-cq can ever give: "
              "at most 8 in flavor a100 (nominal 8 + borrowingLimit 0). It would wait forever.")


def test_more_than_the_cohort_can_lend_names_the_cohort() -> None:
    # team-b-cq: h100 nominal 16, no borrowingLimit; no other queue of cohort research has h100
    assert _preview("team-b-lq", 17) == (
        None, f"Job team-b x needs 17 {GPU}, more than ClusterQueue team-b-cq can ever give: "
              "at most 16 in flavor h100 (nominal 16 + what cohort research can lend). It "
              "would wait forever.")


@pytest.mark.parametrize(("number", "word"), [
    (1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (9, "9th"), (10, "10th"), (11, "11th"),
    (12, "12th"), (13, "13th"), (19, "19th"), (20, "20th"), (21, "21st"), (22, "22nd"),
    (23, "23rd"), (101, "101st"), (111, "111th"), (112, "112th"), (113, "113th"),
    (120, "120th"), (121, "121st")])
def test_places_in_line_read_as_english_ordinals(number: int, word: str) -> None:
    assert _ordinal(number) == word


# -- two flavors in team-a-cq: a100 (nominal 8 + borrowingLimit 0, all reserved) and h100 ----------
# (nominal 4, nothing reserved), in cohort research with team-b-cq (h100 nominal 16)

def _two_flavors(*, team_a_a100_reserved: str = "8", team_b_reserved: str = "16",
                 lending_limit: str | None = None, borrowing_limit: str | None = None,
                 cohort: bool = True, team_c_h100: bool = False) -> list[dict[str, Any]]:
    objects = _recorded()
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
    team_a, team_b = by_name["team-a-cq"], by_name["team-b-cq"]
    if team_c_h100:  # team-c-cq has 4 h100 too, none of them reserved
        by_name["team-c-cq"]["spec"]["resourceGroups"][0]["flavors"].append(
            {"name": "h100", "resources": [{"name": GPU, "nominalQuota": "4"}]})
    gpu: dict[str, Any] = {"name": GPU, "nominalQuota": "4"}
    if borrowing_limit is not None:
        gpu["borrowingLimit"] = borrowing_limit
    team_a["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "0"},
                                       {"name": "memory", "nominalQuota": "0"}, gpu]})
    team_a["status"]["flavorsReservation"][0]["resources"][2]["total"] = team_a_a100_reserved
    if not cohort:
        team_a["spec"].pop("cohortName")
    if lending_limit is not None:
        team_b["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2][
            "lendingLimit"] = lending_limit
    team_b["status"]["flavorsReservation"][0]["resources"][2]["total"] = team_b_reserved
    return objects


def _never_two(need: int, h100: str) -> str:
    return (f"Job team-b x needs {need} {GPU}, more than ClusterQueue team-a-cq can ever give: "
            f"at most 8 in flavor a100 (nominal 8 + borrowingLimit 0); {h100}. It would wait "
            "forever.")


def _fits_h100(free: str, need: int) -> tuple[str | None, str]:
    return "h100", f"ClusterQueue team-a-cq, flavor h100: {free}, it needs {need}."


def _borrowing(free: int, borrowable: int) -> str:
    """h100's room when team-a-cq may borrow: its own 4 unused and what the cohort gives."""
    return f"{free} {GPU} free (4 of its nominal 4 + {borrowable} it may borrow in cohort research)"


TWO_FLAVORS: list[tuple[dict[str, Any], int, tuple[str | None, str]]] = [
    # team-b-cq lends nothing now (16 of 16 reserved), but could lend all 16 once free
    ({}, 4, _fits_h100(f"4 of 4 {GPU} free", 4)),
    ({}, 5, (None, f"flavor a100 has 0 of 8 {GPU} free; flavor h100 has 4 of 4 {GPU} free; "
                   "it needs 5.")),
    ({}, 20, (None, f"flavor a100 has 0 of 8 {GPU} free; flavor h100 has 4 of 4 {GPU} free; "
                    "it needs 20.")),
    ({}, 21, (None, _never_two(21, "20 in flavor h100 (nominal 4 + what cohort research can "
                                   "lend)"))),
    # team-b-cq leaves 6 unused: all of it lent, or its lendingLimit 2
    ({"team_b_reserved": "10"}, 10, _fits_h100(_borrowing(10, 6), 10)),
    ({"team_b_reserved": "10", "lending_limit": "2"}, 6, _fits_h100(_borrowing(6, 2), 6)),
    ({"team_b_reserved": "10", "lending_limit": "2"}, 7,
     (None, f"flavor a100 has 0 of 8 {GPU} free; flavor h100 has {_borrowing(6, 2)}; "
            "it needs 7.")),
    ({"team_b_reserved": "10", "lending_limit": "2"}, 9,
     (None, _never_two(9, "6 in flavor h100 (nominal 4 + what cohort research can lend)"))),
    # team-a-cq's own borrowingLimit 1 on h100
    ({"team_b_reserved": "10", "borrowing_limit": "1"}, 5, _fits_h100(_borrowing(5, 1), 5)),
    ({"team_b_reserved": "10", "borrowing_limit": "1"}, 9,
     (None, _never_two(9, "5 in flavor h100 (nominal 4 + borrowingLimit 1)"))),
    # two queues of the cohort lend h100: team-b-cq nothing now (or its 6 unused), team-c-cq
    # its 4
    ({"team_c_h100": True}, 8, _fits_h100(_borrowing(8, 4), 8)),
    ({"team_c_h100": True}, 9,
     (None, f"flavor a100 has 0 of 8 {GPU} free; flavor h100 has {_borrowing(8, 4)}; "
            "it needs 9.")),
    ({"team_b_reserved": "10", "team_c_h100": True}, 14, _fits_h100(_borrowing(14, 10), 14)),
    ({"team_c_h100": True}, 25,
     (None, _never_two(25, "24 in flavor h100 (nominal 4 + what cohort research can lend)"))),
    # the flavors are tried in order: a100 first when it has room
    ({"team_a_a100_reserved": "4"}, 4,
     ("a100", f"ClusterQueue team-a-cq, flavor a100: 4 of 8 {GPU} free, it needs 4.")),
    # no cohort: nothing to borrow, the nominal quota is the most
    ({"cohort": False}, 4, _fits_h100(f"4 of 4 {GPU} free", 4)),
    ({"cohort": False}, 9,
     (None, _never_two(9, "4 in flavor h100 (nominal 4, no cohort to borrow from)"))),
]


@pytest.mark.parametrize(("change", "need", "expected"), TWO_FLAVORS, ids=[
    "-".join([*(f"{k}={v}" for k, v in change.items()), f"needs-{need}"])
    for change, need, _ in TWO_FLAVORS])
def test_two_flavors_each_with_its_room_and_ceiling(change: dict[str, Any], need: int,
                                                    expected: tuple[str | None, str]) -> None:
    assert _preview("team-a-lq", need, namespace="team-a", objects=_two_flavors(**change)) == (
        expected)


def test_a_cluster_queue_without_quota_for_the_resource() -> None:
    index = QueueIndex(_recorded())
    assert preview_admission(index, "it", "team-a", "team-a-lq", "amd.com/gpu", Decimal(1)) == (
        None, "ClusterQueue team-a-cq has no quota for amd.com/gpu.")


# -- quota_answer through triage: a queued Job's numbers ------------------------------------------

def _eval_nightly(lists: Any, **snapshot: Any) -> Any:
    return triage(Snapshot(**lists, **snapshot), parse_ref("team-a/eval-nightly"))


def _team_a_flavors(lists: Any) -> list[dict[str, Any]]:
    cluster_queue = next(o for o in lists["queues"]
                         if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-a-cq")
    flavors: list[dict[str, Any]] = cluster_queue["spec"]["resourceGroups"][0]["flavors"]
    return flavors


def _team_a_gpu(lists: Any) -> dict[str, Any]:
    gpu: dict[str, Any] = _team_a_flavors(lists)[0]["resources"][2]
    return gpu


def _eval_answer(borrowing: str, place: str) -> str:
    return (f"ClusterQueue team-a-cq: flavor a100 has 8 {GPU} ({borrowing}), 8 reserved "
            "(team-a/train-bert 4, team-a/llm-finetune 4): 0 free, 2 short. Job "
            f"team-a/eval-nightly needs 2 (1 pod × 2): wait ({place}), lower the request, or "
            "ask for quota / borrowing in cohort research.")


def test_a_borrowing_limit_above_zero_says_what_the_cohort_lends() -> None:
    lists = load_lists("kueue-basics")
    _team_a_gpu(lists)["borrowingLimit"] = "2"
    verdict = _eval_nightly(lists)
    assert verdict.action == _eval_answer(
        "cohort research has 0 unused to lend, borrowingLimit 2",
        "1 pending ahead of it in team-a-cq")
    assert ("ClusterQueue team-a-cq", f"flavor a100 [{GPU}]",
            "nominal 8, reserved 8, borrowingLimit 2, needs 2") in [
        (e.object, e.field, e.value) for e in verdict.evidence]


def test_kueues_own_place_in_line_is_told_when_read() -> None:
    # Kueue's visibility API counts from 0: position 2 of 5 is the third
    verdict = _eval_nightly(load_lists("kueue-basics"),
                            queue_positions={"team-a/job-eval-nightly-5ca2b": (2, 5)})
    assert verdict.action == _eval_answer(
        "borrowingLimit 0: it cannot borrow from cohort research", "3rd of 5 pending in team-a-cq")


def test_more_than_the_cohort_can_ever_lend_waits_forever() -> None:
    lists = load_lists("kueue-basics")
    pod = next(p for p in lists["pods"] if p["metadata"]["name"] == "notebook-gpu")
    pod["spec"]["containers"][0]["resources"]["limits"][GPU] = "17"
    verdict = triage(Snapshot(**lists), parse_ref("team-b/notebook-gpu"))
    assert verdict.action == (
        f"Pod team-b/notebook-gpu needs 17 {GPU} (1 pod × 17), more than ClusterQueue "
        "team-b-cq can ever give: at most 16 in flavor h100 (nominal 16 + what cohort research "
        "can lend). It will wait forever: split it into smaller jobs, or ask for quota in "
        "team-b-cq.")


def test_two_flavors_each_with_their_numbers_and_reserved_by_no_workload_seen() -> None:
    lists = load_lists("kueue-basics")
    _team_a_flavors(lists).append(
        {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "0"},
                                       {"name": "memory", "nominalQuota": "0"},
                                       {"name": GPU, "nominalQuota": "4"}]})
    assert _eval_nightly(lists).action == (
        f"ClusterQueue team-a-cq: flavor a100 has 8 {GPU} (borrowingLimit 0: it cannot borrow "
        "from cohort research), 8 reserved (team-a/train-bert 4, team-a/llm-finetune 4): 0 free, "
        f"2 short; flavor h100 has 4 {GPU} (cohort research has 0 unused to lend), 0 reserved "
        "(by no workload gpuwhy sees): 4 free, 0 short. Job team-a/eval-nightly needs 2 (1 pod "
        "× 2): wait (1 pending ahead of it in team-a-cq), lower the request, or ask for quota / "
        "borrowing in cohort research.")
