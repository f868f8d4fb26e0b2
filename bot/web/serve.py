"""Running the Slack app: the HTTP routes of `gpuwhy serve` (Slack's signed requests, health
and readiness), the weekly digest thread and the retry of unstored incidents."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_bolt.request.internals import extract_content_type, parse_body
from slack_sdk import WebClient

from bot.alerts.receiver import PATH as ALERTMANAGER_PATH
from bot.alerts.receiver import AlertmanagerReceiver
from bot.clusters.fleet import Fleet, UnavailableSource
from bot.clusters.sources import TriageSource, WatchSource
from bot.config import DigestSchedule
from bot.digest import Blocks, DigestScheduler
from bot.digest.chart import slack_chart
from bot.slack.listeners.replies import post_message
from bot.slack.listeners.state import ONCE, AcksFirst
from bot.store import Store, StoreError
from bot.store.journal import IncidentJournal, store_status
from bot.web.metrics import CONTENT_TYPE, CacheReading, page
from bot.web.server import TEXT, Handler, InLoop, Request, Response, Routes

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
SIGNATURE_WINDOW_S = 300  # Slack's: a request older or newer than this is refused
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


@runtime_checkable
class ReadinessSource(Protocol):
    """A triage source that needs time to start (a watch cache filling up)."""

    def ready(self) -> bool: ...


def source_ready(source: object) -> bool:
    return source.ready() if isinstance(source, ReadinessSource) else True


@dataclass(frozen=True)
class Check:
    """One line of /readyz: ``ready`` false makes the whole answer 503."""

    ready: bool
    detail: str


class Readiness:
    """/readyz: 200 when every check is ready, else 503; one line per check either way."""

    def __init__(self, checks: Mapping[str, Callable[[], Check]]) -> None:
        self.checks = dict(checks)

    def respond(self, request: Request) -> Response:
        results = {name: check() for name, check in self.checks.items()}
        ready = all(result.ready for result in results.values())
        lines = ["ready" if ready else "not ready",
                 *(f"{name}: {result.detail}" for name, result in results.items())]
        return Response(200 if ready else 503, "\n".join(lines) + "\n")


def metrics_page(request: Request) -> Response:
    """Prometheus' text format: every gpuwhy metric (bot.web.metrics.REGISTRY)."""
    return Response(200, page(), CONTENT_TYPE)


def cluster_check(source: object) -> Callable[[], Check]:
    def check() -> Check:
        if isinstance(source, WatchSource) and (stale := source.staleness()) is not None:
            return Check(False, stale)
        if source_ready(source):
            return Check(True, "ready")
        return Check(False, "loading (the watch cache has not listed nodes and pods yet)")
    return check


def store_check(journal: IncidentJournal | None) -> Callable[[], Check]:
    """The store never makes serve unready: answers go out and wait in the journal."""
    return lambda: Check(True, store_status(journal))


def cluster_state(source: TriageSource) -> str:
    """"ready", "loading" (a watch cache's first lists), or "unavailable: why"."""
    if isinstance(source, UnavailableSource):
        return f"unavailable: {source.reason}"
    if isinstance(source, WatchSource) and (stale := source.staleness()) is not None:
        return stale
    return "ready" if source_ready(source) else "loading"


def watch_caches(fleet: Fleet) -> dict[str, CacheReading]:
    """For the watch cache gauges: each cluster's cache (clusters read from a dump have none)."""
    return {name: source.cache_reading() for name, source in fleet.sources.items()
            if isinstance(source, WatchSource)}


def clusters_up(fleet: Fleet) -> dict[str, bool]:
    """For the gpuwhy_cluster_up gauge: which clusters can answer now."""
    return {name: cluster_state(source) == "ready" for name, source in fleet.sources.items()}


def readiness_checks(fleet: Fleet) -> dict[str, Callable[[], Check]]:
    """/readyz lines: one per cluster, and for several clusters a first line that is ready as
    long as one cluster answers. A cluster that is down or still loading is said on its line
    but does not take the bot out of service: the other clusters still answer."""
    if not fleet.several:
        return {"cluster": cluster_check(fleet.source())}

    def answering() -> Check:
        ready = [name for name, up in clusters_up(fleet).items() if up]
        return Check(bool(ready), f"{len(ready)} of {len(fleet.sources)} answering")

    def line(source: TriageSource) -> Callable[[], Check]:
        return lambda: Check(True, cluster_state(source))

    return {"clusters": answering,
            **{f"cluster {name}": line(source) for name, source in fleet.sources.items()}}


def healthz(request: Request) -> Response:
    return Response(200, "ok\n")


class ReplayGuard:
    """Signed requests already answered: one seen again within the signature window (a replay,
    or a proxy sending it twice) is acknowledged and not acted on. Memory is checked before the
    ack (it costs nothing); the store, so replicas sharing it agree, is claimed after the ack,
    on the answer workers, before anything is done for the request. With the store failing,
    memory alone."""

    def __init__(self, store: Store | None = None, capacity: int = 10_000) -> None:
        self.store = store
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def first_here(self, stamp: str, signature: str) -> str | None:
        """The request's claim key when this process has not seen it yet, else None."""
        key = hashlib.sha256(f"{stamp}:{signature}".encode()).hexdigest()
        with self._lock:
            if key in self._seen:
                return None
            self._seen[key] = None
            while len(self._seen) > self._capacity:
                self._seen.popitem(last=False)
        return key

    def claim(self, key: str) -> bool:
        """False when a replica sharing the store (this one too) already took the request."""
        store = self.store
        if store is None:
            return True
        try:
            first = store.quickly(lambda: store.claim_request(key), "claim a Slack request")
        except StoreError as exc:
            log.warning("incident store: cannot claim a signed request, answering it: %s", exc)
            return True
        if not first:
            log.info("not acting on a signed request seen before (same timestamp and "
                     "signature), claimed in the store by a replica")
        return first


class SlackEndpoint:
    """POST /slack/events: Slack's signature checked on the raw bytes, then bolt, whose listeners
    ack at once and leave the rest (the store claim, triage, posts) to the answer workers.

    Nothing parses a body before its signature holds, so an unsigned body costs an HMAC and
    nothing else; a signed body that does not parse is a 400 and one log line. Each request
    is marked on ``acks``, the answer workers' gate, while it is handled.
    """

    def __init__(self, app: App, signing_secret: str, guard: ReplayGuard | None = None,
                 clock: Callable[[], float] = time.time, acks: AcksFirst | None = None) -> None:
        self.app = app
        self.secret = signing_secret.encode("utf-8")
        self.guard = guard if guard is not None else ReplayGuard()
        self.clock = clock
        self.acks = acks if acks is not None else AcksFirst()

    def __call__(self, request: Request) -> Response:
        with self.acks.acking():
            return self.handle(request)

    def handle(self, request: Request) -> Response:
        refusal = self.refusal(request)
        if refusal is not None:
            return refusal
        key = self.guard.first_here(request.headers["x-slack-request-timestamp"],
                                    request.headers["x-slack-signature"])
        if key is None:
            log.info("ignored a signed request from %s seen before (same timestamp and "
                     "signature)", request.client)
            return Response(200)
        guard = self.guard
        answered = self.app.dispatch(BoltRequest(
            body=request.body.decode("utf-8"), query=request.query,
            headers={name: [value] for name, value in request.headers.items()},
            context={ONCE: lambda: guard.claim(key)}))
        headers = answered.first_headers_without_set_cookie()
        content_type = headers.pop("content-type", TEXT)
        return Response(answered.status, answered.body, content_type,
                        tuple((name, value) for name, value in headers.items()
                              if name != "content-length"))

    def refusal(self, request: Request) -> Response | None:
        problem = self.signature_problem(request)
        if problem is not None:
            log.info("refused a request from %s: %s", request.client, problem)
            return Response(401, "invalid request\n")
        problem = body_problem(request)
        if problem is not None:
            log.warning("refused a signed request from %s: the body %s", request.client, problem)
            return Response(400, "bad request\n")
        return None

    def signature_problem(self, request: Request) -> str | None:
        stamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        if not _TIMESTAMP.fullmatch(stamp) or not _SIGNATURE.fullmatch(signature):
            return "no Slack signature"
        if abs(self.clock() - int(stamp)) > SIGNATURE_WINDOW_S:
            return "signature timestamp outside the 5-minute window"
        expected = hmac.new(self.secret, b"v0:" + stamp.encode() + b":" + request.body,
                            hashlib.sha256).hexdigest()
        if not hmac.compare_digest(f"v0={expected}", signature):
            return "signature does not match"
        return None


def body_problem(request: Request) -> str | None:
    """Why bolt could not read this body, parsed the way bolt parses it; None when it can."""
    try:
        text = request.body.decode("utf-8")
        content_type = extract_content_type({k: [v] for k, v in request.headers.items()})
        payload = parse_body(text, content_type)
    except UnicodeDecodeError:
        return "is not UTF-8"
    except RecursionError:
        return "is nested too deeply"
    except ValueError as exc:
        return f"does not parse ({type(exc).__name__})"
    return None if isinstance(payload, dict) else "is not an object"


def http_routes(*, slack: SlackEndpoint | None, readiness: Readiness,
                alertmanager: AlertmanagerReceiver | None = None) -> Routes:
    """Every HTTP endpoint of `gpuwhy serve`: adding one is adding its line here."""
    routes: dict[tuple[str, str], Handler | InLoop] = {
        ("GET", HEALTH_PATH): InLoop(healthz),  # never waits for a worker
        ("GET", READY_PATH): readiness.respond,
        ("GET", METRICS_PATH): metrics_page,
    }
    if slack is not None:  # in Socket Mode Slack's requests come over the websocket
        routes["POST", EVENTS_PATH] = slack
    if alertmanager is not None:  # alerts configured (a channel or routes)
        routes["POST", ALERTMANAGER_PATH] = alertmanager.respond
    return routes


def digest_thread(store: Store, client: WebClient, schedule: DigestSchedule,
                  stop: threading.Event) -> threading.Thread:
    """The weekly digest, checked every minute in a daemon thread (not started yet)."""

    def post(channel: str, text: str, blocks: Blocks) -> None:
        post_message(client, "the weekly digest", channel=channel, text=text, blocks=blocks)

    scheduler = DigestScheduler(store, post, schedule, slack_chart(store, client))
    return threading.Thread(target=scheduler.run_forever, args=(stop,), name="gpuwhy-digest",
                            daemon=True)
