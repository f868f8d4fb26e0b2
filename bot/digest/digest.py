"""The weekly digest and per-week stats: which causes keep coming back.

compute_digest / compute_stats are pure functions of stored incidents; the rest reads the
store, renders templates/digest.* and templates/stats.*, and posts to Slack.

Weeks run from Monday 00:00 to the next Monday 00:00 in the configured timezone, so a week
with a daylight-saving change is 167 or 169 hours long.
"""

from __future__ import annotations

import json
import logging
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import jinja2

from bot.answer import render
from bot.answer.blocks import escape_mrkdwn
from bot.answer.kept import implicated_nodes
from bot.digest.weeks import add_weeks, load_timezone, week_key, week_start
from bot.store import Store, StoredIncident
from triage.vocabulary import CAUSE_ORDER, Cause

log = logging.getLogger(__name__)

# The split that decides between "wait or add capacity" and "repair the node".
CAPACITY_CAUSES = frozenset({Cause.EXHAUSTED.value})
REPAIR_CAUSES = frozenset({Cause.NO_GPU_NODE.value, Cause.ALLOCATABLE_ZERO.value})
# A node decisive for these answers in BROKEN_MIN_WEEKS of the last BROKEN_WEEKS weeks is a
# "repair these" candidate: the trouble is the node, and it keeps coming back.
BROKEN_CAUSES = frozenset({*REPAIR_CAUSES, Cause.NODE_RUNTIME_ERROR.value})
BROKEN_WEEKS = 4
BROKEN_MIN_WEEKS = 2
TOP = 5
WEEKS_PER_TABLE = 8  # of /gpuwhy stats: 16 causes x 8 weeks stay well inside one section

Blocks = list[dict[str, Any]]



@dataclass(frozen=True)
class CauseTrend:
    cause: str
    count: int
    previous: int
    first_time: bool  # never recorded before this period

    @property
    def arrow(self) -> str:
        if self.count == self.previous:
            return "→"
        return "↑" if self.count > self.previous else "↓"


@dataclass(frozen=True)
class ClusterSection:
    """One cluster's part of the digest: its answers and their causes, most frequent first."""

    cluster: str
    total: int
    previous_total: int
    causes: tuple[tuple[str, int], ...]
    top_namespaces: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class BrokenNode:
    name: str
    weeks: int  # of the last BROKEN_WEEKS in which it was decisive
    answers: int
    causes: tuple[str, ...]  # vocabulary order


@dataclass(frozen=True)
class QueueWait:
    """A ClusterQueue's flavor that made people wait (`queued` answers short of its quota)."""

    cluster_queue: str
    flavor: str
    resource: str
    answers: int
    asked: Decimal  # what those answers' workloads needed, summed
    largest: Decimal
    nominal: Decimal  # the quota, as the newest of them saw it

    @property
    def text(self) -> str:
        return (f"{self.cluster_queue} / {self.flavor}: {self.answers} "
                f"answer{'s' if self.answers != 1 else ''}, asked {_amount(self.asked)} "
                f"{self.resource} in all (largest {_amount(self.largest)}) against a quota "
                f"of {_amount(self.nominal)}")


# What a `queued` answer's evidence says of a flavor (triage/classify/checks/queue.py).
_QUEUE_FLAVOR = re.compile(r"^flavor (?P<flavor>\S+) \[(?P<resource>[^\]]+)\]$")
_QUEUE_NUMBERS = re.compile(r"^nominal (?P<nominal>[0-9.]+), reserved [0-9.]+"
                            r"(?:, borrowingLimit [0-9.]+)?, needs (?P<needs>[0-9.]+)$")


def _amount(value: Decimal) -> str:
    return str(value.normalize()) if value != value.to_integral() else str(int(value))


def queue_waits(incidents: Iterable[StoredIncident]) -> tuple[tuple[QueueWait, ...], int]:
    """The flavors `queued` answers waited on, most answers first; and how many `queued`
    answers named no quota (a missing LocalQueue, an inactive ClusterQueue, ...)."""
    found: dict[tuple[str, str, str], list[tuple[datetime, Decimal, Decimal]]] = {}
    other = 0
    for incident in incidents:
        if incident.verdict.cause != Cause.QUEUED:
            continue
        named = False
        for evidence in incident.verdict.evidence:
            flavor = _QUEUE_FLAVOR.match(evidence.field)
            numbers = _QUEUE_NUMBERS.match(evidence.value)
            if not evidence.object.startswith("ClusterQueue ") or not flavor or not numbers:
                continue
            named = True
            key = (evidence.object.removeprefix("ClusterQueue "), flavor["flavor"],
                   flavor["resource"])
            found.setdefault(key, []).append((incident.created_at, Decimal(numbers["needs"]),
                                              Decimal(numbers["nominal"])))
        other += not named
    waits = [QueueWait(queue, flavor, resource, len(seen), sum((n for _, n, _ in seen),
                                                             Decimal(0)),
                       max(n for _, n, _ in seen), max(seen)[2])
             for (queue, flavor, resource), seen in found.items()]
    return tuple(sorted(waits, key=lambda w: (-w.answers, w.cluster_queue, w.flavor))), other


@dataclass(frozen=True)
class Digest:
    key: str  # "2026-W48", or "2026-W45..2026-W48" for several weeks
    start: datetime  # local Monday 00:00
    end: datetime  # exclusive
    weeks: int
    timezone: str
    total: int
    previous_total: int
    causes: tuple[CauseTrend, ...]  # most frequent first; causes only in the earlier period too
    top_namespaces: tuple[tuple[str, int], ...]
    top_nodes: tuple[tuple[str, int], ...]
    repeat_offenders: tuple[tuple[str, int], ...]  # refs asked about more than once
    capacity: int  # answers that say "wait or add capacity"
    repair: int  # answers that say "repair the node"
    # One per cluster when the period's answers come from more than one, busiest first.
    clusters: tuple[ClusterSection, ...] = ()
    broken_nodes: tuple[BrokenNode, ...] = ()  # most weeks first
    queues: tuple[QueueWait, ...] = ()  # the flavors `queued` answers waited on
    queue_problems: int = 0  # `queued` answers about a queue, not its quota

    @property
    def first_time(self) -> tuple[str, ...]:
        return tuple(trend.cause for trend in self.causes if trend.first_time)

    @property
    def last_day(self) -> date:
        return self.end.date() - timedelta(days=1)

    def percent(self, count: int) -> int:
        return round(100 * count / self.total) if self.total else 0


def broken_nodes(incidents: Iterable[StoredIncident], end: datetime,
                 tz: ZoneInfo) -> tuple[BrokenNode, ...]:
    """Nodes decisive for a node-side answer in BROKEN_MIN_WEEKS or more of the BROKEN_WEEKS
    weeks before ``end``, most weeks (then answers) first."""
    start = add_weeks(end, -BROKEN_WEEKS)
    weeks: dict[str, set[datetime]] = {}
    answers: Counter[str] = Counter()
    causes: dict[str, set[str]] = {}
    for incident in incidents:
        cause = incident.verdict.cause
        if cause not in BROKEN_CAUSES or not start <= incident.created_at < end:
            continue
        for node in set(implicated_nodes(incident.verdict)):
            weeks.setdefault(node, set()).add(week_start(incident.created_at, tz))
            answers[node] += 1
            causes.setdefault(node, set()).add(cause)
    found = [BrokenNode(node, len(seen), answers[node],
                        tuple(sorted(causes[node], key=_cause_rank)))
             for node, seen in weeks.items() if len(seen) >= BROKEN_MIN_WEEKS]
    return tuple(sorted(found, key=lambda n: (-n.weeks, -n.answers, n.name)))


def _ranked(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP])


def _cause_rank(cause: str) -> int:
    try:
        return CAUSE_ORDER[Cause(cause)]
    except ValueError:
        return len(CAUSE_ORDER)  # a word from a newer gpuwhy: after the known ones


def compute_digest(
    incidents: Iterable[StoredIncident],
    week_start_at: datetime,
    tz: ZoneInfo,
    *,
    weeks: int = 1,
    seen_before: Iterable[str] = (),
) -> Digest:
    """The digest of the ``weeks`` weeks from the week holding ``week_start_at`` on, against
    the same number of weeks before. ``incidents`` may hold more than that; incidents before
    the period, and ``seen_before``, tell which causes appear for the first time; the
    BROKEN_WEEKS weeks up to the period's end give the broken-node report."""
    incidents = list(incidents)
    start = week_start(week_start_at, tz)
    end = add_weeks(start, weeks)
    previous_start = add_weeks(start, -weeks)
    current: list[StoredIncident] = []
    previous: Counter[str] = Counter()
    previous_clusters: Counter[str] = Counter()
    known = set(seen_before)
    for incident in incidents:
        if start <= incident.created_at < end:
            current.append(incident)
        elif incident.created_at < start:
            known.add(incident.verdict.cause)
            if incident.created_at >= previous_start:
                previous[incident.verdict.cause] += 1
                previous_clusters[incident.cluster] += 1
    counts = Counter(incident.verdict.cause for incident in current)
    trends = sorted(
        (CauseTrend(cause, counts[cause], previous[cause], cause not in known)
         for cause in counts.keys() | previous.keys()),
        key=lambda trend: (-trend.count, -trend.previous, _cause_rank(trend.cause)),
    )
    refs = Counter(incident.verdict.ref for incident in current)
    last_key = week_key(add_weeks(end, -1))
    waits, queue_problems = queue_waits(current)
    return Digest(
        key=last_key if weeks == 1 else f"{week_key(start)}..{last_key}",
        start=start,
        end=end,
        weeks=weeks,
        timezone=tz.key,
        total=len(current),
        previous_total=sum(previous.values()),
        causes=tuple(trends),
        top_namespaces=_ranked(Counter(i.verdict.ref.partition("/")[0] for i in current)),
        top_nodes=_ranked(Counter(node for i in current for node in implicated_nodes(i.verdict))),
        repeat_offenders=_ranked(Counter({ref: n for ref, n in refs.items() if n > 1})),
        capacity=sum(counts[cause] for cause in CAPACITY_CAUSES),
        repair=sum(counts[cause] for cause in REPAIR_CAUSES),
        clusters=_cluster_sections(current, previous_clusters),
        broken_nodes=broken_nodes(incidents, end, tz),
        queues=waits,
        queue_problems=queue_problems,
    )


def _cluster_sections(current: list[StoredIncident],
                      previous: Counter[str]) -> tuple[ClusterSection, ...]:
    by_cluster: dict[str, list[StoredIncident]] = {}
    for incident in current:
        by_cluster.setdefault(incident.cluster, []).append(incident)
    if len(by_cluster) < 2:
        return ()
    sections = []
    for cluster, incidents in by_cluster.items():
        causes = Counter(i.verdict.cause for i in incidents)
        sections.append(ClusterSection(
            cluster=cluster, total=len(incidents), previous_total=previous[cluster],
            causes=tuple(sorted(causes.items(), key=lambda c: (-c[1], _cause_rank(c[0])))),
            top_namespaces=_ranked(Counter(i.verdict.ref.partition("/")[0] for i in incidents))))
    return tuple(sorted(sections, key=lambda section: (-section.total, section.cluster)))


# Stats -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeekColumn:
    key: str
    start: datetime
    in_progress: bool


@dataclass(frozen=True)
class CauseRow:
    cause: str
    counts: tuple[int, ...]  # one per week, oldest first


@dataclass(frozen=True)
class Stats:
    timezone: str
    weeks: tuple[WeekColumn, ...]
    rows: tuple[CauseRow, ...]  # vocabulary order
    totals: tuple[int, ...]


def compute_stats(
    incidents: Iterable[StoredIncident], now: datetime, tz: ZoneInfo, weeks: int
) -> Stats:
    """Answers per cause for each of the last ``weeks`` weeks, the current one included."""
    current = week_start(now, tz)
    starts = [add_weeks(current, offset) for offset in range(1 - weeks, 1)]
    per_week: list[Counter[str]] = [Counter() for _ in starts]
    for incident in incidents:
        if starts[0] <= incident.created_at <= now:
            per_week[bisect_right(starts, incident.created_at) - 1][incident.verdict.cause] += 1
    causes = sorted({cause for counter in per_week for cause in counter}, key=_cause_rank)
    return Stats(
        timezone=tz.key,
        weeks=tuple(WeekColumn(week_key(s), s, s == current) for s in starts),
        rows=tuple(CauseRow(c, tuple(counter[c] for counter in per_week)) for c in causes),
        totals=tuple(sum(counter.values()) for counter in per_week),
    )


# Rendering ---------------------------------------------------------------------------------


@cache
def _environment() -> jinja2.Environment:
    # The answer templates' environment, plus the filters digest and stats use.
    environment = render.environment().overlay()
    environment.filters["mrkdwn"] = escape_mrkdwn
    environment.filters["emoji"] = render.cause_emoji
    return environment


def _render(name: str, **values: Any) -> str:
    return _environment().get_template(name).render(**values).strip()


def _render_blocks(name: str, **values: Any) -> Blocks:
    blocks: Blocks = json.loads(_render(name, **values))
    return blocks


def digest_text(digest: Digest) -> str:
    return _render("digest.txt.j2", digest=digest)


def digest_blocks(digest: Digest) -> Blocks:
    return _render_blocks("digest.blocks.j2", digest=digest)


@dataclass(frozen=True)
class Scope:
    """Which incidents stats count: all, or one cluster's, or those a channel may see."""

    namespaces: Callable[[str], bool] | None = None
    clusters: Callable[[str], bool] | None = None  # the clusters a channel may describe
    cluster: str | None = None  # only this one (a name, so the store can filter by it)
    label: str = ""  # said in the table's title: "cluster prod · namespaces research, ml"

    def keeps(self, incident: StoredIncident) -> bool:
        return ((self.namespaces is None
                 or self.namespaces(incident.verdict.ref.partition("/")[0]))
                and (self.clusters is None or self.clusters(incident.cluster))
                and (self.cluster is None or self.cluster == incident.cluster))


EVERYTHING = Scope()


def _stats(store: Store, weeks: int, now: datetime, timezone: str, scope: Scope) -> Stats:
    tz = load_timezone(timezone)
    start = add_weeks(week_start(now, tz), 1 - weeks)
    incidents = store.incidents_between(start, now + timedelta(microseconds=1))
    return compute_stats([i for i in incidents if scope.keeps(i)], now, tz, weeks)


def stats_text(store: Store, weeks: int, now: datetime, timezone: str = "UTC",
               scope: Scope = EVERYTHING) -> str:
    """`gpuwhy stats` / the fallback text of `/gpuwhy stats`; raises StoreError, DigestError."""
    return _render("stats.txt.j2", stats=_stats(store, weeks, now, timezone, scope),
                   scope=scope.label)


def stats_blocks(store: Store, weeks: int, now: datetime, timezone: str = "UTC",
                 scope: Scope = EVERYTHING) -> Blocks:
    """Block Kit for `/gpuwhy stats [weeks]`, one table per WEEKS_PER_TABLE weeks (a section
    holds 3,000 characters: 52 weeks of 16 causes in one table would be three times that);
    raises StoreError, DigestError."""
    stats = _stats(store, weeks, now, timezone, scope)
    tables = [_render("stats.txt.j2", stats=part, scope=scope.label)
              for part in _week_slices(stats, WEEKS_PER_TABLE)]
    return _render_blocks("stats.blocks.j2", stats=stats, tables=tables)


def _week_slices(stats: Stats, size: int) -> list[Stats]:
    """``stats`` cut into consecutive runs of at most ``size`` weeks, oldest first."""
    return [replace(stats, weeks=stats.weeks[at:at + size],
                    rows=tuple(replace(row, counts=row.counts[at:at + size])
                               for row in stats.rows),
                    totals=stats.totals[at:at + size])
            for at in range(0, len(stats.weeks), size)]


def load_digest(store: Store, start: datetime, tz: ZoneInfo, weeks: int = 1,
                scope: Scope = EVERYTHING) -> Digest:
    """The digest of ``weeks`` weeks from ``start`` on, read from the store (``scope``: only
    the incidents it keeps, e.g. one cluster's: a cause is new when that cluster never had
    it before)."""
    previous_start = add_weeks(start, -weeks)
    end = add_weeks(start, weeks)
    first = min(previous_start, add_weeks(end, -BROKEN_WEEKS))
    incidents = store.incidents_between(first, end)
    return compute_digest(
        [i for i in incidents if scope.keeps(i)], start, tz,
        weeks=weeks, seen_before=store.causes_before(previous_start, scope.cluster),
    )


# Posting -----------------------------------------------------------------------------------


