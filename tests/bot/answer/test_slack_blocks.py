"""Block Kit rendering: golden answers for both scenarios, every cause, escaping, Slack's limits."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.answer.blocks import escape_mrkdwn, verdict_blocks, verdict_text
from bot.answer.devices import devices_blocks, devices_text
from bot.clusters.sources import SnapshotSource
from scoring.verdict import Device, Evidence, NodeReport, Verdict
from tests.paths import FIXTURES
from tests.slackfake import MAX_BUTTON_VALUE, block_kit_problems, live_mrkdwn
from triage.refs import parse_ref
from triage.vocabulary import CAUSES

GOLDEN = sorted((FIXTURES / "golden").glob("*.json"))
TRIAGED_AT = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)
HOSTILE = "<!channel> <@U1> <http://x|y> &amp;"
HOSTILE_SHOWN = "&lt;!channel&gt; &lt;@U1&gt; &lt;http://x|y&gt; &amp;amp;"
OWN_DATE = re.compile(r"^<!date\^\d+\^\{date_short_pretty\} \{time\}\|[-0-9 :UTC]+>$")
INJECTIONS = ("<!channel>", "<!here>", "<!everyone>", "<@U123>", "<http://evil.example",
              "<!subteam^S1>")


def all_texts(value: Any) -> Iterator[str]:
    """Every mrkdwn/plain ``text`` string inside a Block Kit structure."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "text" and isinstance(item, str):
                yield item
            else:
                yield from all_texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from all_texts(item)


@pytest.fixture(scope="module")
def sources() -> dict[str, SnapshotSource]:
    return {name: SnapshotSource(FIXTURES / "scenarios" / name)
            for name in ("seven-states", "hami-sharing")}


def injection_verdict() -> Verdict:
    data = json.loads((FIXTURES / "verdicts" / "injection.json").read_text(encoding="utf-8"))
    return Verdict.from_dict(data)


def test_there_is_a_golden_answer_for_every_expected_ref() -> None:
    expected = {f"{scenario}--{ref.replace('/', '--')}.json"
                for scenario in ("seven-states", "hami-sharing")
                for ref in json.loads((FIXTURES / "scenarios" / scenario / "expected.json")
                                      .read_text(encoding="utf-8"))}
    assert {path.name for path in GOLDEN} == expected


@pytest.mark.parametrize("golden", GOLDEN, ids=[path.stem for path in GOLDEN])
def test_answer_and_devices_match_golden_block_kit(golden: Path,
                                                   sources: dict[str, SnapshotSource]) -> None:
    scenario, namespace, name = golden.stem.split("--")
    verdict = sources[scenario].triage(parse_ref(f"{namespace}/{name}"))
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert verdict_blocks(verdict) == want["blocks"]
    assert verdict_text(verdict) == want["text"]
    assert devices_blocks(verdict, TRIAGED_AT) == want["devices_blocks"]
    assert devices_text(verdict, TRIAGED_AT) == want["devices_text"]


def test_golden_answer_reads_as_designed() -> None:
    blocks = json.loads((FIXTURES / "golden" / "seven-states--research--full.json")
                        .read_text(encoding="utf-8"))["blocks"]
    assert blocks[0]["text"]["text"] == "⏳ *exhausted* — research/full"
    assert blocks[1]["text"]["text"].startswith("*Next:* gpu-a10-full has 2/2 nvidia.com/gpu")
    assert blocks[-1] == {
        "type": "actions", "block_id": "gpuwhy_answer",
        "elements": [{"type": "button", "action_id": "show_devices",
                      "text": {"type": "plain_text", "text": "Show devices"},
                      "value": "research/full"}],
    }
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    # HAMi's proposal line only under answers for pods HAMi schedules.
    assert "*Nodes:* 6 nodes: 6 not fit (5 selector-mismatch, 1 exhausted), 0 fit" in texts
    assert any(t.startswith("*Scheduler:*\n> 0/6 nodes are available") for t in texts)


@pytest.mark.parametrize("info", CAUSES, ids=[str(info.cause) for info in CAUSES])
def test_every_cause_renders_its_emoji_and_word(info: Any) -> None:
    verdict = Verdict(ref="research/job", cause=str(info.cause), action=info.next_action,
                      kind="Job", pods=["research/job-abc12"], pods_total=2)
    blocks = verdict_blocks(verdict)
    assert blocks[0]["text"]["text"] == f"{info.emoji} *{info.cause}* — research/job (Job)"
    assert blocks[2] == {"type": "context", "elements": [{
        "type": "mrkdwn", "text": "1 of 2 pods share this answer: research/job-abc12"}]}
    assert verdict_text(verdict).startswith(f"{info.emoji} {info.cause} — research/job (Job): ")


def test_cluster_strings_are_rendered_inert() -> None:
    verdict = injection_verdict()
    rendered = [*verdict_blocks(verdict), *devices_blocks(verdict, TRIAGED_AT)]
    texts = [*all_texts(rendered), verdict_text(verdict), devices_text(verdict, TRIAGED_AT)]
    joined = "\n".join(texts)
    for attack in INJECTIONS:
        assert attack not in joined
    assert "ping &lt;!channel&gt; and &lt;@U123&gt;, or &lt;http://evil.example|click here&gt; " \
           "&amp; enjoy" in joined
    assert "&lt;!here&gt;" in joined  # evidence object
    assert "research/&lt;!channel&gt;-0" in joined  # workload pods
    assert "held by &lt;@U123&gt; &amp; &lt;!everyone&gt;" in joined  # node detail
    assert "ns/&lt;@U123&gt;" in joined  # device holders
    # The only raw "<" left is the date token gpuwhy writes itself.
    assert [t for t in texts if "<" in t] == [
        "triage of <!date^1796047500^{date_short_pretty} {time}|2026-11-30 14:05 UTC>"]


def hostile_verdict() -> Verdict:
    """Every string field of a Verdict carries a mention, a user, a link and an entity."""
    data = json.loads((FIXTURES / "verdicts" / "hostile.json").read_text(encoding="utf-8"))
    return Verdict.from_dict(data)


def assert_inert(texts: list[str]) -> None:
    """Nothing Slack would act on, except the date token gpuwhy writes itself."""
    live = [token for text in texts for token in live_mrkdwn(text)]
    assert [token for token in live if not OWN_DATE.match(token)] == []


def test_hostile_strings_in_every_field_are_shown_literally() -> None:
    verdict = hostile_verdict()
    assert HOSTILE in json.dumps(verdict.to_dict(), ensure_ascii=False)
    answer = list(all_texts(verdict_blocks(verdict)))
    devices = list(all_texts(devices_blocks(verdict, TRIAGED_AT)))
    fallbacks = [verdict_text(verdict), devices_text(verdict, TRIAGED_AT)]
    assert_inert([*answer, *devices, *fallbacks])
    # Shown once per field: cause, ref, kind, action, evidence ×3, pods ×2, node summary,
    # proposal summary, scheduler message, error.
    assert "\n".join(answer).count(HOSTILE_SHOWN) == 13
    # cause, ref, node name, outcome, device type summary, detail, holders ×2, device code.
    assert "\n".join(devices).count(HOSTILE_SHOWN) == 9
    assert [text.count(HOSTILE_SHOWN) for text in fallbacks] == [4, 2]


def test_code_fences_in_cluster_strings_are_neutralised() -> None:
    """A device type (or any cluster string) holding ``` cannot close the table's code block:
    every run of three backticks left is one gpuwhy wrote, as with a plain cluster."""
    raw = (FIXTURES / "verdicts" / "hostile.json").read_text(encoding="utf-8")

    def rendered(replacement: str) -> list[str]:
        verdict = Verdict.from_dict(json.loads(raw.replace(HOSTILE, replacement)))
        return [*all_texts(verdict_blocks(verdict)),
                *all_texts(devices_blocks(verdict, TRIAGED_AT)),
                verdict_text(verdict), devices_text(verdict, TRIAGED_AT)]

    fenced, plain = rendered("A100```*bold* `x` ```"), rendered("A100 plain")
    assert [text.count("```") for text in fenced] == [text.count("```") for text in plain]
    assert any("A100\u02cb\u02cb\u02cb*bold*" in text for text in fenced)


def test_scheduler_message_is_quoted_on_one_line() -> None:
    blocks = verdict_blocks(injection_verdict())
    scheduler = [b["text"]["text"] for b in blocks
                 if b["type"] == "section" and b["text"]["text"].startswith("*Scheduler:*")]
    assert scheduler == ["*Scheduler:*\n> 0/1 nodes are available: &lt;!channel&gt; &amp; "
                         "&lt;@U123&gt; &lt;http://evil.example|click&gt;"]


def test_escape_never_cuts_an_entity_in_half() -> None:
    assert escape_mrkdwn("a&b<c>") == "a&amp;b&lt;c&gt;"
    assert escape_mrkdwn("&&&&", 12) == "&amp;&amp;…"
    assert escape_mrkdwn("abcdef", 4) == "abc…"


def huge_verdict(ref: str = "research/huge", kind: str = "Deployment",
                 holder: str = "ns/holder", code: str = "CardInsufficientMemory") -> Verdict:
    device = Device(uuid="GPU-" + "&" * 40, index=0, type="<" * 60, memory_used=1,
                    memory_total=2, cores_used=3, cores_total=4, numa=0,
                    holders=[f"{holder}-{i}" for i in range(50)], code=code)
    devices = [dataclasses.replace(device, index=i) for i in range(64)]
    nodes = [NodeReport(name=f"node-{i:04d}", outcome="exhausted", detail="&" * 4000,
                        devices=devices) for i in range(5000)]
    return Verdict(
        ref=ref, cause="exhausted", action="<" * 5000, kind=kind,
        evidence=[Evidence(object="Node/" + "<" * 300, field=">" * 300, value="&" * 3000)
                  for _ in range(400)],
        nodes=nodes, node_summary="5000 nodes: " + "&" * 6000,
        scheduler_message="<!channel>\n" * 2000, pods=[f"research/huge-{i}" for i in range(300)],
        pods_total=300, error="&" * 5000,
    )


def test_block_kit_limits_hold_for_a_huge_cluster() -> None:
    verdict = huge_verdict()
    for blocks in (verdict_blocks(verdict), devices_blocks(verdict, TRIAGED_AT)):
        assert block_kit_problems(blocks) == []
    answer = "\n".join(all_texts(verdict_blocks(verdict)))
    assert "• +394 more" in answer
    assert "300 of 300 pods share this answer" in answer and " +295 more" in answer
    devices = devices_blocks(verdict, TRIAGED_AT)
    assert devices[-2]["elements"][0]["text"] == "+4990 other nodes: 4990 exhausted"
    assert devices[-1]["elements"][0]["text"].startswith("triage of ")
    tables = [t for t in all_texts(devices) if t.startswith("```")]
    assert len(tables) == 10
    assert all("more devices```" in table for table in tables)
    assert "ns/holder-0, ns/holder-1 +48 more" in tables[0]


def test_block_kit_limits_hold_for_absurdly_long_names() -> None:
    verdict = huge_verdict(ref="research/" + "<" * 3000, kind="&" * 500,
                           holder="ns/" + "<" * 500, code=">" * 3000)
    answer = verdict_blocks(verdict)
    devices = devices_blocks(verdict, TRIAGED_AT)
    assert block_kit_problems(answer) == []
    assert block_kit_problems(devices) == []
    assert len(answer[-1]["elements"][0]["value"]) == MAX_BUTTON_VALUE
    # Each table still lists devices: no cell is so long that no row fits.
    tables = [t for t in all_texts(devices) if t.startswith("```")]
    assert len(tables) == 10
    assert all(table.count("\n#") >= 2 for table in tables)
    for text in (verdict_text(verdict), devices_text(verdict, TRIAGED_AT)):
        assert len(text) <= 4000  # Slack's advice for a notification's text


def test_plain_node_without_device_data_says_so() -> None:
    verdict = Verdict(ref="research/p", cause="no-gpu-node", action="restore the plugin",
                      nodes=[NodeReport(name="cpu-1", outcome="no-gpu-node",
                                        detail="no nvidia.com/gpu in status.capacity")])
    texts = list(all_texts(devices_blocks(verdict, TRIAGED_AT)))
    assert texts[1] == ("*cpu-1* · no-gpu-node\nno nvidia.com/gpu in status.capacity\n"
                        "_no per-device data for this node_")


def node_names(blocks: list[dict[str, Any]]) -> list[str]:
    return [t.split("*")[1] for t in all_texts(blocks[1:-1]) if t.startswith("*")]


@pytest.mark.parametrize(("policy", "fit_order"), [("binpack", ["fit-low", "fit-high"]),
                                                    ("spread", ["fit-high", "fit-low"])])
def test_candidate_nodes_come_worst_first(policy: str, fit_order: list[str]) -> None:
    nodes = [NodeReport("fit-high", "fit", score=0.9), NodeReport("fit-low", "fit", score=0.5),
             NodeReport("b-large", "too-large"), NodeReport("hami", "2/4 CardInsufficientMemory"),
             NodeReport("z-noplugin", "no-gpu-node"), NodeReport("a-selector", "selector-mismatch"),
             NodeReport("a-noplugin", "no-gpu-node")]
    verdict = Verdict(ref="r/p", cause="device-unfit", action="a", nodes=nodes,
                      score_policy=policy)
    assert node_names(devices_blocks(verdict, TRIAGED_AT)) == [
        "a-noplugin", "z-noplugin", "b-large", "hami", *fit_order]


def test_a_bound_pod_shows_its_node_only() -> None:
    verdict = Verdict(ref="r/p", cause="scheduled", action="a",
                      nodes=[NodeReport("gpu-1", "fit", "bound here")])
    blocks = devices_blocks(verdict, TRIAGED_AT)
    assert blocks[0]["text"]["text"] == "*Devices* for ✅ scheduled — r/p: the node it is bound to"
    assert node_names(blocks) == ["gpu-1"]
