"""DCGM facts into a Verdict: its devices filled in, XID and ECC evidence for the nodes an
answer names, how long the holders of exhausted GPUs have held them. The caller passes the
time, so nothing here reads a clock."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from itertools import islice

from scoring.verdict import Device, Evidence, Holding, NodeReport, NodeReports, Verdict
from triage.dcgm.series import DCGM_HOLDERS, GPU_UUID_PREFIX, GpuFacts, Telemetry
from triage.vocabulary import Cause

# Answers about a node's health gain the XIDs of the nodes they name.
XID_CAUSES = frozenset({Cause.ALLOCATABLE_ZERO, Cause.NO_GPU_NODE, Cause.NODE_RUNTIME_ERROR,
                        Cause.SCHEDULED})

# What the common XIDs mean (NVIDIA's XID catalogue), and whether they point at the card or
# the node rather than at the application that ran on it.
XID_MEANINGS: dict[int, tuple[str, bool]] = {
    13: ("graphics engine exception, usually the application", False),
    31: ("GPU memory page fault, usually the application", False),
    32: ("invalid or corrupted push buffer stream", True),
    43: ("GPU stopped processing, usually the application", False),
    45: ("preemptive cleanup after earlier errors", False),
    48: ("double-bit ECC error", True),
    61: ("internal micro-controller breakpoint", True),
    62: ("internal micro-controller halt", True),
    63: ("ECC page retirement or row remapping recorded", True),
    64: ("ECC page retirement or row remapping failed", True),
    74: ("NVLink error", True),
    79: ("GPU has fallen off the bus", True),
    92: ("high single-bit ECC error rate", True),
    94: ("contained ECC error", True),
    95: ("uncontained ECC error", True),
    119: ("GSP RPC timeout", True),
    120: ("GSP error", True),
}





def with_telemetry(verdict: Verdict, telemetry: Telemetry, source: str) -> Verdict:
    """A copy of ``verdict`` with DCGM's facts on the devices of the nodes it read, and as
    evidence: fresh XIDs for answers about a node's health, each holder's utilisation for
    ``exhausted``. ``source`` names where the facts came from, for the telemetry line."""
    strangers: list[str] = []
    merged = []
    for report in _in_answer_order(verdict.nodes, [n for n, gpus in telemetry.gpus.items()
                                                   if gpus]):
        copied = copy.deepcopy(report)
        copied.devices = merge_devices(copied.devices, telemetry.gpus[report.name],
                                       holders_of(copied), strangers)
        merged.append(copied)
    # a copy with the few nodes read changed: the others are the answer's own reports,
    # which nothing here changes (100,000 of them, on the largest clusters)
    result = replace(verdict, evidence=list(verdict.evidence),
                     nodes=_replacing(verdict.nodes, merged))
    when = _clock(telemetry.at)
    problems = "; ".join(telemetry.problems)
    result.telemetry = (f"telemetry: DCGM via {source} at {when}"
                        + (f" (incomplete: {problems})" if problems else "")
                        + _strangers_note(strangers))
    result.evidence = (result.evidence + xid_evidence(result)
                       + holder_evidence(result, telemetry.at))
    _failed_gpus_first(result)
    return result


def _failed_gpus_first(verdict: Verdict) -> None:
    """A scheduled pod whose own GPU reported a fresh XID that points at the card (79:
    fallen off the bus) is stuck on hardware, not on its container: the device's row says
    so instead of "fits", and the next action starts with the GPU."""
    if verdict.cause != Cause.SCHEDULED or not verdict.nodes:
        return
    report = verdict.nodes[0]
    failed = [device for device in report.devices
              if device.xid and device.xid_new and device.xid_at
              and XID_MEANINGS.get(device.xid, ("", False))[1]
              and (verdict.ref in device.holders or not any(d.holders for d in report.devices))]
    for device in failed:
        device.code = f"XID {device.xid} at {_clock_iso(device.xid_at or '')}"
    if failed:
        gpus = ", ".join(f"GPU {d.index} (XID {d.xid}{_meaning(d.xid or 0)})" for d in failed)
        verdict.action = (f"{gpus} on {report.name} failed under it: cordon and drain "
                          f"{report.name}, have the GPU reset or replaced, then recreate the "
                          f"pod elsewhere. {verdict.action}")


def holders_of(report: NodeReport) -> frozenset[str] | None:
    """The pods the API server says hold the node's GPUs; None when it was not asked (no
    extended-resource request: a DRA pod, no GPU request)."""
    return None if report.allocatable is None else frozenset(h.pod for h in report.held)


def _strangers_note(strangers: list[str]) -> str:
    """DCGM naming pods that hold no GPU on the node is a label mix-up, typically the
    exporter's own pod where a ServiceMonitor renamed the holder to ``exported_pod``."""
    if not strangers:
        return ""
    names = sorted(set(strangers))
    shown = ", ".join(names[:3]) + (f" +{len(names) - 3} more" if len(names) > 3 else "")
    verb = "holds" if len(names) == 1 else "hold"
    return (f"; holders not taken from DCGM: it names {shown}, which {verb} no GPU there "
            "(check prometheus.labels.pod / namespace)")


def without_telemetry(verdict: Verdict, why: str) -> Verdict:
    return replace(verdict, telemetry=f"no telemetry: {why}")


def _in_answer_order(nodes: Sequence[NodeReport], names: list[str]) -> list[NodeReport]:
    if isinstance(nodes, NodeReports):
        return nodes.in_order(names)
    wanted = set(names)
    return [report for report in nodes if report.name in wanted]


def _replacing(nodes: Sequence[NodeReport], reports: list[NodeReport]) -> Sequence[NodeReport]:
    if isinstance(nodes, NodeReports):
        return nodes.replacing(reports)
    by_name = {report.name: report for report in reports}
    return [by_name.get(report.name, report) for report in nodes]


def merge_devices(devices: Sequence[Device], gpus: list[GpuFacts],
                  holders: frozenset[str] | None = None,
                  strangers: list[str] | None = None) -> list[Device]:
    """The node's devices with DCGM's figures; a GPU only DCGM knows is added.

    A device matches a GPU by UUID, else by index (GFD devices carry none, DRA devices whose
    driver publishes no uuid attribute carry the slice's device name). A DCGM holder that
    ``holders`` (the API server's, when known) does not list is no holder: it goes to
    ``strangers`` instead. Holders from a
    source (HAMi or DRA allocations) stay; DCGM's fill devices no source has spoken for.
    """
    merged = [copy.copy(d) for d in devices]
    by_uuid = {d.uuid: d for d in merged if d.uuid}
    by_index = {d.index: d for d in merged}
    for gpu in gpus:
        device = by_uuid.get(gpu.uuid)
        if device is None and gpu.index is not None:
            # A device named otherwise (GFD: no UUID; DRA without one: its device name) is the
            # GPU at its index; one with another GPU's UUID is not.
            candidate = by_index.get(gpu.index)
            if candidate is not None and not candidate.uuid.startswith(GPU_UUID_PREFIX):
                device = candidate
        if device is None:
            device = Device(uuid=gpu.uuid, index=gpu.index if gpu.index is not None else -1,
                            type=gpu.model)
            merged.append(device)
        _fill(device, gpu)
        if device.holder_source is None:
            named = [pod for pod in gpu.holders if holders is None or pod in holders]
            if strangers is not None:
                strangers += [pod for pod in gpu.holders if pod not in named]
            if named:  # no pod on a GPU may mean the exporter's pod mapping is off
                device.holders, device.holder_source = named, DCGM_HOLDERS
    return sorted(merged, key=lambda d: d.index)


def _fill(device: Device, gpu: GpuFacts) -> None:
    device.uuid = device.uuid or gpu.uuid
    device.type = device.type or gpu.model
    # HAMi's figures are its allocations, the ones its device codes are about: they stay.
    if gpu.memory_used is not None and device.memory_used is None:
        device.memory_used = gpu.memory_used
        if device.memory_total is None and gpu.memory_free is not None:
            device.memory_total = gpu.memory_used + gpu.memory_free
    device.utilisation = gpu.utilisation
    device.temperature = gpu.temperature
    device.xid = gpu.xid
    device.xid_at = None if gpu.xid_since is None else _iso(gpu.xid_since)
    device.xid_new = gpu.xid_new
    device.ecc_uncorrectable = gpu.ecc_uncorrectable


def named_nodes(verdict: Verdict) -> list[NodeReport]:
    """The nodes an answer is about: the bound node, or the nodes that failed at the check
    that gave the answer (the first few a 5,000-node answer names)."""
    if verdict.cause in (Cause.SCHEDULED, Cause.NODE_RUNTIME_ERROR):
        return list(verdict.nodes[:1])
    return list(islice((n for n in verdict.nodes if n.outcome == verdict.cause), 5))


def xid_evidence(verdict: Verdict) -> list[Evidence]:
    if verdict.cause not in XID_CAUSES:
        return []
    found = []
    for report in named_nodes(verdict):
        for device in report.devices:
            if device.xid and device.xid_new and device.xid_at:
                found.append(Evidence(f"Node/{report.name}", "DCGM_FI_DEV_XID_ERRORS",
                                      f"GPU {device.index} on {report.name}: XID {device.xid} "
                                      f"at {_clock_iso(device.xid_at)}{_meaning(device.xid)}"))
            if device.ecc_uncorrectable:
                found.append(Evidence(f"Node/{report.name}", "DCGM_FI_DEV_ECC_DBE_*_TOTAL",
                                      f"GPU {device.index} on {report.name}: "
                                      f"{device.ecc_uncorrectable} uncorrectable ECC errors "
                                      "since the driver loaded"))
    return found


def xid_meaning(xid: int) -> str:
    meaning = XID_MEANINGS.get(xid)
    return "" if meaning is None else meaning[0]


def _meaning(xid: int) -> str:
    meaning = xid_meaning(xid)
    return f" ({meaning})" if meaning else ""


def holder_evidence(verdict: Verdict, at: float) -> list[Evidence]:
    """For ``exhausted``: each holder's GPUs, their utilisation and for how long they have
    been held, on the nodes the answer names — an idle holder is the capacity to reclaim.

    The count and the start come from the API server (the node's holdings); a pod no device
    names as its holder has no known utilisation and is left out.
    """
    if verdict.cause != Cause.EXHAUSTED:
        return []
    found = []
    for report in named_nodes(verdict):
        by_holder: dict[str, list[Device]] = {}
        for device in report.devices:
            for holder in device.holders:
                by_holder.setdefault(holder, []).append(device)
        holdings = report.held or [Holding(pod, len(devices)) for pod, devices in
                                   sorted(by_holder.items())]
        for holding in holdings:
            figures = [d.utilisation for d in by_holder.get(holding.pod, [])
                       if d.utilisation is not None]
            if not figures:
                continue
            held_for = "" if holding.since is None else f" for {_duration(at, holding.since)}"
            found.append(Evidence(
                f"Node/{report.name}", "DCGM_FI_DEV_GPU_UTIL",
                f"{holding.pod} holds {holding.count} GPU{'s' if holding.count != 1 else ''} "
                f"at {round(sum(figures) / len(figures))} %{held_for}"))
    return found


def _duration(at: float, since: str) -> str:
    try:
        seconds = at - datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "an unknown time"
    minutes = max(0, round(seconds / 60))
    if minutes < 90:
        return f"{minutes} min"
    hours = round(minutes / 60)
    return f"{hours} h" if hours < 48 else f"{round(hours / 24)} days"


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M UTC")


def _clock_iso(text: str) -> str:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).strftime("%H:%M UTC")
