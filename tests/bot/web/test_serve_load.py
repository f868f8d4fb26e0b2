"""`gpuwhy serve` under load, as a real process: many idle and slow connections held open from
threads, a burst of signed commands, and a store that never answered. One client must not
silence the bot: /healthz stays fast, Slack's acks stay far inside its 3 seconds, and every
answer is given and stored once."""

from __future__ import annotations

import json
import os
import resource
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.bot.slack.test_slack_app import wait_until
from tests.bot.web.test_serve import SECRET, SEVEN_STATES, environment, post_signed, wait_ready
from tests.bot.web.test_serve_hostile import request
from tests.slackfake import FakeSlack, ServeProcess, command_body, http, sign

FORM = "application/x-www-form-urlencoded"
IDLE, SLOW = 1000, 100
BURST = 200
ACK_LIMIT_S = 1.0  # Slack allows 3 s; gpuwhy's ack is a signature check and a 200
HEALTH_LIMIT_S = 0.1
# A request line and headers a slow client never finishes: one byte every TRICKLE_S.
SLOW_HEAD = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 1000
TRICKLE_S = 0.2


@pytest.fixture(autouse=True)
def room_for_sockets() -> Iterator[None]:
    """This process holds the clients' ends of every connection (and serve inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * (IDLE + SLOW + BURST)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (
            wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextmanager
def served(slack: FakeSlack, tmp_path: Path, **env: str) -> Iterator[ServeProcess]:
    process = ServeProcess(["--snapshot", SEVEN_STATES], environment(slack, tmp_path, **env),
                           verbose=True)
    try:
        yield process
    finally:
        assert process.stop() == 0
    assert "Traceback" not in "".join(process.stderr)


@contextmanager
def held_open(port: int, idle: int, slow: int) -> Iterator[list[socket.socket]]:
    """``idle`` connections that send nothing and ``slow`` ones trickling a request that never
    ends, each slow one from its own thread; all closed on exit."""
    stop = threading.Event()
    idle_conns = [socket.create_connection(("127.0.0.1", port), timeout=10)
                  for _ in range(idle)]

    def trickle() -> None:
        with suppress(OSError), socket.create_connection(("127.0.0.1", port),
                                                         timeout=10) as conn:
            for byte in SLOW_HEAD:
                if stop.wait(TRICKLE_S):
                    return
                conn.send(bytes([byte]))

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(slow)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1)  # every slow client connected and sending
        yield idle_conns
    finally:
        stop.set()
        for conn in idle_conns:
            conn.close()
        for thread in threads:
            thread.join(5)


def still_open(conn: socket.socket) -> bool:
    """Nothing to read yet and no end of stream: the server has not closed it."""
    conn.setblocking(False)
    try:
        return conn.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionError:
        return False
    finally:
        conn.setblocking(True)


def timed_get(port: int, path: str) -> tuple[int, float]:
    started = time.monotonic()
    status, _ = http(port, path)
    return status, time.monotonic() - started


def incidents(tmp_path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(tmp_path / "gpuwhy.db") as db:
        return db.execute("SELECT cause, message_ts FROM incidents").fetchall()


def test_idle_and_slow_connections_cost_a_socket_not_the_bot(tmp_path: Path,
                                                             slack: FakeSlack) -> None:
    with served(slack, tmp_path) as process:
        port = process.port()
        with held_open(port, IDLE, SLOW) as idle:
            probes = [timed_get(port, "/healthz") for _ in range(5)]
            assert [status for status, _ in probes] == [200] * 5
            slowest = max(seconds for _, seconds in probes)
            assert slowest < HEALTH_LIMIT_S, f"/healthz took {slowest * 1000:.0f} ms"
            body = command_body("research/full", response_url=slack.response_url())
            started = time.monotonic()
            assert post_signed(port, body, FORM) == (200, "")
            ack = time.monotonic() - started
            assert ack < ACK_LIMIT_S, f"ack took {ack:.2f} s"
            [answer] = slack.wait_for("chat.postMessage")
            process.wait_remembered(answer.answer["ts"])
            # Still all open on the server's side: nothing was closed to make room.
            assert sum(1 for conn in idle if still_open(conn)) == IDLE
    assert incidents(tmp_path) == [("exhausted", answer.answer["ts"])]


# The burst is sent from a process of its own, so the times are the server's: not those of
# this test process, whose threads, collector and earlier tests' servers share one GIL.
BURST_CLIENT = """
import json, socket, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

port = int(sys.argv[1])
requests = [bytes.fromhex(text) for text in json.load(sys.stdin)]
start = threading.Barrier(len(requests))

def ask(data):
    start.wait()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.") else 0
    return status, time.monotonic() - started

with ThreadPoolExecutor(len(requests)) as pool:
    print(json.dumps(list(pool.map(ask, requests))))
"""


def burst(port: int, requests: list[bytes]) -> list[tuple[int, float]]:
    """Each request sent at once on its own connection: (status, seconds to the whole reply)."""
    done = subprocess.run([sys.executable, "-c", BURST_CLIENT, str(port)], check=True,
                          input=json.dumps([data.hex() for data in requests]),
                          capture_output=True, text=True, timeout=120)
    return [(status, seconds) for status, seconds in json.loads(done.stdout)]


def test_a_burst_of_signed_commands_is_acked_at_once_and_answered_once(
        tmp_path: Path, slack: FakeSlack) -> None:
    bodies = [command_body("research/full", response_url=slack.response_url(str(number)))
              for number in range(BURST)]
    # Sent as raw bytes built beforehand: the times are the server's, not this process's
    # 200 threads building requests.
    signed = [request(body.encode(), headers=sign(SECRET, body)) for body in bodies]
    with served(slack, tmp_path) as process:
        port = process.port()
        wait_ready(port)  # as the Deployment's readiness probe does before Slack's requests
        acks = burst(port, signed)
        load = os.getloadavg()[0]
        seconds = sorted(took for _, took in acks)
        figures = (f"acks p50 {statistics.median(seconds):.3f} s, max {seconds[-1]:.3f} s, "
                   f"load {load:.1f}")
        print(figures)
        assert [status for status, _ in acks] == [200] * BURST
        assert seconds[-1] < ACK_LIMIT_S, figures
        posts = slack.wait_for("chat.postMessage", BURST, timeout=60)
        # Every answer journaled and then stored: nothing waits.
        wait_until(lambda: http(port, "/readyz") == (200, "ready\ncluster: ready\nstore: ok\n")
                   or None, timeout=30)
        slack.settle(0.5)
        assert len(slack.calls_to("chat.postMessage")) == BURST
    stored = incidents(tmp_path)
    assert sorted(ts for _, ts in stored) == sorted(str(post.answer["ts"]) for post in posts)
    assert len(set(ts for _, ts in stored)) == BURST


def test_a_store_that_never_answered_says_so_from_the_start(tmp_path: Path,
                                                            slack: FakeSlack) -> None:
    refused = "postgresql+psycopg://gpuwhy@127.0.0.1:1/gpuwhy"  # nothing listens on port 1
    journal = tmp_path / "incidents.jsonl"
    with served(slack, tmp_path, GPUWHY_DATABASE_URL=refused,
                GPUWHY_JOURNAL=str(journal)) as process:
        port = process.port()
        status, text = http(port, "/readyz")  # the first request serve gets
        assert status == 200  # answers still go out: they wait in the journal
        store_line = text.splitlines()[-1]
        assert store_line.startswith(
            "store: failing (0 incidents waiting in the journal): database "
            "postgresql+psycopg://gpuwhy@127.0.0.1:1/gpuwhy: cannot upgrade the schema: ")
        assert "Connection refused" in store_line
        body = command_body("research/full", response_url=slack.response_url())
        assert post_signed(port, body, FORM) == (200, "")
        [answer] = slack.wait_for("chat.postMessage")
        # Journaled just after the answer is remembered: it waits there, and /readyz says so.
        wait_until(lambda: http(port, "/readyz")[1].splitlines()[-1].startswith(
            "store: failing (1 incidents waiting in the journal): ") or None)
    assert answer.answer["ts"] in journal.read_text(encoding="utf-8")
