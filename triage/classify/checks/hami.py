"""HAMi's device fit: GPU slots exist, but does any device set meet the memory / cores asked?"""

from __future__ import annotations

from scoring.hami import HamiNodeFit, HamiRequest, fit_node
from triage.classify.subject import Dropped, Finding, Subject
from triage.nodetable import NodeInfo
from triage.verdict import Evidence
from triage.vocabulary import NODE_UNREGISTERED, Cause


def drop_device_unfit(subject: Subject, node: NodeInfo) -> str | None:
    if subject.hami is None:
        return None
    fit = hami_fit(subject, node)
    if fit is None:
        return NODE_UNREGISTERED
    return None if fit.fits else fit.reason


def hami_fit(subject: Subject, node: NodeInfo) -> HamiNodeFit | None:
    """HAMi's fit of the pod on the node (None: not registered with HAMi), computed once."""
    name = node.name
    if name not in subject.hami_fits:
        registration = node.hami_registration
        if registration is None or subject.hami is None or subject.pod is None:
            subject.hami_fits[name] = None
        elif subject.spec.get("nodeName") == name:  # judged with the usage before it
            subject.hami_fits[name] = fit_node(node.raw, subject.snapshot.pods_on(name),
                                               subject.pod, subject.hami)
        else:
            subject.hami_fits[name] = subject.snapshot.hami_fit(node, registration, subject.hami)
    return subject.hami_fits[name]


def explain_device_unfit(subject: Subject, dropped: Dropped) -> Finding:
    request = subject.hami
    asked = _hami_text(request)
    per_node = "; ".join(f"{n.name}: {why}" for n, why in dropped[:4])
    unregistered = [n.name for n, why in dropped if why == NODE_UNREGISTERED]
    hint = (f" {', '.join(unregistered)} {'is' if len(unregistered) == 1 else 'are'} not "
            "registered with HAMi (check hami-device-plugin there)." if unregistered else "")
    return Finding(Cause.DEVICE_UNFIT,
                   f"whole-GPU slots exist, but no device fits {asked}: {per_node}.{hint} "
                   "Lower the memory / cores request, change the GPU type filter, or wait for "
                   "holders to finish (show devices lists them).",
                   [Evidence(f"Node/{n.name}", "hami.io/node-nvidia-register", why)
                    for n, why in dropped[:5]])


def _hami_text(request: HamiRequest | None) -> str:
    if request is None:
        return "the request"
    memory = (f"{request.mem} MiB" if request.mem is not None else
              f"{request.mem_percentage}% memory" if request.mem_percentage is not None else
              "a whole card's memory")
    return f"{request.count} card(s) × {memory} / {request.cores} cores"
