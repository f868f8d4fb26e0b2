"""Hostile HTTP against `gpuwhy serve`: lying lengths, huge and nested bodies, clients that
leave, idle or trickle. The server answers (or closes), stays small, and logs no traceback."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from bot.web.server import HTTPLimits
from tests.bot.slack.test_slack_app import SECRET, make_app, simple_source, web_calls
from tests.bot.web.test_serve import SEVEN_STATES, environment
from tests.bot.web.test_serve_endpoint import serving as endpoint_serving
from tests.slackfake import FakeSlack, ServeProcess, command_body, http, sign

MIB = 1 << 20
FORM = "application/x-www-form-urlencoded"


@contextmanager
def serving(slack: FakeSlack, limits: HTTPLimits | None = None) -> Iterator[int]:
    with endpoint_serving(make_app(slack, simple_source()), limits=limits) as port:
        yield port


def raw(port: int, data: bytes, timeout: float = 5) -> bytes:
    """Send ``data`` as it is and read until the server closes (or ``timeout``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        return read_all(conn)


def read_all(conn: socket.socket) -> bytes:
    chunks = []
    with suppress(ConnectionResetError, TimeoutError):
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.") else 0


def request(body: bytes, *, length: str | None = None, headers: dict[str, str] | None = None,
            content_type: str = FORM) -> bytes:
    lines = ["POST /slack/events HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}",
             f"Content-Length: {len(body) if length is None else length}",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def signed_request(body: str, content_type: str = FORM) -> bytes:
    return request(body.encode(), headers=sign(SECRET, body), content_type=content_type)


def rss_kib(pid: int, field: str = "VmHWM") -> int:
    """Peak resident memory of ``pid`` so far (KiB), as the kernel counts it."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def push(port: int, head: bytes, total: int, chunk: bytes = b"[" * MIB,
         seconds: float = 10) -> bytes:
    """Send ``head`` then ``chunk`` until ``total`` bytes, as fast as the server takes them;
    the reply, once the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as conn:
        conn.sendall(head)
        deadline = time.monotonic() + seconds
        with suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            sent = 0
            while sent < total and time.monotonic() < deadline:
                conn.sendall(chunk)
                sent += len(chunk)
        return read_all(conn)


def test_lying_and_huge_lengths_cost_no_memory(tmp_path: Path, slack: FakeSlack) -> None:
    served = ServeProcess(["--snapshot", SEVEN_STATES], environment(slack, tmp_path),
                          verbose=True)
    try:
        port = served.port()
        assert http(port, "/healthz") == (200, "ok\n")
        before = rss_kib(served.process.pid)
        cases = {
            "-1": (request(b"", length="-1"), 400),
            "256 MiB declared": (request(b"", length=str(256 * MIB)), 413),
            "abc": (request(b"", length="abc"), 400),
        }
        for name, (head, expected) in cases.items():
            reply = push(port, head, 256 * MIB)
            assert status_of(reply) == expected, name
        chunked = (b"POST /slack/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                   b"Content-Type: application/json\r\n\r\n")
        frame = b"%x\r\n%s\r\n" % (MIB, b"[" * MIB)
        reply = push(port, chunked, 256 * MIB, frame)
        # Refused once past the limit; the client may see the 413 or, still sending, a reset.
        assert status_of(reply) in (413, 0)
        grown_mib = (rss_kib(served.process.pid) - before) / 1024
        assert grown_mib < 100, f"peak RSS grew by {grown_mib:.0f} MiB"
        assert http(port, "/healthz") == (200, "ok\n")
    finally:
        assert served.stop() == 0
    log = "".join(served.stderr)
    assert "Traceback" not in log
    assert "[[[[" not in log  # the rejected body is never logged, even with -v
    assert slack.calls_to("chat.postMessage") == []


DEEP = "[" * 200_000


@pytest.mark.parametrize(("name", "build", "expected"), [
    ("deep JSON, unsigned", lambda: request(DEEP.encode(), content_type="application/json"), 401),
    ("form body {abc, unsigned", lambda: request(b"{abc,"), 401),
    ("Content-Length abc", lambda: request(b"x", length="abc"), 400),
    ("Content-Length -1", lambda: request(b"x", length="-1"), 400),
    ("two lengths", lambda: request(b"x", headers={"Content-Length": "5"}), 400),
    ("over the limit", lambda: request(b"x", length=str(2 * MIB)), 413),
    ("deep JSON, signed", lambda: signed_request(DEEP, "application/json"), 400),
    ("{abc, signed", lambda: signed_request("{abc,"), 400),
    ("payload= not JSON, signed", lambda: signed_request("payload=%7Babc"), 400),
    ("a JSON list, signed", lambda: signed_request("[1, 2]", "application/json"), 400),
    ("not UTF-8, another body's signature",
     lambda: request(b"\xff\xfe", headers=sign(SECRET, "\xff\xfe")), 401),
])
def test_hostile_bodies_get_a_status_and_no_traceback(
        name: str, build: Callable[[], bytes], expected: int, slack: FakeSlack,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serving(slack) as port:
        # Built now: a signature made at collection time may be past its 5 minutes here.
        assert status_of(raw(port, build())) == expected, name
        assert http(port, "/healthz") == (200, "ok\n")
    assert not [r for r in caplog.records if r.exc_info], name
    slack.settle(0.1)
    assert web_calls(slack) == []


def test_a_signed_body_that_does_not_parse_is_one_log_line(
        slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    with serving(slack) as port:
        assert status_of(raw(port, signed_request(DEEP, "application/json"))) == 400
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line == "refused a signed request from 127.0.0.1: the body is nested too deeply"


def test_signed_non_utf8_body_is_a_400(slack: FakeSlack) -> None:
    # Slack signs bytes; one that is not UTF-8 is signed correctly here and still unreadable.
    body = b"text=\xff"
    stamp = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), b"v0:" + stamp.encode() + b":" + body,
                      hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}
    with serving(slack) as port:
        assert status_of(raw(port, request(body, headers=headers))) == 400


def test_a_client_that_leaves_before_the_reply(slack: FakeSlack,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    body = command_body("research/full", response_url=slack.response_url())
    with serving(slack) as port:
        for attempt in range(20):
            conn = socket.create_connection(("127.0.0.1", port))
            conn.sendall(signed_request(body))
            if attempt % 2:  # gone with a reset at once
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # the reply has nowhere to go
        slack.settle(0.5)
        assert http(port, "/healthz") == (200, "ok\n")
    assert not [r for r in caplog.records if r.exc_info]


def open_idle(port: int, count: int, partial: bytes = b"") -> list[socket.socket]:
    conns = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        if partial:
            conn.sendall(partial)
        conns.append(conn)
    return conns


def closed_by_server(conn: socket.socket, timeout: float) -> bool:
    conn.settimeout(timeout)
    try:
        return conn.recv(65536) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_idle_and_held_open_connections_cost_no_threads_and_are_closed(
        slack: FakeSlack) -> None:
    limits = HTTPLimits(threads=4, connections=400, idle_timeout_s=2, request_timeout_s=3)
    threads_before = threading.active_count()
    with serving(slack, limits) as port:
        idle = open_idle(port, 300)
        held = open_idle(port, 50, b"POST /slack/events HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.5)
        # Every socket is open, the server still answers, and only its fixed pool runs.
        assert http(port, "/healthz") == (200, "ok\n")
        assert threading.active_count() <= threads_before + limits.threads + 2
        started = time.monotonic()
        assert all(closed_by_server(conn, 6) for conn in idle)
        assert all(closed_by_server(conn, 6) for conn in held)
        assert time.monotonic() - started < 6
        for conn in idle + held:
            conn.close()


def test_a_client_trickling_its_headers_is_cut_off(slack: FakeSlack) -> None:
    limits = HTTPLimits(idle_timeout_s=60, request_timeout_s=2)
    with serving(slack, limits) as port, socket.create_connection(("127.0.0.1", port)) as conn:
        started = time.monotonic()
        conn.settimeout(0.2)
        with suppress(BrokenPipeError, ConnectionResetError):
            for byte in b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 100:
                conn.send(bytes([byte]))  # never silent for long: the idle timeout never fires
                try:
                    if conn.recv(1) == b"":
                        break
                except TimeoutError:
                    continue
        took = time.monotonic() - started
        assert 2 <= took < 5, f"cut off after {took:.1f}s"


def test_connections_past_the_limit_are_closed_and_the_server_recovers(
        slack: FakeSlack) -> None:
    limits = HTTPLimits(connections=20, idle_timeout_s=1)
    with serving(slack, limits) as port:
        conns = open_idle(port, 40)
        # The last 20 are closed as soon as they are accepted, the first 20 when idle too long.
        assert all(closed_by_server(conn, 6) for conn in conns)
        assert http(port, "/healthz") == (200, "ok\n")  # a new connection fits again
        for conn in conns:
            conn.close()
        assert http(port, "/healthz") == (200, "ok\n")


def test_url_verification_and_commands_still_work_through_the_guard(slack: FakeSlack) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "c1"})
    with serving(slack) as port:
        reply = raw(port, signed_request(body, "application/json"))
        assert status_of(reply) == 200 and reply.endswith(b'{"challenge": "c1"}')


def test_a_body_of_exactly_the_limit_is_read(slack: FakeSlack) -> None:
    # The documented limit is 1 MiB: a body of exactly that is read and answered.
    body = "command=%2Fgpuwhy&text=" + "a" * (MIB - 23)
    assert len(body) == MIB
    with serving(slack) as port:
        assert status_of(raw(port, signed_request(body))) == 200
        # One byte more is refused on the length alone, before the body is read.
        assert status_of(raw(port, request(b"", length=str(MIB + 1)))) == 413
