"""Running the Slack app: HTTP (signed requests on /slack/events) or Socket Mode, health checks,
the weekly digest thread and the retry of unstored incidents."""

from __future__ import annotations

import logging
import re
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, runtime_checkable

from slack_bolt import App, BoltRequest
from slack_sdk import WebClient

from bot.config import DigestSchedule
from bot.digest import Blocks, DigestScheduler
from bot.listeners.state import BotState
from bot.store import Store

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
FLUSH_INTERVAL_S = 60.0
MAX_BODY = 1 << 20  # Slack payloads are far smaller
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


@runtime_checkable
class ReadinessSource(Protocol):
    """A triage source that needs time to start (a watch cache filling up)."""

    def ready(self) -> bool: ...


def source_ready(source: object) -> bool:
    return source.ready() if isinstance(source, ReadinessSource) else True


class SlackHTTPServer(ThreadingHTTPServer):
    """Health checks always; Slack's events, commands and actions when ``app`` is given."""

    daemon_threads = True
    request_queue_size = 128  # the default 5 resets connections when Slack sends a burst

    def __init__(self, address: tuple[str, int], app: App | None,
                 ready: Callable[[], bool]) -> None:
        super().__init__(address, _Handler)
        self.app = app
        self.ready = ready

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: SlackHTTPServer

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        if path == HEALTH_PATH:
            self._send(200, b"ok\n")
        elif path == READY_PATH:
            ready = self.server.ready()
            self._send(200 if ready else 503, b"ready\n" if ready else b"not ready\n")
        else:
            self._send(404, b"not found\n")

    def do_POST(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        if parts.path != EVENTS_PATH or self.server.app is None:
            self._send(404, b"not found\n")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, b"too large\n")
            return
        stamp = self.headers.get(TIMESTAMP_HEADER)
        if stamp is not None and not _TIMESTAMP.fullmatch(stamp):
            # Unchecked, bolt's signature check fails on it with a 500 and a traceback.
            self._send(401, b"invalid request\n")
            return
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        headers: dict[str, Any] = {name: self.headers.get_all(name) for name in self.headers}
        response = self.server.app.dispatch(
            BoltRequest(body=body, query=parts.query, headers=headers))
        self.send_response(response.status)
        for name, values in response.headers.items():
            for value in values:
                self.send_header(name, value)
        data = response.body.encode("utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def digest_thread(store: Store, client: WebClient, schedule: DigestSchedule,
                  stop: threading.Event) -> threading.Thread:
    """The weekly digest, checked every minute in a daemon thread (not started yet)."""

    def post(channel: str, text: str, blocks: Blocks) -> None:
        client.chat_postMessage(channel=channel, text=text, blocks=blocks)

    scheduler = DigestScheduler(store, post, schedule)
    return threading.Thread(target=scheduler.run_forever, args=(stop,), name="gpuwhy-digest",
                            daemon=True)


def flush_thread(state: BotState, stop: threading.Event,
                 interval_s: float = FLUSH_INTERVAL_S) -> threading.Thread:
    """Every ``interval_s`` until ``stop``, retry incidents the store could not take yet, so
    a quiet bot does not keep them in memory only (a daemon thread, not started yet)."""

    def run() -> None:
        while not stop.wait(interval_s):
            try:
                state.flush()
            except Exception:  # whatever it was, the next round tries again
                log.exception("incident store: retrying waiting incidents failed")

    return threading.Thread(target=run, name="gpuwhy-flush", daemon=True)
