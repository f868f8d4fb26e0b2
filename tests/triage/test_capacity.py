"""The capacity view and `where` on the recorded clusters: the numbers a person counts by hand
from the dumps, through the three readers (dump, cold live read, watch cache)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from bot.answer.capacity import group_lines, where_text
from bot.cli.main import main
from bot.clusters.sources import LiveSource
from tests.conftest import SCENARIOS
from tests.kubeapi import FakeKubeAPI
from tests.prometheus import URL as PROMETHEUS
from tests.prometheus import sent_queries, seven_states_prometheus
from tests.triage.cluster.conftest import eventually, watch_source
from triage.classify import triage
from triage.classify.capacity import CapacityGroup, capacity_view, with_idle_held
from triage.classify.where import (
    HeldBy,
    WhereAnswer,
    WhereAsk,
    WhereError,
    parse_selector,
    parse_toleration,
    where,
)
from triage.cluster import load_api_client
from triage.config import DEFAULT_CONFIG
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SEVEN, HAMI, DRA = (str(SCENARIOS / name) for name in ("seven-states", "hami-sharing",
                                                         "dra-basics"))

Row = tuple[str, str, str, str, int, int, int, int, int, int, str, tuple[tuple[str, str, int],
                                                                         ...],
            tuple[tuple[str, int], ...]]


def row(group: CapacityGroup) -> Row:
    """(kind, resource, pool, product, nodes, capacity, allocatable, held, free,
    largest free, its node, broken (node, why, GPUs out), holders (namespace, GPUs))."""
    return (group.kind, group.resource, group.pool, group.product, group.nodes,
            group.capacity, group.allocatable, group.held, group.free, group.largest_free,
            group.largest_free_node, tuple((b.name, b.why, b.gpus) for b in group.broken),
            tuple((h.namespace, h.gpus) for h in group.holders))


# Counted from nodes.json and pods.json of each scenario (README tables):
EXPECTED: dict[str, list[Row]] = {
    # status.capacity / allocatable of nvidia.com/gpu per node, one pool label each; held: the
    # limits of the Running pods bound there (gpu-a100-1: research/ok 2, research/no-request
    # none; gpu-a10-full: ml/train-a 1 + team-b/train-b 1, done and crashed are finished);
    # gpu-t4-noplugin: no nvidia.com/gpu in capacity, GFD's nvidia.com/gpu.count 1;
    # cpu-1 carries no GPU label and is in no group.
    "seven-states": [
        ("device-plugin", "nvidia.com/gpu", "h100", "NVIDIA-H100-80GB-HBM3", 1, 8, 8, 0, 8, 8,
         "gpu-h100-reserved", (), ()),
        ("device-plugin", "nvidia.com/gpu", "a100", "NVIDIA-A100-SXM4-80GB", 1, 4, 4, 2, 2, 2,
         "gpu-a100-1", (), (("research", 2),)),
        ("device-plugin", "nvidia.com/gpu", "v100-broken", "Tesla-V100-SXM2-16GB", 1, 4, 0, 0,
         0, 0, "", (("gpu-v100-broken", "allocatable 0", 4),), ()),
        ("device-plugin", "nvidia.com/gpu", "a10-full", "NVIDIA-A10", 1, 2, 2, 2, 0, 0, "", (),
         (("ml", 1), ("team-b", 1))),
        ("device-plugin", "nvidia.com/gpu", "t4-noplugin", "Tesla-T4", 1, 0, 0, 0, 0, 0, "",
         (("gpu-t4-noplugin", "no device plugin", 1),), ()),
    ],
    # hami.io/node-nvidia-register: hami-a100-1 4 cards, card 3 without "health" (unhealthy);
    # cards 0, 1, 2 used by llm-chat-0, llm-chat-1, trainer-lora. hami-t4-1 2 cards, card 0
    # used by placed, card 1 free.
    "hami-sharing": [
        ("hami", "HAMi cards", "hami-a100", "NVIDIA A100-SXM4-80GB", 1, 4, 3, 3, 0, 0, "", (),
         (("hami", 3),)),
        ("hami", "HAMi cards", "hami-t4", "NVIDIA-Tesla T4", 1, 2, 2, 1, 1, 1, "hami-t4-1", (),
         (("hami", 1),)),
    ],
    # dra.json's ResourceSlices: dra-a100-1 gpu-0..3 (all four allocated to holder-a and
    # holder-b), dra-a100-2 gpu-0..3 (gpu-0 to finetune-1g), dra-l4-1 gpu-0, gpu-1 (none);
    # gpu-spare-1 has GFD labels (NVIDIA-A10, count 2) and no slice, no nvidia.com/gpu.
    "dra-basics": [
        ("dra", "gpu.nvidia.com", "a100-a", "NVIDIA A100-SXM4-80GB", 1, 4, 4, 4, 0, 0, "", (),
         (("vision", 4),)),
        ("dra", "gpu.nvidia.com", "a100-b", "NVIDIA A100-SXM4-80GB", 1, 4, 4, 1, 3, 3,
         "dra-a100-2", (), (("vision", 1),)),
        ("dra", "gpu.nvidia.com", "l4", "NVIDIA L4", 1, 2, 2, 0, 2, 2, "dra-l4-1", (), ()),
        ("device-plugin", "nvidia.com/gpu", "gpu-spare", "NVIDIA-A10", 1, 0, 0, 0, 0, 0, "",
         (("gpu-spare-1", "no device plugin", 2),), ()),
    ],
}
# (nodes, nodes in a group, capacity, held, free): the sums of the rows above; cpu-1 is in none
TOTALS = {"seven-states": (6, 5, 18, 4, 10), "hami-sharing": (2, 2, 6, 4, 1),
          "dra-basics": (5, 4, 10, 5, 5)}

READERS = ("dump", "live", "watch")


@pytest.fixture(params=READERS)
def read_cluster(request: pytest.FixtureRequest, tmp_path: Path
                 ) -> Iterator[Callable[[str], Snapshot]]:
    """The whole-cluster Snapshot of a scenario, as each reader gives it."""
    servers: list[FakeKubeAPI] = []
    stops: list[Callable[[], None]] = []

    def read(name: str) -> Snapshot:
        directory = SCENARIOS / name
        if request.param == "dump":
            return Snapshot.from_dir(directory)
        server = FakeKubeAPI(directory).start()
        servers.append(server)
        if request.param == "live":
            client = load_api_client(str(server.kubeconfig(tmp_path / f"{name}.kubeconfig")))
            return LiveSource(api_client=client).cluster_snapshot()
        source = watch_source(server, tmp_path).start()
        stops.append(source.stop)
        assert source.wait_ready(5)
        return source.cluster_snapshot()

    yield read
    for stop in stops:
        stop()
    for server in servers:
        server.stop()


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_capacity_counts_what_a_person_counts(scenario: str,
                                              read_cluster: Callable[[str], Snapshot]) -> None:
    snapshot = read_cluster(scenario)
    view = capacity_view(snapshot.rows, DEFAULT_CONFIG)
    assert [row(g) for g in view.groups] == EXPECTED[scenario]
    assert (view.nodes, view.gpu_nodes, view.capacity, view.held, view.free) == \
        TOTALS[scenario]


def test_taints_say_who_may_use_a_group() -> None:
    snapshot = Snapshot.from_dir(SEVEN)
    view = capacity_view(snapshot.rows, DEFAULT_CONFIG)
    taints = {g.pool: [(t.taint, t.nodes) for t in g.taints] for g in view.groups}
    # gpu-h100-reserved's spec.taints; no other node is tainted or cordoned
    assert taints["h100"] == [("dedicated=llm-team:NoSchedule", 1)]
    assert all(not found for pool, found in taints.items() if pool != "h100")


def _edited_nodes(directory: str, tmp_path: Path,
                  edit: Callable[[dict[str, Any]], None]) -> Snapshot:
    """The scenario with its nodes.json edited (a node gone NotReady, cordoned, ...)."""
    target = tmp_path / "cluster"
    target.mkdir()
    for path in Path(directory).iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    nodes = json.loads((target / "nodes.json").read_text())
    edit(nodes)
    (target / "nodes.json").write_text(json.dumps(nodes))
    return Snapshot.from_dir(target)


def _node(nodes: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(n for n in nodes["items"] if n["metadata"]["name"] == name)
    return found


def test_a_not_ready_node_takes_its_gpus_out_and_a_cordon_is_named(tmp_path: Path) -> None:
    def edit(nodes: dict[str, Any]) -> None:
        for condition in _node(nodes, "gpu-a100-1")["status"]["conditions"]:
            if condition["type"] == "Ready":
                condition.update(status="Unknown", reason="NodeStatusUnknown")
        _node(nodes, "gpu-h100-reserved")["spec"]["unschedulable"] = True

    snapshot = _edited_nodes(SEVEN, tmp_path, edit)
    view = capacity_view(snapshot.rows, DEFAULT_CONFIG)
    groups = {g.pool: g for g in view.groups}
    a100 = groups["a100"]
    # research/ok still holds 2 of the 4; none is free on a node that is not Ready
    assert (a100.held, a100.free, a100.broken_gpus) == (2, 0, 4)
    assert [(b.name, b.why) for b in a100.broken] == [("gpu-a100-1", "not Ready")]
    assert [(t.taint, t.nodes) for t in groups["h100"].taints] == [
        ("cordoned (node.kubernetes.io/unschedulable:NoSchedule)", 1),
        ("dedicated=llm-team:NoSchedule", 1)]


def test_pool_labels_come_from_the_config() -> None:
    config = dataclasses.replace(DEFAULT_CONFIG, pool_labels=("no-such-label",))
    snapshot = Snapshot.from_dir(SEVEN)
    view = capacity_view(snapshot.rows, config)
    # without a pool, the product names the group; one node per product in seven-states
    assert [(g.pool, g.product) for g in view.groups][:2] == [
        ("", "NVIDIA-H100-80GB-HBM3"), ("", "NVIDIA-A100-SXM4-80GB")]


# -- where ------------------------------------------------------------------------------------

def _where(snapshot: Snapshot, ask: WhereAsk) -> WhereAnswer:
    """``where`` on the Snapshot's rows, the Snapshot kept while they are read."""
    return where(snapshot.rows, ask, DEFAULT_CONFIG)


# (scenario, a recorded pod, the ask a person would type for it, the word both get)
AGREEMENT = [
    ("seven-states", "research/big", WhereAsk(8, "nvidia.com/gpu", "research"), "too-large"),
    ("seven-states", "research/full",
     WhereAsk(1, "nvidia.com/gpu", "research", {"pool": "a10-full"}), "exhausted"),
    ("seven-states", "research/broken-node",
     WhereAsk(1, "nvidia.com/gpu", "research", {"pool": "v100-broken"}), "allocatable-zero"),
    ("seven-states", "research/no-plugin",
     WhereAsk(1, "nvidia.com/gpu", "research", {"pool": "t4-noplugin"}), "no-gpu-node"),
    ("seven-states", "research/tainted",
     WhereAsk(1, "nvidia.com/gpu", "research", {"pool": "h100"}), "taint-untolerated"),
    ("seven-states", "research/wrong-pool",
     WhereAsk(1, "nvidia.com/gpu", "research", {"pool": "h200"}), "selector-mismatch"),
    ("hami-sharing", "hami/too-many-cards",
     WhereAsk(5, "nvidia.com/gpu", "hami", scheduler="hami-scheduler"), "device-unfit"),
    ("hami-sharing", "hami/fits-small",
     WhereAsk(1, "nvidia.com/gpu", "hami", scheduler="hami-scheduler"),
     "scheduler-unavailable"),
    ("dra-basics", "vision/big-8g", WhereAsk(8, "gpu.nvidia.com", "vision"), "too-large"),
    ("dra-basics", "vision/pinned-a",
     WhereAsk(1, "gpu.nvidia.com", "vision", {"pool": "a100-a"}), "exhausted"),
    ("dra-basics", "vision/spare-pool",
     WhereAsk(1, "gpu.nvidia.com", "vision", {"pool": "gpu-spare"}), "no-gpu-node"),
    ("dra-basics", "serving/legacy-gpu", WhereAsk(1, "nvidia.com/gpu", "serving"),
     "no-gpu-node"),
]


@pytest.mark.parametrize(("scenario", "ref", "ask", "word"), AGREEMENT,
                         ids=[f"{s}:{r}" for s, r, _, _ in AGREEMENT])
def test_where_agrees_with_the_triage_of_a_real_pod(
        scenario: str, ref: str, ask: WhereAsk, word: str,
        read_cluster: Callable[[str], Snapshot]) -> None:
    real = triage(Snapshot.from_dir(SCENARIOS / scenario), parse_ref(ref))
    snapshot = read_cluster(scenario)
    answer = where(snapshot.rows, ask, DEFAULT_CONFIG)
    assert real.cause == answer.cause == word
    assert answer.fits is (word == "scheduler-unavailable")


def test_where_names_the_free_nodes_and_those_behind_a_taint(
        read_cluster: Callable[[str], Snapshot]) -> None:
    snapshot = read_cluster("seven-states")
    # 2 free: gpu-a100-1 (4, research/ok holds 2); gpu-h100-reserved has 8 behind its taint
    two = where(snapshot.rows, WhereAsk(2, "nvidia.com/gpu"), DEFAULT_CONFIG)
    assert two.fits and two.fit_nodes == ("gpu-a100-1",)
    assert [(c.name, c.free, c.taints) for c in two.behind_taints] == [
        ("gpu-h100-reserved", 8, ("dedicated=llm-team:NoSchedule",))]
    tolerated = where(snapshot.rows, WhereAsk(8, "nvidia.com/gpu", tolerations=(
        parse_toleration("dedicated=llm-team:NoSchedule"),)), DEFAULT_CONFIG)
    assert tolerated.fits and tolerated.fit_nodes == ("gpu-h100-reserved",)
    assert not tolerated.behind_taints


def test_where_names_the_nearest_full_nodes_with_their_holders() -> None:
    # three hours after the holders started (status.startTime 12:50:43 and 12:50:44)
    snapshot = dataclasses.replace(Snapshot.from_dir(SEVEN), read_at="2026-11-30T15:50:44Z")
    answer = where(snapshot.rows, WhereAsk(1, "nvidia.com/gpu", "research", {"pool": "a10-full"}),
                   DEFAULT_CONFIG)
    assert [(c.name, c.free, c.held) for c in answer.nearest] == [
        ("gpu-a10-full", 0, (HeldBy("ml/train-a", 1, 3 * 3600 + 1),
                             HeldBy("team-b/train-b", 1, 3 * 3600)))]


def test_where_builds_no_pod_the_cluster_has_not_got() -> None:
    snapshot = Snapshot.from_dir(SEVEN)
    before = copy.deepcopy((snapshot.pods, snapshot.dra))
    where(snapshot.rows, WhereAsk(2, "nvidia.com/gpu"), DEFAULT_CONFIG)
    assert (snapshot.pods, snapshot.dra) == before


@pytest.mark.parametrize(("build", "says"), [
    (lambda: _where(Snapshot.from_dir(SEVEN), WhereAsk(1, "example.com/fpga")),
     "this cluster has: nvidia.com/gpu"),
    (lambda: _where(Snapshot.from_dir(DRA), WhereAsk(1, "mig.nvidia.com")),
     "this cluster has: gpu.nvidia.com"),
    (lambda: parse_toleration("=x:NoSchedule"), "KEY[=VALUE][:EFFECT]"),
    (lambda: parse_toleration("k=v:Sometimes"), "KEY[=VALUE][:EFFECT]"),
    (lambda: parse_selector("pool"), "KEY=VALUE"),
])
def test_an_ask_gpuwhy_cannot_build_says_why(build: Callable[[], object], says: str) -> None:
    with pytest.raises(WhereError) as raised:
        build()
    assert says in str(raised.value)


# -- the commands ---------------------------------------------------------------------------


def test_capacity_command_prints_every_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "--snapshot", SEVEN]) == 0
    out = capsys.readouterr().out
    assert out.startswith("seven-states: 18 GPUs on 5 of 6 nodes: 4 held, 10 free\n")
    assert ("nvidia.com/gpu · pool a10-full · NVIDIA-A10\n"
            "  1 node, 2 GPUs: 2 allocatable, 2 held, 0 free\n"
            "  held by: ml 1, team-b 1\n") in out
    assert "broken: 1 node takes 4 GPUs out: gpu-v100-broken (allocatable 0)" in out


def test_capacity_command_json_and_one_pool(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "a100", "--snapshot", SEVEN, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(g["name"], g["capacity"], g["free"]) for g in data["groups"]] == [("a100", 4, 2)]
    assert (data["capacity"], data["free"], data["nodes"]) == (4, 2, 6)


@pytest.mark.parametrize(("argv", "code", "says"), [
    (["capacity", "h200", "--snapshot", SEVEN], 2, "no GPU group is named h200; known: "),
    (["capacity", "--snapshot", "/nonexistent/dir"], 3, "not a directory"),
    (["where", "0", "--snapshot", SEVEN], 2, "must be from 1 to 1024"),
    (["where", "two", "--snapshot", SEVEN], 2, "not a whole number"),
    (["where", "1", "example.com/fpga", "--snapshot", SEVEN], 2, "neither a GPU resource"),
    (["where", "1", "--toleration", "=x", "--snapshot", SEVEN], 2, "KEY[=VALUE][:EFFECT]"),
    (["where", "1", "--snapshot", "/nonexistent/dir"], 3, "not a directory"),
])
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                               says: str) -> None:
    try:
        exit_code = main(argv)
    except SystemExit as exc:  # argparse's own refusals (the count)
        exit_code = int(str(exc.code))
    assert exit_code == code
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_where_command_exit_codes_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["where", "2", "--snapshot", SEVEN]) == 0
    out = capsys.readouterr().out
    assert out.startswith("✅ fits — 2 × nvidia.com/gpu on one node: free now on gpu-a100-1\n")
    assert ("gpu-h100-reserved has 8 free behind dedicated=llm-team:NoSchedule: you need its "
            "toleration (--toleration dedicated=llm-team:NoSchedule)") in out
    assert main(["where", "8", "--snapshot", SEVEN, "--ns", "research"]) == 1
    assert capsys.readouterr().out.startswith("⛔ too-large — 8 × nvidia.com/gpu on one node")
    assert main(["where", "1", "--selector", "pool=a10-full", "--snapshot", SEVEN,
                 "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["cause"] == "exhausted" and data["nearest"][0]["name"] == "gpu-a10-full"
    assert data["verdict"]["cause"] == "exhausted"
    assert len(data["verdict"]["nodes"]) == 6  # seven-states' nodes, every report


def test_where_default_resource_is_the_clusters_own(capsys: pytest.CaptureFixture[str]) -> None:
    # dra-basics offers GPUs only as DRA devices of the class gpu.nvidia.com
    assert main(["where", "2", "--snapshot", DRA]) == 0
    assert capsys.readouterr().out.startswith(
        "✅ fits — 2 × gpu.nvidia.com on one node: free now on dra-a100-2, dra-l4-1\n")


def test_the_watch_cache_keeps_the_holdings_current(tmp_path: Path) -> None:
    def a10(source: Any) -> tuple[int, int, list[tuple[str, int, int]]]:
        snapshot = source.cluster_snapshot()
        group = next(g for g in capacity_view(snapshot.rows, DEFAULT_CONFIG).groups
                     if g.pool == "a10-full")
        return group.held, group.free, [(h.namespace, h.gpus, h.pods) for h in group.holders]

    with FakeKubeAPI(SCENARIOS / "seven-states") as server:
        source = watch_source(server, tmp_path).start()
        try:
            assert source.wait_ready(5)
            # ml/train-a and team-b/train-b hold 1 each of gpu-a10-full's 2
            assert a10(source) == (2, 0, [("ml", 1, 1), ("team-b", 1, 1)])
            server.delete("Pod", "ml", "train-a")
            eventually(lambda: a10(source) == (1, 1, [("team-b", 1, 1)]))
            finished = copy.deepcopy(server.get_object("Pod", "team-b", "train-b"))
            finished["status"]["phase"] = "Succeeded"
            server.apply(finished)  # leaves the field selector: DELETED
            eventually(lambda: a10(source) == (0, 2, []))
            newcomer = copy.deepcopy(finished)
            newcomer["metadata"].update(name="train-c", uid="c0ffee")
            newcomer["status"]["phase"] = "Running"
            server.apply(newcomer)
            eventually(lambda: a10(source) == (1, 1, [("team-b", 1, 1)]))
            # a pending pod is among the snapshot's pods, as a cold read lists it
            assert "research/full" in {f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                                       for p in source.cluster_snapshot().pods}
        finally:
            source.stop()


def test_a_cordoned_node_is_never_offered_behind_a_taint(tmp_path: Path) -> None:
    def cordon(nodes: dict[str, Any]) -> None:
        _node(nodes, "gpu-h100-reserved")["spec"]["unschedulable"] = True

    snapshot = _edited_nodes(SEVEN, tmp_path, cordon)
    answer = where(snapshot.rows, WhereAsk(2, "nvidia.com/gpu"), DEFAULT_CONFIG)
    # gpu-h100-reserved still has 8 free, but cordoned: only gpu-a100-1 is named
    assert answer.fit_nodes == ("gpu-a100-1",) and answer.behind_taints == ()
    h100 = next(g for g in capacity_view(snapshot.rows, DEFAULT_CONFIG).groups
                if g.pool == "h100")
    assert "cordoned (node.kubernetes.io/unschedulable:NoSchedule) on 1 of 1: no new pods" \
        in group_lines(h100)


# -- idle held GPUs (DCGM exporter through Prometheus) ---------------------------------------

def test_idle_held_gpus_are_counted_from_dcgm(capsys: pytest.CaptureFixture[str]) -> None:
    with seven_states_prometheus() as prometheus:
        assert main(["capacity", "--snapshot", SEVEN, "--prometheus", PROMETHEUS,
                     "--format", "json"]) == 0
        [query] = [q["query"][0] for q in sent_queries(prometheus)]
    assert query.startswith('max_over_time(DCGM_FI_DEV_GPU_UTIL{Hostname=~"gpu-a10-full|')
    assert query.endswith('"}[1h])')
    idle = {g["pool"]: g["idle_held"] for g in json.loads(capsys.readouterr().out)["groups"]}
    # tests/fixtures/dcgm/seven-states/utilisation.json: on gpu-a10-full GPU 1 is at 0 with
    # pod team-b/train-b (which the API server says holds 1 there), GPU 0 at 87 (ml/train-a);
    # gpu-a100-1's research/ok GPUs at 64 and 71; no other GPU names a pod
    assert idle == {"h100": 0, "a100": 0, "v100-broken": 0, "a10-full": 1, "t4-noplugin": 0}
    with seven_states_prometheus():
        assert main(["capacity", "a10-full", "--snapshot", SEVEN, "--prometheus",
                     PROMETHEUS]) == 0
    assert "  idle all of the last hour: 1 of the 2 held\n" in capsys.readouterr().out


def test_a_pod_the_api_server_does_not_see_holding_is_not_counted() -> None:
    snapshot = Snapshot.from_dir(SEVEN)
    view = with_idle_held(capacity_view(snapshot.rows, DEFAULT_CONFIG), snapshot.rows, {
        "gpu-a10-full": ["team-b/train-b", "gpu-operator/nvidia-dcgm-exporter-x"],
        "gpu-h100-reserved": ["research/ghost"]})
    assert {g.pool: g.idle_held for g in view.groups}["a10-full"] == 1
    assert {g.pool: g.idle_held for g in view.groups}["h100"] == 0


def test_without_prometheus_the_view_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, f"{PROMETHEUS}/api/v1/query",
                 body=requests.ConnectionError("refused"))
        assert main(["capacity", "--snapshot", SEVEN, "--prometheus", PROMETHEUS]) == 0
    out = capsys.readouterr().out
    assert out.startswith("seven-states: 18 GPUs on 5 of 6 nodes: 4 held, 10 free\n"
                          f"no telemetry: Prometheus at {PROMETHEUS} is unreachable")
    assert "idle all of the last hour" not in out


# kueue-basics' queues.json: team-a-cq gives flavor a100 8 nvidia.com/gpu, all 8 reserved
# (status.flavorsReservation); team-b-cq flavor h100 16, all 16 reserved; team-c-cq names
# ResourceFlavor h200, which is not among the flavors (a100, h100); ml has no LocalQueue.
WHERE_QUEUES = [
    ("team-a", 4, "Kueue, LocalQueue team-a/team-a-lq: queued: flavor a100 has 0 of 8 "
                  "nvidia.com/gpu free; it needs 4."),
    ("team-b", 8, "Kueue, LocalQueue team-b/team-b-lq: queued: flavor h100 has 0 of 16 "
                  "nvidia.com/gpu free; it needs 8."),
    ("ml", 1, "Kueue: namespace ml has no LocalQueue, so a Job there with "
              "kueue.x-k8s.io/queue-name would wait for one (LocalQueues: team-a/team-a-lq, "
              "team-b/team-b-lq, team-c/team-c-lq)."),
]


@pytest.mark.parametrize(("namespace", "count", "sentence"), WHERE_QUEUES)
def test_where_on_a_kueue_cluster_adds_the_namespace_s_queue_quota(
        namespace: str, count: int, sentence: str,
        read_cluster: Callable[[str], Snapshot]) -> None:
    snapshot = read_cluster("kueue-basics")
    answer = where(snapshot.rows, WhereAsk(count, "nvidia.com/gpu", namespace=namespace),
                   DEFAULT_CONFIG)
    assert answer.queues == (sentence,)
    assert sentence in where_text(answer)


def test_where_on_an_inactive_cluster_queue_says_why_nothing_is_admitted() -> None:
    answer = _where(Snapshot.from_dir(SCENARIOS / "kueue-basics"),
                    WhereAsk(1, "nvidia.com/gpu", namespace="team-c"))
    assert len(answer.queues) == 1
    assert answer.queues[0].startswith("Kueue, LocalQueue team-c/team-c-lq: queued: ")
    assert "ClusterQueue team-c-cq is inactive: it names ResourceFlavor h200, which does not " \
           "exist (existing: a100, h100)" in answer.queues[0]


def test_where_without_kueue_says_nothing_of_queues() -> None:
    answer = _where(Snapshot.from_dir(SCENARIOS / "seven-states"), WhereAsk(1, "nvidia.com/gpu"))
    assert answer.queues == ()
    assert "Kueue" not in where_text(answer)
