"""The per-node outcome in the words of HAMi's scheduler-event-log proposal.

One summary line (``find fit node(...)`` / ``no available node, ...``) and log lines at the
proposal's two levels, always with pod and node. The shell decides where the lines go.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from scoring.hami import CARD_INSUFFICIENT_CORE, CARD_INSUFFICIENT_MEMORY, HamiRequest, pick_order
from scoring.verdict import Device, NodeReport

FIT = "fit"


def proposal_summary(nodes: Sequence[NodeReport], policy: str = "binpack") -> str:
    """``find fit node(n3), 7 nodes not fit, 2 nodes fit(n3:0.98,n4:0.65)``, best first by
    the node policy (nodes without a score after the scored ones, by name), or
    ``no available node, 9 nodes do not meet``."""
    fitting = [n for n in nodes if n.outcome == FIT]
    if not fitting:
        return f"no available node, {len(nodes)} nodes do not meet"
    scores = {n.name: n.score for n in fitting if n.score is not None}
    order = pick_order(scores, policy) + sorted(n.name for n in fitting if n.score is None)
    listed = ",".join(f"{name}:{scores[name]:.2f}" if name in scores else name
                      for name in order)
    return (f"find fit node({order[0]}), {len(nodes) - len(fitting)} nodes not fit, "
            f"{len(fitting)} nodes fit({listed})")


def log_lines(pod_ref: str, nodes: Sequence[NodeReport],
              request: HamiRequest | None = None) -> list[tuple[int, str]]:
    """(logging level, message) pairs: INFO per node, DEBUG per device that carries a code.

    ``request`` adds the requested memory / cores to the device lines that are about them.
    """
    lines: list[tuple[int, str]] = []
    for node in nodes:
        if node.outcome == FIT:
            score = "" if node.score is None else f" score={_quote(f'{node.score:.2f}')}"
            lines.append((logging.INFO,
                          f"NodeFitPod pod={_quote(pod_ref)} node={_quote(node.name)}{score}"))
        else:
            lines.append((logging.INFO, f"NodeUnfitPod pod={_quote(pod_ref)} "
                                        f"node={_quote(node.name)} reason={_quote(node.outcome)}"))
        lines += [(logging.DEBUG, _device_line(pod_ref, node.name, device, request))
                  for device in node.devices if device.code]
    return lines


def _device_line(pod_ref: str, node: str, device: Device, request: HamiRequest | None) -> str:
    line = (f"{device.code} pod={_quote(pod_ref)} node={_quote(node)} "
            f"device={_quote(device.uuid)} device index={device.index}")
    if device.code == CARD_INSUFFICIENT_MEMORY:
        line += (f" device total memory={device.memory_total}"
                 f" device used memory={device.memory_used}")
        if request is not None and device.memory_total is not None:
            line += f" request memory={request.memory_on(device.memory_total)}"
    elif device.code == CARD_INSUFFICIENT_CORE:
        line += f" device total core={device.cores_total} device used core={device.cores_used}"
        if request is not None:
            line += f" request cores={request.cores}"
    return line


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
