"""Kueue read live: discovery, the preferred version, no request on a cluster (or a ref)
Kueue has nothing to do with, and the watch cache's queued answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.clusters.sources import LiveSource
from tests.kubeapi import FakeKubeAPI, forbidden_status
from tests.triage.cluster.conftest import FIXTURES, SEVEN, eventually, ref_of, watch_source

KUEUE = FIXTURES / "scenarios" / "kueue-basics"
EXPECTED = json.loads((KUEUE / "expected.json").read_text())
PENDING = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/team-a-cq/pendingworkloads"


def kueue_paths(server: FakeKubeAPI, since: int = 0) -> list[str]:
    """Kueue requests since ``since``, not counting the watch streams (they run on their own)."""
    return [r.path for r in server.requests[since:]
            if "kueue.x-k8s.io" in r.path and r.query.get("watch") != "1"]


def test_a_cluster_without_kueue_costs_no_kueue_request(tmp_path: Path) -> None:
    refs = json.loads((SEVEN / "expected.json").read_text())
    with FakeKubeAPI(SEVEN) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        for ref in refs:
            live.triage(ref_of(ref))
        assert kueue_paths(server) == []
        assert server.count() > len(refs)  # it did read the cluster


def test_a_ref_kueue_has_nothing_to_do_with_costs_no_kueue_request(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        assert live.triage(ref_of("sandbox/debug-job")).cause == "pod-not-found"
        # a running Kueue job: nothing of the queue changes that answer
        assert live.triage(ref_of("team-a/train-bert")).cause == "scheduled"
        assert live.triage(ref_of("team-a/train-bert-m44st")).cause == "scheduled"
        assert kueue_paths(server) == []


V1BETA2 = "/apis/kueue.x-k8s.io/v1beta2"
# What a cold triage of each ref Kueue holds reads of Kueue, after discovery and before the
# one try of the visibility API: GETs of its LocalQueue, ClusterQueue and flavors; a list
# only where the answer names what exists, counts who holds the quota or who is ahead
# (the namespaces whose LocalQueues feed the ClusterQueue), or what the cohort lends.
COLD_KUEUE_READS = {
    # quota short, borrowingLimit 0: the cohort is not read
    "team-a/eval-nightly": [
        f"{V1BETA2}/namespaces/team-a/localqueues/team-a-lq",
        f"{V1BETA2}/clusterqueues/team-a-cq", f"{V1BETA2}/resourceflavors/a100",
        f"{V1BETA2}/localqueues", f"{V1BETA2}/namespaces/team-a/workloads"],
    # the LocalQueue named does not exist: the namespace's LocalQueues, then its Workload
    # (by the job-uid label Kueue puts on it)
    "team-b/render-batch": [
        f"{V1BETA2}/namespaces/team-b/localqueues/team-b-queue",
        f"{V1BETA2}/namespaces/team-b/localqueues", f"{V1BETA2}/namespaces/team-b/workloads"],
    # the flavor the ClusterQueue names does not exist: the ones that do
    "team-c/sim-h200": [
        f"{V1BETA2}/namespaces/team-c/localqueues/team-c-lq",
        f"{V1BETA2}/clusterqueues/team-c-cq", f"{V1BETA2}/resourceflavors/h200",
        f"{V1BETA2}/resourceflavors", f"{V1BETA2}/namespaces/team-c/workloads"],
    # no borrowingLimit on nvidia.com/gpu: the cohort's ClusterQueues
    "team-b/notebook-gpu": [
        f"{V1BETA2}/namespaces/team-b/localqueues/team-b-lq",
        f"{V1BETA2}/clusterqueues/team-b-cq", f"{V1BETA2}/resourceflavors/h100",
        f"{V1BETA2}/localqueues", f"{V1BETA2}/namespaces/team-b/workloads",
        f"{V1BETA2}/clusterqueues"],
    # admitted, its pods pending: the Workload (named in the pods' annotation) and its flavor
    "team-b/sd-train-n7lxm": [f"{V1BETA2}/namespaces/team-b/workloads/job-sd-train-8350d",
                              f"{V1BETA2}/resourceflavors/h100"],
}


@pytest.mark.parametrize("ref", sorted(COLD_KUEUE_READS))
def test_a_cold_queued_ref_reads_what_its_answer_needs(tmp_path: Path, ref: str) -> None:
    with FakeKubeAPI(KUEUE) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        assert live.triage(ref_of(ref)).cause == EXPECTED[ref]["cause"]
        paths = kueue_paths(server)
        selectors = [r.query.get("labelSelector", "") for r in server.requests
                     if r.path.endswith("/workloads") and "kueue" in r.path]
    assert paths[0] == "/apis/kueue.x-k8s.io"
    reads = [p for p in paths[1:] if "visibility" not in p]
    assert reads == COLD_KUEUE_READS[ref]
    assert len([p for p in paths if "visibility" in p]) <= 1
    # no Workload of another namespace, and never every Workload of the cluster
    assert f"{V1BETA2}/workloads" not in paths
    if ref == "team-b/render-batch":
        assert selectors == ["kueue.x-k8s.io/job-uid=e3e5acbd-1ed6-4e48-91b5-21cfab25cd34"]


def test_a_preempted_workloads_preemptor_is_read_where_it_waits(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-a/resnet-sweep"))
        paths = kueue_paths(server)
    # team-a/llm-finetune preempted it in team-a-cq: among the Workloads read for the quota
    assert "to admit team-a/llm-finetune (priority 1000 prod-high > 100 batch-low)" in (
        verdict.action)
    assert f"{V1BETA2}/workloads" not in paths


@pytest.mark.parametrize("versions", [("v1beta1", "v1beta2"), ("v1beta1",)],
                         ids=["v1beta1-preferred", "v1beta1-only"])
def test_the_preferred_version_is_read_and_answers_the_same(tmp_path: Path,
                                                            versions: tuple[str, ...]) -> None:
    with FakeKubeAPI(KUEUE) as newer:
        live = LiveSource(kubeconfig=str(newer.kubeconfig(tmp_path / "newer")))
        expected = {ref: live.triage(ref_of(ref)).to_dict() for ref in EXPECTED}
    with FakeKubeAPI(KUEUE, kueue=versions) as older:
        live = LiveSource(kubeconfig=str(older.kubeconfig(tmp_path / "older")))
        answers = {ref: live.triage(ref_of(ref)).to_dict() for ref in EXPECTED}
        read = {p for p in kueue_paths(older) if p.count("/") > 2}
    assert answers == expected
    assert read and all(p.startswith(("/apis/kueue.x-k8s.io/v1beta1/",
                                      "/apis/visibility.kueue.x-k8s.io/v1beta1/")) for p in read)


def test_a_group_served_only_in_an_unknown_version_is_one_sentence(tmp_path: Path) -> None:
    group = {"kind": "APIGroup", "apiVersion": "v1", "name": "kueue.x-k8s.io", "code": 200,
             "versions": [{"groupVersion": "kueue.x-k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "kueue.x-k8s.io/v1", "version": "v1"}}
    with FakeKubeAPI(KUEUE, kueue=()) as server:
        server.inject("status", "^/apis/kueue.x-k8s.io$", status=group)
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-a/eval-nightly"))
    assert verdict.cause == "queued" and "gpuwhy sees no Kueue objects" in verdict.action
    assert verdict.error is not None and "serves kueue.x-k8s.io only as v1; gpuwhy reads " \
        "v1beta2, v1beta1" in verdict.error


def test_a_failed_kueue_read_is_noted_and_the_answer_stays_queued(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        server.inject("reset", "^/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads$",
                      times=5)
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-a/eval-nightly"))
    assert verdict.cause == "queued"
    assert verdict.error is not None and "workloads.kueue.x-k8s.io" in verdict.error


# Requests of a triage from the watch cache, for each ref Kueue holds or admitted, after the
# visibility API was tried once (404 here: remembered). A Job Kueue holds: its own GET (the
# cached Workload it owns says so), and the events about it only when it ran before (its
# Workload was preempted: the Job controller may have recorded a FailedCreate since). A pod:
# its GET and the events about it, as any pod.
CACHED_REQUESTS = {"team-a/eval-nightly": 1, "team-a/big-pretrain": 1, "team-b/render-batch": 1,
                   "team-c/sim-h200": 1, "team-a/resnet-sweep": 2, "team-b/notebook-gpu": 2,
                   "team-b/sd-train-n7lxm": 2}


def test_the_cache_answers_queued_refs_in_two_requests_at_most(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(10)
            assert source.cache.counts()["workloads.kueue.x-k8s.io"] == 10
            before = server.mark()
            source.triage(ref_of("team-a/eval-nightly"))
            tried = [r.path for r in server.requests[before:] if r.query.get("watch") != "1"]
            counts, asked = {}, []
            for ref in CACHED_REQUESTS:
                before = server.mark()
                assert source.triage(ref_of(ref)).cause == EXPECTED[ref]["cause"]
                asked += kueue_paths(server, before)
                counts[ref] = server.count(before)
        finally:
            source.stop()
    # the first: the Job's GET and the one try of the visibility API (404)
    assert tried == ["/apis/batch/v1/namespaces/team-a/jobs/eval-nightly",
                                       PENDING]
    assert asked == []  # nothing of Kueue's is read per triage: the cache has it
    assert counts == CACHED_REQUESTS


def test_a_job_the_cache_thinks_queued_but_admitted_since_is_read_whole(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(10)
            job = json.loads(json.dumps(server.get_object("Job", "team-a", "eval-nightly")))
            job["spec"]["suspend"] = False  # Kueue let it start; the Workload's event not seen
            server.apply(job)
            verdict = source.triage(ref_of("team-a/eval-nightly"))
        finally:
            source.stop()
    # not suspended: the Job is read as any other (its pods, its events), and answered so
    assert verdict.cause != "queued"


def test_the_cache_of_a_cluster_without_kueue_asks_discovery_once(tmp_path: Path) -> None:
    with FakeKubeAPI(SEVEN) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(10)
            source.triage(ref_of("research/full"))
            source.triage(ref_of("ml/finetune"))
            assert kueue_paths(server) == ["/apis/kueue.x-k8s.io"]
            counted = source.cache.counts()
            assert "clusterqueues" not in counted and "workloads" in counted  # the gangs'
            assert not [name for name in counted if "kueue" in name]
        finally:
            source.stop()


def test_the_cache_follows_kueue_watch_events(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(10)
            cluster_queue = json.loads(json.dumps(server.get_object("ClusterQueue", "",
                                                                    "team-a-cq")))
            cluster_queue["spec"]["stopPolicy"] = "Hold"
            server.apply(cluster_queue)
            eventually(lambda: "stopPolicy Hold" in source.triage(
                ref_of("team-a/eval-nightly")).action)
        finally:
            source.stop()


SUMMARY = {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
           "metadata": {}, "code": 200, "items": [
               {"metadata": {"name": name, "namespace": "team-a"}, "priority": 100,
                "localQueueName": "team-a-lq", "positionInClusterQueue": position,
                "positionInLocalQueue": position}
               for position, name in enumerate(("job-resnet-sweep-ee294", "job-big-pretrain-16711",
                                                "job-eval-nightly-5ca2b"))]}


def test_where_kueue_serves_its_visibility_api_the_position_is_its_word(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        server.inject("status", f"^{PENDING}$", status=SUMMARY)
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-a/eval-nightly"))
        assert kueue_paths(server).count(PENDING) == 1  # one request at most
    assert "wait (3rd of 3 pending in team-a-cq)" in verdict.action


def test_a_refused_visibility_api_is_not_needed(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        server.inject("status", f"^{PENDING}$", status=forbidden_status(
            "get", "clusterqueues", "visibility.kueue.x-k8s.io", name="team-a-cq"))
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(10)
            verdict = source.triage(ref_of("team-a/eval-nightly"))
            source.triage(ref_of("team-a/resnet-sweep"))
        finally:
            source.stop()
        assert kueue_paths(server).count(PENDING) == 1  # refused once: not asked again
    assert verdict.error is None  # not a read the answer lacks
    assert "wait (1 pending ahead of it in team-a-cq)" in verdict.action


def test_nothing_of_kueue_for_the_ref_is_told_from_no_kueue_at_all(tmp_path: Path) -> None:
    with FakeKubeAPI(KUEUE) as server:
        server.delete("Workload", "team-b", "job-render-batch-176d5", "kueue.x-k8s.io")
        server.delete("LocalQueue", "team-b", "team-b-lq")
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-b/render-batch"))
    # the ClusterQueues it read say Kueue is there: the namespace just has no LocalQueue
    assert "the namespace has no LocalQueue at all" in verdict.action
    assert "gpuwhy sees no Kueue objects" not in verdict.action


JOBSETS = FIXTURES / "scenarios-extra" / "kueue-jobsets"


def test_a_jobset_or_rayjob_kueue_holds_costs_its_get_from_the_cache(tmp_path: Path) -> None:
    expected = json.loads((JOBSETS / "expected.json").read_text())
    with FakeKubeAPI(JOBSETS) as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(10)
            source.triage(ref_of("team-a/trainer-js"))  # tries the visibility API once
            asked = {}
            for ref, kind in (("team-a/trainer-js", "JobSet"), ("team-a/tune-ray", "RayJob")):
                before = server.mark()
                verdict = source.triage(ref_of(ref))
                assert (verdict.cause, verdict.kind) == (expected[ref]["cause"], kind)
                asked[ref] = [r.path for r in server.requests[before:]
                              if r.query.get("watch") != "1"]
        finally:
            source.stop()
    assert asked == {"team-a/trainer-js": ["/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/"
                                           "jobsets/trainer-js"],
                     "team-a/tune-ray": ["/apis/ray.io/v1/namespaces/team-a/rayjobs/tune-ray"]}


def test_an_admitted_jobsets_pods_are_read_by_its_label(tmp_path: Path) -> None:
    with FakeKubeAPI(JOBSETS) as server:
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-a/pretrain-js"))
        selectors = [r.query.get("labelSelector") for r in server.requests
                     if r.path == "/api/v1/namespaces/team-a/pods"]
    assert (verdict.cause, verdict.kind) == ("scheduled", "JobSet")
    assert verdict.pods == ["team-a/pretrain-js-workers-0-0-x7k2p"]
    assert selectors == ["jobset.sigs.k8s.io/jobset-name=pretrain-js"]


def test_a_jobset_that_may_borrow_reads_its_cohort_cold(tmp_path: Path) -> None:
    with FakeKubeAPI(JOBSETS) as server:
        mine = json.loads(json.dumps(server.get_object("ClusterQueue", "", "team-a-cq")))
        mine["spec"]["cohortName"] = "research"
        for resource in mine["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
            resource.pop("borrowingLimit", None)
        lender = json.loads(json.dumps(mine))
        lender["metadata"] = {**mine["metadata"], "name": "team-b-cq", "uid": "lender-uid"}
        lender["status"]["flavorsReservation"] = lender["status"]["flavorsUsage"] = []
        for obj in (mine, lender):
            server.apply(obj)
        live = LiveSource(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))
        verdict = live.triage(ref_of("team-a/trainer-js"))
        paths = kueue_paths(server)
    assert "/apis/kueue.x-k8s.io/v1beta2/clusterqueues" in paths  # the cohort's members
    assert "cohort research has 8 unused to lend" in verdict.action
