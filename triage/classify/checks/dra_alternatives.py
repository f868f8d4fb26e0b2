"""Prioritized lists (``firstAvailable``, GA in 1.36): a request fits when any alternative
does, and the allocator takes the first that fits (the allocation's ``request`` then reads
``gpu/<alternative>``). When none fits, the answer is the cause of the alternative that got
furthest down the funnel (``scoring.dra`` picks it per node), and says what each lacked."""

from __future__ import annotations

import re

from scoring.dra import (
    DEVICE_UNFIT,
    EXHAUSTED,
    NO_DEVICE,
    STAGES,
    AllocationResult,
    Alternative,
    RequestOutcome,
)
from scoring.verdict import Evidence
from triage.classify.subject import Dropped, ExplainFn, Finding, Subject

_FITS = len(STAGES)  # ranks above every failing stage


def _rank(outcome: RequestOutcome) -> tuple[int, int]:
    """Further down the funnel ranks higher; at device-unfit, devices that met the selectors
    (only a taint or the capacity kept them off) rank above devices that did not."""
    stage = _FITS if outcome.stage is None else (
        STAGES.index(outcome.stage) if outcome.stage in STAGES else -1)
    return stage, int(bool(outcome.tainted or outcome.capacity))


def _short(alternative: Alternative) -> str:
    return alternative.label.split("/", 1)[1] if "/" in alternative.label else alternative.label


def alternatives_lacked(subject: Subject) -> list[tuple[str, str]]:
    """Per alternative of each pending firstAvailable request: (its name and ask, how far it
    got on the node where it got furthest, and why it stopped there)."""
    if subject.dra is None:
        return []
    furthest: dict[tuple[str, str], tuple[str, RequestOutcome]] = {}
    for node, fit in subject.dra.fits.items():
        for outcome in fit.requests:
            if len(outcome.request.alternatives) < 2:
                continue
            for tried in outcome.tried:
                if tried.alternative is None:
                    continue
                key = (outcome.request.claim + outcome.request.name, tried.alternative.label)
                if key not in furthest or _rank(tried) > _rank(furthest[key][1]):
                    furthest[key] = (node, tried)
    lacked = []
    for node, outcome in furthest.values():
        alternative = outcome.alternative
        assert alternative is not None  # kept only with one
        lacked.append((f"{_short(alternative)} ({_wanted(alternative)})", _got(node, outcome)))
    return lacked


_COMPARED = re.compile(r'==\s*"([^"]+)"')


def _wanted(alternative: Alternative) -> str:
    """"2 × NVIDIA A100-SXM4-40GB" when the selectors compare with literals, else the class."""
    literals = [v for s in alternative.selectors for v in _COMPARED.findall(s)]
    amount = "all" if alternative.mode == "All" else str(alternative.count)
    return f"{amount} × {' '.join(literals)}" if literals else alternative.asked


def _got(node: str, outcome: RequestOutcome) -> str:
    """How far the alternative got where it got furthest, in a few words."""
    if outcome.stage is None:
        return f"fits on {node}"
    if outcome.stage == NO_DEVICE:
        return "no device of its class on any node left"
    if outcome.stage == DEVICE_UNFIT and not outcome.capacity and not outcome.tainted:
        return "no device meets its selectors on any node left"
    if outcome.stage == EXHAUSTED and outcome.holders and not outcome.capacity:
        held = {d.key for d, _ in outcome.holders}
        holders = ", ".join(dict.fromkeys(h.text for _, h in outcome.holders))
        return (f"{outcome.stage} on {node}: {len(held)}/{len(outcome.matching)} matching "
                f"allocated to {holders}")
    return f"{outcome.stage} on {node}: {outcome.detail}"


def with_alternatives(explain: ExplainFn) -> ExplainFn:
    """A DRA explanation that also says what each firstAvailable alternative lacked."""
    def explained(subject: Subject, dropped: Dropped) -> Finding:
        finding = explain(subject, dropped)
        lacked = alternatives_lacked(subject)
        if len(lacked) > 1:
            finding.action += " Alternatives (firstAvailable, in order): " + "; ".join(
                f"{asked}: {got}" for asked, got in lacked[:4]) + "."
            finding.evidence += [Evidence("firstAvailable", asked, got)
                                 for asked, got in lacked[:4]]
        return finding
    explained.__name__ = explain.__name__
    return explained


def fitting_alternatives(subject: Subject) -> str:
    """" (firstAvailable: alternative l4 fits on dra-l4-1)" when a pending request's
    alternative fits somewhere: said by answers that are not about the devices."""
    fitting = [f"{asked} {got}" for asked, got in alternatives_lacked(subject)
               if got.startswith("fits on ")]
    return f" (firstAvailable: {'; '.join(fitting[:2])})" if fitting else ""


def chosen_alternative(result: AllocationResult) -> str:
    """An allocation result's subrequest ("gpu/l4": the l4 alternative was chosen), "" when
    the request has no alternatives."""
    request = result.request
    return request.split("/", 1)[1] if "/" in request else ""
