"""What a channel may see of an answer: pods of namespaces it may not describe are counted,
not named ("held by 2 pods in other namespaces"), in the answer and in the devices table.

Pure: a Verdict and "may this namespace be named here" in, a Verdict out. The stored incident
keeps the full Verdict; each channel is shown its own view of it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from scoring.verdict import Device, Evidence, Holding, NodeReport, Verdict

NamespaceVisible = Callable[[str], bool]

# "ns/name" as answers write pods and workloads: a DNS label with a letter in it (so "2/2" is
# no pod), a slash, an object name; not part of a longer word, a domain ("nvidia.com/gpu") or
# a path. The scheduler's own message is quoted as it is and never holds such names.
_NAME = r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?"
_REF = rf"(?<![\w./:-])(?=[-a-z0-9]*[a-z])[a-z0-9](?:[-a-z0-9]*[a-z0-9])?/{_NAME}(?![\w/-])"
_SEPARATOR = r"(?:, and |, | and )"
_RUN = re.compile(rf"{_REF}(?:{_SEPARATOR}{_REF})*")
_ONE = re.compile(_REF)


def others_text(count: int) -> str:
    return "1 pod in another namespace" if count == 1 else f"{count} pods in other namespaces"


def _hide_run(match: re.Match[str], visible: NamespaceVisible) -> str:
    names = _ONE.findall(match.group(0))
    shown = [name for name in names if visible(name.partition("/")[0])]
    if len(shown) == len(names):
        return match.group(0)
    hidden = others_text(len(names) - len(shown))
    if not shown:
        return hidden
    return f"{', '.join(shown)} and {hidden}"


def hide_text(text: str, visible: NamespaceVisible) -> str:
    """``text`` with each list of pods from hidden namespaces replaced by how many there are."""
    return _RUN.sub(lambda match: _hide_run(match, visible), text)


def _hide_holders(holders: list[str], visible: NamespaceVisible) -> list[str]:
    shown = [holder for holder in holders if visible(holder.partition("/")[0])]
    hidden = len(holders) - len(shown)
    return shown + ([others_text(hidden)] if hidden else [])


def _hide_device(device: Device, visible: NamespaceVisible) -> Device:
    # a DRA device's code names the claim it is allocated to ("allocated to ns/claim")
    code = None if device.code is None else hide_text(device.code, visible)
    return dataclasses.replace(device, holders=_hide_holders(device.holders, visible), code=code)


def _hide_held(held: Sequence[Holding], visible: NamespaceVisible) -> list[Holding]:
    """Holdings of hidden namespaces as one: how many pods, how many GPUs, no names."""
    shown = [h for h in held if visible(h.pod.partition("/")[0])]
    hidden = [h for h in held if h not in shown]
    if not hidden:
        return list(held)
    return [*shown, Holding(others_text(len(hidden)), sum(h.count for h in hidden))]


def _hide_node(node: NodeReport, visible: NamespaceVisible) -> NodeReport:
    return dataclasses.replace(node, detail=hide_text(node.detail, visible),
                               devices=[_hide_device(d, visible) for d in node.devices],
                               held=_hide_held(node.held, visible))


def visible_verdict(verdict: Verdict, visible: NamespaceVisible) -> Verdict:
    """The Verdict with pods of hidden namespaces counted instead of named.

    The asked-about namespace is visible (the ask was allowed); ``pods`` all belong to it.
    """
    return dataclasses.replace(
        verdict,
        action=hide_text(verdict.action, visible),
        evidence=[Evidence(hide_text(e.object, visible), e.field, hide_text(e.value, visible))
                  for e in verdict.evidence],
        nodes=[_hide_node(n, visible) for n in verdict.nodes],
    )


def visible_answer(verdict: Verdict, visible: NamespaceVisible) -> Verdict:
    """``visible_verdict`` for the answer's text and blocks, which read no node report: the
    reports are left out rather than each copied with its names hidden (30-66 ms at 5,000
    nodes, more than the triage). The thread's "show devices" hides its own nodes' names."""
    return visible_verdict(dataclasses.replace(verdict, nodes=[], nodes_omitted={}), visible)

