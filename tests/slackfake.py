"""A local stand-in for Slack: Web API and response_url over HTTP, Socket Mode over a websocket.

Everything listens on 127.0.0.1 and records what the app sent, so tests can assert on it.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T0GPU"
APP_ID = "A0GPU"
MESSAGE_METHODS = ("chat.postMessage", "chat.postEphemeral", "response_url")
UPLOAD_PATH = "/upload/v1/"  # files.getUploadURLExternal's URLs (files.slack.com/upload/v1/...)

# Block Kit's documented limits; Slack answers invalid_blocks when one is broken.
MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100  # a Home tab or modal view
MAX_SECTION_TEXT = 3000
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_HEADER_TEXT = 150
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_ID = 255  # block_id, action_id
MAX_MESSAGE_TEXT = 40000  # longer top-level text is msg_too_long


def _text_problem(where: str, text: Any, limit: int, kinds: tuple[str, ...]) -> list[str]:
    if not isinstance(text, dict) or text.get("type") not in kinds:
        return [f"{where}: text must be one of {kinds}"]
    length = len(text.get("text") or "")
    if not 1 <= length <= limit:
        return [f"{where}: text is {length} characters, must be 1 to {limit}"]
    return []


def block_kit_problems(blocks: Any, max_blocks: int = MAX_BLOCKS) -> list[str]:
    """What Slack would reject in ``blocks``, as readable lines; empty when Slack takes them."""
    if not isinstance(blocks, list):
        return ["blocks must be a list"]
    problems = [f"{len(blocks)} blocks, at most {max_blocks}"] if len(blocks) > max_blocks else []
    any_text = ("mrkdwn", "plain_text")
    for number, block in enumerate(blocks):
        where, kind = f"block {number}", block.get("type")
        if len(block.get("block_id", "")) > MAX_ID:
            problems.append(f"{where}: block_id longer than {MAX_ID}")
        accessory = block.get("accessory")
        if accessory is not None:
            problems += _button_problems(where, accessory)
        if kind == "section":
            fields = block.get("fields")
            if "text" in block or not fields:
                problems += _text_problem(where, block.get("text"), MAX_SECTION_TEXT, any_text)
            if fields is not None and not 1 <= len(fields) <= MAX_SECTION_FIELDS:
                problems.append(f"{where}: {len(fields)} fields")
            for field in fields or []:
                problems += _text_problem(where, field, MAX_FIELD_TEXT, any_text)
        elif kind == "context":
            elements = block.get("elements") or []
            if not 1 <= len(elements) <= MAX_CONTEXT_ELEMENTS:
                problems.append(f"{where}: {len(elements)} context elements")
            for element in elements:
                problems += _text_problem(where, element, MAX_SECTION_TEXT, any_text)
        elif kind == "header":
            problems += _text_problem(where, block.get("text"), MAX_HEADER_TEXT, ("plain_text",))
        elif kind == "actions":
            elements = block.get("elements") or []
            if not 1 <= len(elements) <= MAX_ACTIONS_ELEMENTS:
                problems.append(f"{where}: {len(elements)} action elements")
            for button in elements:
                problems += _button_problems(where, button)
        elif kind != "divider":
            problems.append(f"{where}: unknown block type {kind!r}")
    return problems


def _button_problems(where: str, button: Any) -> list[str]:
    problems = _text_problem(where, button.get("text"), MAX_BUTTON_TEXT, ("plain_text",))
    if len(button.get("value", "")) > MAX_BUTTON_VALUE:
        problems.append(f"{where}: button value longer than {MAX_BUTTON_VALUE}")
    if not 1 <= len(button.get("action_id", "")) <= MAX_ID:
        problems.append(f"{where}: action_id must be 1 to {MAX_ID} characters")
    return problems


def view_problem(params: dict[str, Any]) -> dict[str, Any] | None:
    """Slack's answer to a views.publish it would refuse (a Home view of valid blocks)."""
    view = params.get("view")
    if isinstance(view, str):
        view = json.loads(view)
    if not isinstance(view, dict) or view.get("type") != "home" or not params.get("user_id"):
        return {"ok": False, "error": "invalid_arguments"}
    if problems := block_kit_problems(view.get("blocks"), MAX_VIEW_BLOCKS):
        return {"ok": False, "error": "invalid_arguments", "response_metadata": {
            "messages": problems}}
    return None


def message_problem(params: dict[str, Any]) -> dict[str, Any] | None:
    """Slack's error answer for a message it would refuse, else None."""
    if "blocks" in params and (problems := block_kit_problems(params["blocks"])):
        return {"ok": False, "error": "invalid_blocks", "errors": problems}
    if len(str(params.get("text", ""))) > MAX_MESSAGE_TEXT:
        return {"ok": False, "error": "msg_too_long"}
    return None


_LIVE_MRKDWN = re.compile(r"<[^>]*>?|&(?!amp;|lt;|gt;)")


def live_mrkdwn(text: str) -> list[str]:
    """Raw ``<...>`` spans (where mentions, links and dates start) and bare ``&`` in ``text``.

    Escaped text (``&lt;``, ``&gt;``, ``&amp;``) is shown literally and is not listed.
    """
    return _LIVE_MRKDWN.findall(text)


@dataclass(frozen=True)
class Call:
    method: str  # Web API method, or "response_url"
    params: dict[str, Any]
    path: str
    headers: dict[str, str]
    answer: dict[str, Any]  # what the fake replied

class _LocalServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # tests send bursts of requests


class FakeSlack:
    """Web API methods gpuwhy uses, recording every call; optional 429s and errors per method."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.uploads: dict[str, bytes] = {}  # file id -> the bytes sent to its upload URL
        self.socket: FakeSocketMode | None = None
        self._changed = threading.Condition()
        self._ts = itertools.count(1)
        self._rate_limited: dict[str, list[int]] = {}  # method -> [remaining, retry_after]
        self._errors: dict[str, str] = {}
        # What Slack reports in x-oauth-scopes: the scopes of deploy/slack-app-manifest.yaml.
        self.scopes = ["commands", "chat:write", "channels:history", "groups:history"]
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = _LocalServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str = "1") -> str:
        return f"http://127.0.0.1:{self.port}/commands/{TEAM}/{name}"

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 0) -> None:
        """Answer the next ``times`` calls of ``method`` with 429 and Retry-After."""
        self._rate_limited[method] = [times, retry_after]

    def fail(self, method: str, error: str) -> None:
        """Answer every call of ``method`` with ``{"ok": false, "error": error}``."""
        self._errors[method] = error

    def calls_to(self, method: str) -> list[Call]:
        with self._changed:
            return [call for call in self.calls if call.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10) -> list[Call]:
        """The first ``count`` calls of ``method``, waiting for them to arrive."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [call for call in self.calls if call.method == method]
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [call.method for call in self.calls]
                    raise AssertionError(f"{count} × {method} not called within {timeout}s: {seen}")
                self._changed.wait(left)

    def settle(self, seconds: float = 0.3) -> None:
        """Give background listeners a moment, for asserting that nothing more was sent."""
        time.sleep(seconds)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self.socket is not None:
            self.socket.close()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        data = request.rfile.read(length)
        if request.path.startswith(UPLOAD_PATH):
            self._upload(request, data)
            return
        raw = data.decode("utf-8")
        if "json" in (request.headers.get("Content-Type") or ""):
            params: dict[str, Any] = json.loads(raw or "{}")
        else:
            params = {k: v[0] for k, v in urllib.parse.parse_qs(raw).items()}
        path = urllib.parse.urlsplit(request.path).path
        method = path.removeprefix("/api/") if path.startswith("/api/") else "response_url"
        with self._changed:
            limited = self._rate_limited.get(method)
            if limited and limited[0] > 0:
                limited[0] -= 1
                status, answer = 429, {"ok": False, "error": "ratelimited"}
                headers = {"Retry-After": str(limited[1])}
            elif method in self._errors:
                status, answer, headers = 200, {"ok": False, "error": self._errors[method]}, {}
            elif method in MESSAGE_METHODS and (refusal := message_problem(params)):
                status = 400 if method == "response_url" else 200
                answer, headers = refusal, {}
            elif method == "views.publish" and (refusal := view_problem(params)):
                status, answer, headers = 200, refusal, {}
            else:
                status, answer, headers = 200, self._answer(method, params), {}
            if method == "auth.test" and answer.get("ok"):
                headers = {"x-oauth-scopes": ",".join(self.scopes)}
            self.calls.append(Call(method, params, request.path, dict(request.headers.items()),
                                   answer))
            self._changed.notify_all()
        self._reply(request, status, answer, headers)

    def _upload(self, request: BaseHTTPRequestHandler, data: bytes) -> None:
        """The upload URL files.getUploadURLExternal hands out: the file's bytes, raw."""
        file_id = request.path.removeprefix(UPLOAD_PATH)
        failing = "upload" in self._errors
        with self._changed:
            self.uploads[file_id] = data
            self.calls.append(Call("upload", {"file_id": file_id, "length": len(data)},
                                   request.path, dict(request.headers.items()),
                                   {"ok": not failing}))
            self._changed.notify_all()
        body = b"upload refused" if failing else f"OK - {len(data)}".encode()
        request.send_response(500 if failing else 200)
        request.send_header("Content-Type", "text/plain; charset=utf-8")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "url": "https://gpuwhy-test.example/", "team": "gpuwhy test",
                    "user": "gpuwhy", "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID}
        if method == "chat.postMessage":
            ts = f"1764511500.{next(self._ts):06d}"
            return {"ok": True, "channel": params.get("channel"), "ts": ts,
                    "message": {"type": "message", "user": BOT_USER, "bot_id": BOT_ID,
                                "text": params.get("text", ""), "ts": ts}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1764511600.{next(self._ts):06d}"}
        if method == "apps.connections.open":
            if self.socket is None:
                return {"ok": False, "error": "invalid_auth"}
            return {"ok": True, "url": self.socket.url}
        if method == "response_url":
            return {"ok": True}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):08d}"
            return {"ok": True, "file_id": file_id,
                    "upload_url": f"http://127.0.0.1:{self.port}{UPLOAD_PATH}{file_id}"}
        if method == "files.completeUploadExternal":
            files = params.get("files")
            listed = json.loads(files) if isinstance(files, str) else files or []
            missing = [f["id"] for f in listed if f.get("id") not in self.uploads]
            if missing or not listed:
                return {"ok": False, "error": "file_not_found"}
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title"),
                                           "size": len(self.uploads[f["id"]])} for f in listed]}
        if method == "views.publish":
            view = params["view"] if isinstance(params["view"], dict) else json.loads(
                params["view"])
            return {"ok": True, "view": {"id": f"V{next(self._ts):08d}", **view}}
        return {"ok": False, "error": "unknown_method"}

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, status: int, body: dict[str, Any],
               headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json; charset=utf-8")
        request.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(data)

class FakeSocketMode:
    """Slack's Socket Mode endpoint: ``hello``, then the envelopes a test pushes; reads the acks."""

    def __init__(self) -> None:
        self.acks: queue.Queue[dict[str, Any]] = queue.Queue()
        self.connected = threading.Event()
        self._connection: ServerConnection | None = None
        self._server = serve(self._session, "127.0.0.1", 0)
        self.port = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket=gpuwhy-test"

    def _session(self, connection: ServerConnection) -> None:
        self._connection = connection
        connection.send(json.dumps({
            "type": "hello", "num_connections": 1,
            "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
            "connection_info": {"app_id": APP_ID},
        }))
        self.connected.set()
        try:
            for message in connection:
                self.acks.put(json.loads(message))
        except ConnectionClosed:
            return  # the app went away without a close frame, as a killed process does

    def send(self, envelope: dict[str, Any]) -> None:
        if not self.connected.wait(10) or self._connection is None:
            raise AssertionError("the app never connected to the Socket Mode endpoint")
        self._connection.send(json.dumps(envelope))

    def ack_for(self, envelope_id: str, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                ack = self.acks.get(timeout=left)
            except queue.Empty:
                break
            if ack.get("envelope_id") == envelope_id:
                return ack
        raise AssertionError(f"no ack for envelope {envelope_id} within {timeout}s")

    def close(self) -> None:
        self._server.shutdown()

# --- requests as Slack sends them -----------------------------------------------------------

def sign(secret: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    """Headers Slack adds: X-Slack-Request-Timestamp and the v0 HMAC-SHA256 signature."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={digest}"}

def command_payload(text: str, *, channel: str = "C0SUPPORT", user: str = "U0ALICE",
                    response_url: str = "", trigger: str = "1") -> dict[str, str]:
    return {
        "token": "legacy-verification-token", "team_id": TEAM, "team_domain": "gpuwhy-test",
        "channel_id": channel, "channel_name": "support", "user_id": user, "user_name": "alice",
        "command": "/gpuwhy", "text": text, "api_app_id": APP_ID, "is_enterprise_install": "false",
        "response_url": response_url, "trigger_id": f"{trigger}.1.abc",
    }

def command_body(text: str, **kwargs: Any) -> str:
    return urllib.parse.urlencode(command_payload(text, **kwargs))

def message_event(text: str, *, channel: str = "C0SUPPORT", thread_ts: str | None,
                  event_id: str, user: str = "U0ALICE", ts: str = "1764511999.000100",
                  ) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "message", "channel": channel, "user": user, "text": text, "ts": ts,
        "event_ts": ts, "channel_type": "channel",
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return {
        "token": "legacy-verification-token", "team_id": TEAM, "api_app_id": APP_ID,
        "event": event, "type": "event_callback", "event_id": event_id,
        "event_time": 1764511999, "authorizations": [
            {"team_id": TEAM, "user_id": BOT_USER, "is_bot": True, "is_enterprise_install": False}
        ],
    }

def button_payload(*, channel: str, message_ts: str, value: str, user: str = "U0ALICE",
                   response_url: str = "") -> dict[str, Any]:
    return {
        "type": "block_actions", "team": {"id": TEAM, "domain": "gpuwhy-test"},
        "user": {"id": user, "username": "alice", "team_id": TEAM}, "api_app_id": APP_ID,
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel,
                      "is_ephemeral": False},
        "trigger_id": "2.1.abc", "channel": {"id": channel, "name": "support"},
        "message": {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "ts": message_ts,
                    "text": "answer"},
        "response_url": response_url,
        "actions": [{"action_id": "show_devices", "block_id": "gpuwhy_answer",
                     "text": {"type": "plain_text", "text": "Show devices"}, "value": value,
                     "type": "button", "action_ts": "1764512000.000001"}],
    }

def button_body(**kwargs: Any) -> str:
    return urllib.parse.urlencode({"payload": json.dumps(button_payload(**kwargs))})


def http(port: int, path: str, body: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, str]:
    """GET (no body) or POST to 127.0.0.1:``port``; the status and the body, errors included."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=None if body is None else body.encode(),
        headers=headers or {}, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


# --- `gpuwhy serve` as a process --------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"listening on http://[^:]+:(\d+)")


class ServeProcess:
    """`gpuwhy serve` in a child process; Slack and store settings come only from ``env``."""

    def __init__(self, args: list[str], env: dict[str, str], *, verbose: bool = False) -> None:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("SLACK_", "GPUWHY_"))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", *(["-v"] if verbose else []), "serve",
             "--host", "127.0.0.1", "--port", "0", *args],
            cwd=REPO, env={**base, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            self.lines.put(line)

    def port(self, timeout: float = 20) -> int:
        """The HTTP port, once serve says it is listening."""
        return int(self.wait_for_line(LISTENING, timeout).group(1))

    def wait_for_line(self, pattern: re.Pattern[str], timeout: float = 20) -> re.Match[str]:
        """The first line of stderr, from now on, that matches ``pattern``."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if match := pattern.search(line):
                return match
        raise AssertionError(f"no line matching {pattern.pattern!r}: {''.join(self.stderr)}")

    def wait_remembered(self, ts: str) -> None:
        """Until the answer posted as ``ts`` is remembered for its thread (needs verbose)."""
        self.wait_for_line(re.compile(rf"answered .* ts {re.escape(ts)}$"))

    def wait(self, timeout: float = 20) -> int:
        return self.process.wait(timeout)

    def stop(self) -> int:
        """SIGTERM, as a container runtime sends it; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(20)
