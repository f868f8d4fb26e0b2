"""gpuwhy against its floors, in one run: `python -m bench [--sizes 500x15000,5000x150000]`.

For each size, a generated dump (bench/generate.py, seeded; kept in --workdir and reused)
and, measured in this one process and run:
- parse floor: a plain ``json.load`` of every dump file with GC off;
- ``Snapshot.from_dir`` of the dump (ratio to the parse floor);
- first triage on a fresh snapshot (an any-node pod, and a HAMi pod on another fresh load);
- warm triage p50 / p99 over every pending pod of the dump (300, 10 kinds), in three rounds,
  each against its own bare loop: one Python pass over all nodes reading labels, taints vs
  tolerations, GPU capacity / allocatable and the node's summed GPU requests from a
  precomputed dict; and the full garbage collections during each round (gc.callbacks);
- a gang of 1,000 pods (bench/gang.py) added to that snapshot: the triage of one of its pods
  (the gang judged as a whole), against the bare loop;
- ``gpuwhy triage NS/POD --snapshot DIR`` end to end in a child process, its peak RSS, against
  the parse floor measured the same way (a fresh process, page cache warm for both; the
  fastest of three alternating runs of each);
- ``gpuwhy --help`` start-up against ``python -c pass``;
- the watch cache of ``gpuwhy serve`` in a child process, against tests/kubeapi.py serving
  the dump on 127.0.0.1: time to ready (against the parse floor of nodes + pods), the CPU
  time the cache and the server spent until then, RSS when ready, API requests per triage;
  and the App Home, the capacity view and a ``where`` from it, against the bare loop over
  the cached nodes;
- cold ``gpuwhy triage NS/POD --no-record`` against that server, as a process, against
  ``kubectl describe pod`` run the same way (each with a fresh HOME, so kubectl's first run
  reads discovery; best of a few runs and the first run of each), at the recorded scale
  (seven-states) and at each size.
Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.gang import measure_gang
from bench.generate import GENERATOR_VERSION, PENDING_NAMESPACE, generate, pending_refs

GIB = 1024 ** 3
RECORDED = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "scenarios" / "seven-states"
GPU = "nvidia.com/gpu"


def _seconds(action: Callable[[], object],
             clock: Callable[[], float] = time.perf_counter) -> float:
    started = clock()
    action()
    return clock() - started


def dump_dir(workdir: Path, nodes: int, pods: int, seed: int) -> Path:
    directory = workdir / f"dump-{nodes}x{pods}-seed{seed}-v{GENERATOR_VERSION}"
    stamp = directory / ".complete"
    if not stamp.exists():
        print(f"generating {nodes:,} nodes / {pods:,} pods in {directory} ...", flush=True)
        generate(directory, nodes, pods, seed)
        stamp.write_text("ok\n")
    return directory


def parse_floor(directory: Path, names: tuple[str, ...] | None = None) -> float:
    """A plain json.load of the dump files with GC off (the files one at a time)."""
    from triage.snapshot import DUMP_FILES

    total = 0.0
    for filename in names or tuple(DUMP_FILES):
        path = directory / filename
        if not path.exists():  # a dump may leave a list out (no DRA objects)
            continue
        gc.disable()
        started = time.perf_counter()
        with path.open(encoding="utf-8") as file:
            document = json.load(file)
        total += time.perf_counter() - started
        gc.enable()
        del document
        gc.collect()
    return total


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        key = toleration.get("key") or ""
        if (not key and toleration.get("operator") == "Exists") or key == taint.get("key"):
            return True
    return False


def bare_loop(nodes: list[Mapping[str, Any]], used: Mapping[str, int],
              tolerations: list[Mapping[str, Any]]) -> int:
    """The floor: one pass over every node reading what the funnel must read."""
    fits = 0
    for node in nodes:
        meta = node["metadata"]
        pool = (meta.get("labels") or {}).get("pool")
        blocked = any(not _tolerates(tolerations, t) for t in (node.get("spec") or {})
                      .get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute"))
        status = node["status"]
        capacity = (status.get("capacity") or {}).get(GPU)
        allocatable = (status.get("allocatable") or {}).get(GPU)
        free = int(allocatable or 0) - used.get(meta["name"], 0)
        if pool is not None and not blocked and capacity is not None and free > 0:
            fits += 1
    return fits


def floor_seconds(snapshot: Any) -> float:
    used = {name: int(snapshot.requested_on(name).get(GPU, 0))
            for name in (n["metadata"]["name"] for n in snapshot.nodes)}
    return loop_floor(snapshot.nodes, used)


def loop_floor(nodes: list[Mapping[str, Any]], used: Mapping[str, int],
               clock: Callable[[], float] = time.perf_counter) -> float:
    """The bare loop's median time over 21 passes (a pod tolerating not-ready nodes), by
    ``clock``."""
    tolerations: list[Mapping[str, Any]] = [{"key": "node.kubernetes.io/not-ready",
                                             "operator": "Exists", "effect": "NoExecute"}]
    runs = [_seconds(lambda: bare_loop(nodes, used, tolerations), clock) for _ in range(21)]
    return statistics.median(runs)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _fresh_snapshot(directory: Path, floor: float, row: Callable[..., None]) -> Any:
    from triage.snapshot import Snapshot

    gc.collect()
    started = time.perf_counter()
    snapshot = Snapshot.from_dir(directory)
    row("Snapshot.from_dir", time.perf_counter() - started, floor, "× parse floor")
    return snapshot


def measure_snapshot(directory: Path, row: Callable[..., None], gang: bool = True) -> None:
    """Load and triage rows; the warm triages run as every answer of gpuwhy runs
    (bot.clusters.sources.answered: the collector held off, the duration metric, the log lines)."""
    from bot.clusters.sources import answered
    from triage.classify import triage
    from triage.refs import parse_ref

    floor = parse_floor(directory)
    row("parse floor: json.load of the dump, GC off", floor, None, "")
    refs = [parse_ref(r) for r in pending_refs()]
    hami = next(r for r in refs if r.name.startswith("hami-40g"))
    snapshot = _fresh_snapshot(directory, floor, row)
    row("first triage on a fresh snapshot (HAMi pod)",
        _seconds(lambda: triage(snapshot, hami)), None, "")
    del snapshot
    snapshot = _fresh_snapshot(directory, floor, row)
    any_node = next(r for r in refs if r.name.startswith("any-node"))
    row("first triage on a fresh snapshot (any-node pod)",
        _seconds(lambda: triage(snapshot, any_node)), None, "")
    for round_number in range(1, WARM_ROUNDS + 1):
        floor_loop = floor_seconds(snapshot)
        row(f"round {round_number}: bare loop over the nodes (floor)", floor_loop, None, "")
        with FullCollections() as full:
            timings = [_seconds(lambda ref=ref: answered("snapshot", lambda: triage(
                snapshot, ref))) for ref in refs]
        row(f"  warm triage p50 ({len(refs)} pending pods)", percentile(timings, 0.5),
            floor_loop, "× bare loop")
        row("  warm triage p99", percentile(timings, 0.99), floor_loop, "× bare loop")
        print(f"    full collections during the warm triages: {full.count} "
              f"({full.seconds * 1000:.1f} ms)")
    if gang:
        measure_gang(snapshot, str(any_node), floor_seconds, _seconds, row)


WARM_ROUNDS = 3  # the machine is shared: each round has its own floor


class FullCollections:
    """Counts the garbage collector's full (generation 2) collections and their time, through
    gc.callbacks, while in the with block."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._started = 0.0

    def _callback(self, phase: str, info: Mapping[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._started

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def _child(command: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in bytes, stdout) of a child process.

    The peak RSS comes from GNU time run as the child: a forked child's own rusage would count
    this process's pages (it holds a whole snapshot) until its exec.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        code = subprocess.call(["/usr/bin/time", "-f", "%M", *command], stdout=out, stderr=err)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if code not in (0, 1):
        raise RuntimeError(f"{command}: exit {code}: {stderr[-500:]}")
    return elapsed, int(stderr.strip().splitlines()[-1]) * 1024, stdout


CLI_RUNS = 3  # floor and CLI alternate; the fastest of each counts (the machine is shared)
# The parse floor in a fresh process, as the CLI runs (not in this one, after other rows);
# timed inside, around the json.load calls only: start-up and exit count against the CLI.
_FLOOR_CHILD = ("import sys; from pathlib import Path; from bench.__main__ import parse_floor; "
                "print(parse_floor(Path(sys.argv[1])))")


def warm_page_cache(directory: Path) -> None:
    """Read every dump file once, so neither the floor nor the CLI waits for the disk."""
    for path in directory.glob("*.json"):
        with path.open("rb") as file:
            while file.read(1 << 24):
                pass


def measure_cli(directory: Path, row: Callable[..., None]) -> None:
    ref = next(r for r in pending_refs() if r.startswith(f"{PENDING_NAMESPACE}/any-node"))
    command = [sys.executable, "-m", "bot.cli", "triage", ref, "--snapshot", str(directory),
               "--no-record", "--format", "json"]
    warm_page_cache(directory)
    floors: list[float] = []
    runs: list[tuple[float, int]] = []
    for _ in range(CLI_RUNS):
        floors.append(float(_child([sys.executable, "-c", _FLOOR_CHILD, str(directory)])[2]))
        elapsed, rss, _ = _child(command)
        runs.append((elapsed, rss))
    floor = min(floors)
    row(f"parse floor in a fresh process (fastest of {CLI_RUNS})", floor, None, "")
    row("gpuwhy triage NS/POD --snapshot DIR, end to end", min(e for e, _ in runs), floor,
        "× parse floor")
    row("  its peak RSS", max(r for _, r in runs) / GIB, None, "GiB", unit="GiB")
    print(f"    each run, floor / CLI (s): "
          f"{', '.join(f'{f:.2f} / {e:.2f}' for f, (e, _) in zip(floors, runs, strict=True))}")


def measure_startup(row: Callable[..., None]) -> None:
    floor = min(_child([sys.executable, "-c", "pass"])[0] for _ in range(5))
    row("python -c pass (floor)", floor, None, "")
    help_time = min(_child([sys.executable, "-m", "bot.cli", "--help"])[0] for _ in range(5))
    row("gpuwhy --help", help_time, floor, "× python start-up")
    with tempfile.TemporaryDirectory() as empty:
        command = [sys.executable, "-X", "importtime", "-m", "bot.cli", "triage", "a/b",
                   "--snapshot", empty, "--no-record"]
        process = subprocess.run(command, capture_output=True, text=True, check=False)
    heavy = sorted({line.split("|")[-1].strip().split(".")[0]
                    for line in process.stderr.splitlines() if line.startswith("import time:")}
                   & {"sqlalchemy", "alembic", "kubernetes", "slack_bolt", "slack_sdk"})
    print(f"    gpuwhy triage --snapshot imports of store / client / slack: "
          f"{', '.join(heavy) or 'none'}")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ready_rows(row: Callable[..., None], ready: Mapping[str, float], floor: float,
               ratio_unit: str, server: tuple[str, float]) -> None:
    """The watch child's ready line as rows: time to ready against its floor, the CPU time
    of the cache and of the server (``server``: its name and CPU seconds), the RSS."""
    row("gpuwhy serve watch cache: ready", ready["ready_seconds"], floor, ratio_unit)
    row("  its CPU time until ready", ready["cpu_seconds"], ready["ready_seconds"],
        "× ready time")
    row(f"  {server[0]}'s CPU time until then", server[1], ready["ready_seconds"],
        "× ready time")
    row("  its RSS when ready", ready["rss_ready"] / GIB, None, "GiB", unit="GiB")


def measure_watch(directory: Path, row: Callable[..., None]) -> None:
    """The cache in a child process; tests/kubeapi.py serves it from threads of this process,
    which otherwise only waits: this process's CPU time until the child is ready is the
    server's."""
    from tests.kubeapi import FakeKubeAPI

    floor = parse_floor(directory, ("nodes.json", "pods.json"))
    server = FakeKubeAPI(directory).start()
    try:
        with tempfile.TemporaryDirectory() as work:
            kubeconfig = server.kubeconfig(Path(work) / "kubeconfig")
            refs = pending_refs()[:20]
            command = [sys.executable, "-m", "bench.watch_child", str(kubeconfig), *refs]
            cpu_before = _cpu_seconds()
            with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
                assert child.stdout is not None
                ready_line = child.stdout.readline()  # printed the moment the cache is ready
                server_cpu = _cpu_seconds() - cpu_before
                rest = child.stdout.read()
            if child.returncode != 0 or not ready_line:
                raise RuntimeError(f"{command[:3]}: exit {child.returncode}")
        ready, result = json.loads(ready_line), json.loads(rest.strip().splitlines()[-1])
        ready_rows(row, ready, floor, "× parse floor of nodes + pods",
                   ("the test API server", server_cpu))
        row("  its RSS after the triages", result["rss_after"] / GIB, None, "GiB", unit="GiB")
        floor_views = result["views_floor"]
        row("  bare loop over the cached nodes (floor)", floor_views, None, "")
        row("  App Home from the cache (with 8 stuck workloads triaged)", result["home"],
            floor_views, "× bare loop")
        print(f"    App Home view: {result['home_blocks']} blocks (a view takes 100); Slack's "
              f"checks: {'; '.join(result['home_problems']) or 'passed'}")
        row("  capacity view from the cache", result["capacity"], floor_views, "× bare loop")
        row("  where 8 nvidia.com/gpu from the cache", result["where"], floor_views,
            "× bare loop")
        counts = result["requests"]
        print(f"    API requests per triage of a pending pod from the cache: "
              f"min {min(counts)}, max {max(counts)} over {len(counts)} pods")
    finally:
        server.stop()


def _best(command: list[str], env: Mapping[str, str], runs: int) -> tuple[float, str]:
    """(fastest wall time, its stdout) of ``runs`` runs of a command that must succeed."""
    best, out = float("inf"), ""
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode not in (0, 1):  # 1: the pod would not schedule
            raise RuntimeError(f"{command}: exit {done.returncode}: {done.stderr[-500:]!r}")
        if elapsed < best:
            best, out = elapsed, done.stdout.decode()
    return best, out


def _pod_list_bytes(server: Any, page_size: int) -> int:
    """The bytes of the paged list of every non-terminated pod (what an any-node answer
    reads), fetched raw."""
    import urllib.parse
    import urllib.request

    from triage.cluster.resources import NON_TERMINATED

    total, token = 0, ""
    while True:
        query = {"fieldSelector": NON_TERMINATED, "limit": str(page_size)}
        if token:
            query["continue"] = token
        url = f"{server.url}/api/v1/pods?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url) as response:
            data = response.read()
        total += len(data)
        token = json.loads(data)["metadata"].get("continue") or ""
        if not token:
            return total


def measure_cold(directory: Path, refs: list[str], row: Callable[..., None],
                 runs: int = 3) -> None:
    """Cold ``gpuwhy triage`` as a process against the test API server serving the dump,
    each ref against its floor: a process importing the client and sending the same requests
    raw, in parallel, reading the answers undecoded (bench/replay.py); best of ``runs``."""
    from tests.kubeapi import FakeKubeAPI
    from triage.cluster.limits import DEFAULT_PAGE_SIZE

    # What an installed gpuwhy has: its modules compiled (pip compiles them on install).
    subprocess.run([sys.executable, "-m", "compileall", "-q", "bot", "triage", "scoring"],
                   cwd=Path(__file__).resolve().parents[1], check=True, capture_output=True)
    server = FakeKubeAPI(directory).start()
    try:
        full_list = _pod_list_bytes(server, DEFAULT_PAGE_SIZE)
        with tempfile.TemporaryDirectory() as home:
            kubeconfig = str(server.kubeconfig(Path(home) / "kubeconfig"))
            env = {key: value for key, value in os.environ.items()
                   if not key.startswith(("GPUWHY_", "KUBECONFIG"))} | {"HOME": home}
            client_import, _ = _best(
                [sys.executable, "-c", "import kubernetes.client, kubernetes.config"], env, runs)
            row(f"  python importing the kubernetes client, best of {runs}", client_import,
                None, "")
            totals = [0.0, 0.0]
            for ref in refs:
                mark = server.mark()
                gpuwhy, _ = _best([sys.executable, "-m", "bot.cli", "triage", ref, "--no-record",
                                   "--kubeconfig", kubeconfig], env, runs)
                sent = server.requests[mark:]
                one_run = sent[len(sent) - len(sent) // runs:]  # the runs read alike
                pod_bytes = sum(size for request, size in server.sent[-len(one_run):]
                                if request.path == "/api/v1/pods")
                plan = Path(home) / "requests.json"
                plan.write_text(json.dumps({"server": server.url, "token": "test-token",
                                            "paths": [_path_of(r) for r in one_run]}))
                floor, received = _best([sys.executable, "-m", "bench.replay", str(plan)], env,
                                        runs)
                totals[0] += gpuwhy
                totals[1] += floor
                if len(refs) <= 3:
                    row(f"cold gpuwhy triage {ref}, best of {runs}", gpuwhy, floor,
                        "× its floor")
                    row("  its floor: client import + its requests raw in parallel", floor,
                        None, "")
                    print(f"    {len(one_run)} requests, {int(received.split()[0]):,} bytes; "
                          f"pods read: {pod_bytes:,} bytes = {pod_bytes / full_list:.1%} of the "
                          f"non-terminated pod list's {full_list:,}")
                if f"/{ANY_NODE}" in ref:
                    decoded_floors(plan, env, runs, gpuwhy, floor, row)
            if len(refs) > 3:
                row(f"cold gpuwhy triage of {len(refs)} refs, best of {runs} each, summed",
                    totals[0], totals[1], "× their floors")
                row("  their floors summed: client import + the requests raw in parallel",
                    totals[1], None, "")
    finally:
        server.stop()


ANY_NODE = "any-node"  # the pod whose answer reads the whole pod list
DECODED_FLOORS = {  # bench/replay.py --decode: what each adds to the undecoded floor
    "json": "json.loads of every body",
    "msgspec": "msgspec.json.decode of every body, untyped",
    "fields": "pod pages into Structs of the fields an answer reads",
    "gpuwhy": "pod pages decoded as gpuwhy decodes them (kept_pods)",
}
# Decoding whole objects costs 5-7x the undecoded floor (25 s a run at 5,000 nodes): one run
# of each says so, and keeps the whole bench inside its time.
WHOLE_OBJECT_MODES = frozenset({"json", "msgspec"})


def decoded_floors(plan: Path, env: Mapping[str, str], runs: int, gpuwhy: float,
                   floor: float, row: Callable[..., None]) -> None:
    """The same requests replayed with each body decoded where it is received (best of
    ``runs`` each, one run of the whole-object modes), as rows against the undecoded
    ``floor``, and gpuwhy's time against each."""
    for mode, what in DECODED_FLOORS.items():
        once = mode in WHOLE_OBJECT_MODES
        decoded, out = _best([sys.executable, "-m", "bench.replay", str(plan), "--decode", mode],
                             env, 1 if once else runs)
        received, items = (int(part) for part in out.split())
        row(f"  floor + {what}{', one run' if once else ''}", decoded, floor,
            "× undecoded floor")
        print(f"    gpuwhy {gpuwhy / decoded:.2f}× this floor; {received:,} bytes, "
              f"{items:,} list items decoded")


def _process_cpu(pid: int) -> float:
    """A process's user + system CPU seconds so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PAGED_ANSWERS = 30  # slash commands answered from the cache at the page-rendered sizes


def measure_paged(nodes: int, pods: int, seed: int, row: Callable[..., None],
                  profile: bool, same_times: bool = False,
                  profile_answers: bool = False) -> None:
    """The watch cache of ``gpuwhy serve`` at a size no dump holds: bench/pageserver.py, in a
    child process, renders each list page as it is asked for. Floors of the same run: the raw
    list time (bench.pageserver.raw_list: nodes and non-terminated pods, pages of 500, each
    list in a thread of this process as the cache's reflectors list) and the bare loop over
    the cached nodes (in the cache's process). The cache's child (bench/watch_child.py
    --answers): time to ready, RSS, then PAGED_ANSWERS slash commands answered as
    ``post_answer`` answers them (its ``answer``), API requests per answer, RSS after;
    with ``profile_answers``, those answers once more under cProfile (after the timed ones)."""
    import threading

    from bench.pageserver import NON_TERMINATED, paged_pending_refs, raw_list, write_kubeconfig
    from triage.cluster.limits import DEFAULT_PAGE_SIZE

    started = time.perf_counter()
    with subprocess.Popen([sys.executable, "-m", "bench.pageserver", "--nodes", str(nodes),
                           "--pods", str(pods), "--seed", str(seed),
                           *(["--same-times"] if same_times else [])],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as server:
        assert server.stdout is not None and server.stdin is not None
        url = server.stdout.readline().strip()
        print(f"    page server up in {time.perf_counter() - started:.1f} s at {url}")
        try:
            lists: dict[str, tuple[int, int]] = {}

            def list_raw(path: str, query: dict[str, str]) -> None:
                lists[path] = raw_list(url, path, query, DEFAULT_PAGE_SIZE)

            threads = [threading.Thread(target=list_raw, args=args) for args in (
                ("/api/v1/nodes", {}), ("/api/v1/pods", {"fieldSelector": NON_TERMINATED}))]
            server_cpu = _process_cpu(server.pid)
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            floor = time.perf_counter() - started
            server_cpu = _process_cpu(server.pid) - server_cpu
            row("raw list floor: nodes + pods paged raw (urllib, undecoded)", floor, None, "")
            print("    " + "; ".join(f"{path}: {pages:,} pages, {size / GIB:.2f} GiB"
                                     for path, (pages, size) in lists.items())
                  + f"; the page server's CPU: {server_cpu:.1f} s")
            with tempfile.TemporaryDirectory() as work:
                kubeconfig = str(write_kubeconfig(url, Path(work) / "kubeconfig"))
                if profile:
                    done = subprocess.run([sys.executable, "-m", "bench.watch_child",
                                           "--profile", kubeconfig], capture_output=True,
                                          text=True, check=True)
                    print("    profile of the ready path's lists:")
                    print("      " + "\n      ".join(done.stdout.splitlines()))
                command = [sys.executable, "-m", "bench.watch_child", "--answers",
                           *(["--profile-answers"] if profile_answers else []), kubeconfig,
                           *paged_pending_refs()[:PAGED_ANSWERS]]
                server_cpu = _process_cpu(server.pid)
                with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
                    assert child.stdout is not None
                    ready_line = child.stdout.readline()
                    server_cpu = _process_cpu(server.pid) - server_cpu
                    rest = child.stdout.read()
                if child.returncode != 0 or not ready_line:
                    raise RuntimeError(f"{command[:4]}: exit {child.returncode}")
        finally:
            server.stdin.close()
    ready, result = json.loads(ready_line), json.loads(rest.strip().splitlines()[-1])
    ready_rows(row, ready, floor, "× raw list floor", ("the page server", server_cpu))
    row(f"  its RSS after {PAGED_ANSWERS} slash commands", result["rss_after"] / GIB, None,
        "GiB", unit="GiB")
    loop = result["loop_floor"]
    row("  bare loop over the cached nodes (floor)", loop, None, "")
    answers = result["answers"]
    row(f"  slash command answer p50 ({len(answers)} pending pods)",
        percentile(answers, 0.5), loop, "× bare loop")
    row("  slash command answer p99", percentile(answers, 0.99), loop, "× bare loop")
    answers_cpu, loop_cpu = result["answers_cpu"], result["loop_floor_cpu"]
    print(f"    in thread CPU time: bare loop {loop_cpu * 1000:.1f} ms; answer p50 "
          f"{percentile(answers_cpu, 0.5) / loop_cpu:.2f}×, p99 "
          f"{percentile(answers_cpu, 0.99) / loop_cpu:.2f}×")
    print("    by kind, median (max) × bare loop, wall / CPU: " + "; ".join(
        f"{kind} {statistics.median(wall) / loop:.2f} ({max(wall) / loop:.2f}) / "
        f"{statistics.median(spent) / loop_cpu:.2f} ({max(spent) / loop_cpu:.2f})"
        for kind, (wall, spent) in _by_kind(paged_pending_refs()[:PAGED_ANSWERS], answers,
                                            answers_cpu).items()))
    print(f"    full collections during the answers: {result['full_collections']} "
          f"({result['full_collection_seconds'] * 1000:.1f} ms)")
    counts = result["requests"]
    print(f"    API requests per answer from the cache: min {min(counts)}, max {max(counts)} "
          f"over {len(counts)} pods")


def _by_kind(refs: list[str], wall: list[float], cpu: list[float],
             ) -> dict[str, tuple[list[float], list[float]]]:
    """The answers' wall and CPU times by the kind of pending pod (its name less the number)."""
    kinds: dict[str, tuple[list[float], list[float]]] = {}
    for ref, seconds, spent in zip(refs, wall, cpu, strict=True):
        times = kinds.setdefault(ref.rpartition("/")[2].rpartition("-")[0], ([], []))
        times[0].append(seconds)
        times[1].append(spent)
    return kinds


def _path_of(request: Any) -> str:
    from urllib.parse import urlencode

    return request.path + (f"?{urlencode(request.query)}" if request.query else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500x15000,5000x150000",
                        help="NODESxPODS,... (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "gpuwhy-bench"))
    parser.add_argument("--paged-sizes", default="20000x200000,100000x1000000",
                        help="NODESxPODS,... served page by page, watch cache only "
                             "(default: %(default)s; '' for none)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile the watch cache's lists at the paged sizes")
    parser.add_argument("--same-times", action="store_true",
                        help="at the paged sizes, every pod of a kind and node of a pool with "
                             "the same times (the generator's shape before times varied)")
    parser.add_argument("--profile-answers", action="store_true",
                        help="also profile the slash command answers at the paged sizes "
                             "(after the timed ones)")
    parser.add_argument("--skip", default="",
                        help="comma list of: snapshot,gang,cli,startup,watch,cold")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {platform.platform()}")

    def row(what: str, value: float, floor: float | None, ratio_unit: str,
            unit: str = "s") -> None:
        shown = f"{value * 1000:10.3f} ms" if unit == "s" else f"{value:9.2f} {unit}"
        ratio = f"{value / floor:7.2f} {ratio_unit}" if floor else ""
        print(f"  {what:<62} {shown}  {ratio}", flush=True)

    if "startup" not in skip:
        print("start-up")
        measure_startup(row)
    if "cold" not in skip:
        print(f"recorded cluster {RECORDED.name}")
        measure_cold(RECORDED, sorted(json.loads((RECORDED / "expected.json").read_text())),
                     row)
    for size in filter(None, args.sizes.split(",")):
        nodes, pods = (int(part) for part in size.split("x"))
        directory = dump_dir(workdir, nodes, pods, args.seed)
        on_disk = sum(f.stat().st_size for f in directory.glob("*.json"))
        print(f"{nodes:,} nodes / {pods:,} pods ({on_disk / GIB:.2f} GiB on disk)")
        if "snapshot" not in skip:
            measure_snapshot(directory, row, "gang" not in skip)
        if "cli" not in skip:
            measure_cli(directory, row)
        if "watch" not in skip:
            measure_watch(directory, row)
        if "cold" not in skip:
            measure_cold(directory, [next(r for r in pending_refs() if r.startswith(
                f"{PENDING_NAMESPACE}/{kind}")) for kind in ("exhausted", ANY_NODE)], row)
    for size in filter(None, args.paged_sizes.split(",")):
        nodes, pods = (int(part) for part in size.split("x"))
        print(f"{nodes:,} nodes / {pods:,} pods, each list page rendered as it is asked for")
        measure_paged(nodes, pods, args.seed, row, args.profile, args.same_times,
                      args.profile_answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
