"""What each firstAvailable alternative lacked, read as whole sentences (the dra-alternatives
recording): allocationMode All, a class without devices, an ask with no selector, two compared
literals, and more alternatives than the answer lists."""

from __future__ import annotations

from tests.paths import FIXTURES
from triage.classify import triage
from triage.refs import parse_ref
from triage.snapshot import Snapshot

SCENARIO = FIXTURES / "scenarios-extra" / "dra-alternatives"
HELD = "claim infer/embed-batch-gpu-txh2n (pod infer/embed-batch"
LACKED = [
    ("h100-all (all × NVIDIA H100 80GB HBM3)", "no device meets its selectors on any node left"),
    ("tpu (1 × tpu.example.com)", "no device of its class on any node left"),
    ("l4-three (3 × NVIDIA L4)", "too-large on dra-l4-1: infer/fa-none-gpu-7bztn request"
                                 " gpu/l4-three asks 3, the node has 2 matching device(s)"),
    ("a100-ampere (2 × NVIDIA A100-SXM4-40GB Ampere)",
     f"exhausted on dra-excl-1: 2/2 matching allocated to {HELD})"),
]


def test_the_first_four_alternatives_say_what_each_lacked() -> None:
    verdict = triage(Snapshot.from_dir(SCENARIO), parse_ref("infer/fa-none"))
    assert (verdict.cause, verdict.action) == (
        "exhausted",
        f"dra-excl-1: 2/2 matching device(s) allocated, to {HELD}, gpu-0,gpu-1); it needs 2 ×"
        " gpu.nvidia.com. Wait for them to finish, or add capacity. Alternatives (firstAvailable,"
        " in order): " + "; ".join(f"{asked}: {got}" for asked, got in LACKED) + ".")
    assert [(e.field, e.value) for e in verdict.evidence if e.object == "firstAvailable"] == LACKED
