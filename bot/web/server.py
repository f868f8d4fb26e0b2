"""The HTTP server under `gpuwhy serve`: uvicorn (asyncio, h11) running gpuwhy's route table.

A connection costs a socket and a timer in the event loop, never a thread: idle and slow
clients can hold thousands of them and the bot still answers. /healthz is answered in the event
loop itself; every other route runs on a fixed pool of worker threads once its request has
been read whole. h11 refuses a malformed Content-Length (400); a declared or chunked body over
the limit is a 413 before more of it is read. On top of the idle timeout gpuwhy keeps a
deadline for the whole request, so a client that trickles its headers a byte at a time is
cut off too (uvicorn's own keep-alive timer only runs between requests).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)
# uvicorn's start-up lines ("Uvicorn running on ...") would contradict serve's own line.
logging.getLogger("uvicorn.error").setLevel(logging.WARNING)

TEXT = "text/plain; charset=utf-8"
BACKLOG = 2048  # connections the kernel holds while the loop accepts a burst
REFUSED_LOG_INTERVAL_S = 10.0
FILES_BESIDES_CONNECTIONS = 512  # the store, the journal, Slack and Kubernetes clients


@dataclass(frozen=True)
class HTTPLimits:
    """What one client may cost the server."""

    threads: int = 16  # requests handled at once; the rest wait, read, in the event loop
    connections: int = 10_000  # open sockets; one past it is closed as soon as it is accepted
    max_body_bytes: int = 1 << 20  # Slack's payloads are far smaller; exactly this is accepted
    max_header_bytes: int = 16 << 10
    request_timeout_s: int = 10  # from a request's first byte to its last
    idle_timeout_s: int = 30  # a connection with no request in flight
    shutdown_grace_s: int = 5  # for requests being answered when serve stops


@dataclass(frozen=True)
class Request:
    """A request with its body read (within the server's limits)."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]  # lower-case names; a repeated header's values joined by ", "
    body: bytes
    client: str


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes | str = b""
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = field(default=())

    @property
    def data(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


Handler = Callable[[Request], Response]


@dataclass(frozen=True)
class InLoop:
    """A handler answered in the event loop: it must never block (the health check)."""

    handler: Handler


# (method, path) → what answers it: a handler run on a worker thread, or one run in the loop.
Routes = Mapping[tuple[str, str], Handler | InLoop]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class _TooLarge(Exception):
    pass


class _Gone(Exception):
    pass


class Application:
    """The ASGI application the server runs: one route table, 404 and 405 for the rest."""

    def __init__(self, routes: Routes, limits: HTTPLimits, workers: ThreadPoolExecutor) -> None:
        self.routes = dict(routes)
        self.limits = limits
        self.workers = workers

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        route = self.routes.get((method, path))
        if route is None:
            allowed = sorted(m for m, p in self.routes if p == path)
            response = Response(405, "method not allowed\n",
                                headers=(("Allow", ", ".join(allowed)),)) if allowed \
                else Response(404, "not found\n")
            await _send(send, response)
            return
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key, text = name.decode("latin-1"), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        try:
            body = await self._body(headers, receive)
        except _TooLarge:
            await _send(send, Response(413, "request body too large\n"), close=True)
            return
        except _Gone:
            return
        client = scope.get("client")
        request = Request(method=method, path=path,
                          query=scope["query_string"].decode("latin-1"), headers=headers,
                          body=body, client=client[0] if client else "?")
        try:
            if isinstance(route, InLoop):
                response = route.handler(request)
            else:
                loop = asyncio.get_running_loop()
                response = await loop.run_in_executor(self.workers, route, request)
        except Exception:
            log.exception("%s %s failed", method, path)
            response = Response(500, "internal error\n")
        await _send(send, response)

    async def _body(self, headers: Mapping[str, str], receive: Receive) -> bytes:
        # h11 has checked the length: digits only, one value.
        if int(headers.get("content-length") or 0) > self.limits.max_body_bytes:
            raise _TooLarge
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Gone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body_bytes:  # chunked: no length said in advance
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _send(send: Send, response: Response, *, close: bool = False) -> None:
    data = response.data
    headers = [(b"content-type", response.content_type.encode("latin-1")),
               (b"content-length", str(len(data)).encode()),
               *((name.lower().encode("latin-1"), value.encode("latin-1"))
                 for name, value in response.headers)]
    if close:  # the rest of the body is not read: the connection cannot carry another request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class _Connection(H11Protocol):
    """uvicorn's HTTP/1.1 connection with gpuwhy's limits: a cap on open connections, an idle
    timeout before the first request, and a deadline for each request to arrive whole."""

    limits = HTTPLimits()
    refused_logged_at = float("-inf")

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._deadline: asyncio.TimerHandle | None = None
        self._reading = False
        self._half_closed = False
        if len(self.connections) > self.limits.connections:
            now = self.loop.time()
            if now - _Connection.refused_logged_at >= REFUSED_LOG_INTERVAL_S:  # no log flood
                _Connection.refused_logged_at = now
                log.warning("closing new connections (from %s first): %d are open already",
                            self._peer(), self.limits.connections)
            self.transport.close()
            return
        self._arm(self.limits.idle_timeout_s, "idle")

    def data_received(self, data: bytes) -> None:
        if not self._reading:
            self._reading = True
            self._arm(self.limits.request_timeout_s, "request incomplete")
        super().data_received(data)
        cycle = self.cycle
        if cycle is not None and not cycle.more_body and self._reading:
            self._reading = False  # read whole: from here uvicorn's keep-alive timer runs
            self._disarm()

    def eof_received(self) -> bool:  # type: ignore[override]  # asyncio.Protocol allows bool
        """A client that half-closes after sending its request still gets the answer; the
        connection closes once it is sent."""
        self._half_closed = self.cycle is not None and not self.cycle.response_complete
        return self._half_closed

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._half_closed:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, seconds: float, why: str) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expire, seconds, why)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self, seconds: float, why: str) -> None:
        if not self.transport.is_closing():
            log.info("closed the connection from %s: %s after %g s", self._peer(), why, seconds)
            self.transport.close()

    def _peer(self) -> str:
        return self.client[0] if self.client else "?"


def _make_room(connections: int) -> None:
    """Raise the soft limit on open files toward the hard one, so ``connections`` sockets fit
    (many systems start processes at 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + FILES_BESIDES_CONNECTIONS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


class HTTPServer:
    """Serves ``routes`` on ``host``:``port`` until :meth:`shutdown`; binds at once, so a taken
    port is an OSError here."""

    def __init__(self, host: str, port: int, routes: Routes,
                 limits: HTTPLimits = HTTPLimits()) -> None:
        self.limits = limits
        _make_room(limits.connections)
        self._socket = socket.create_server((host, port), backlog=BACKLOG)
        self._workers = ThreadPoolExecutor(limits.threads, thread_name_prefix="gpuwhy-http")
        protocol = type("Connection", (_Connection,), {"limits": limits})
        config = uvicorn.Config(
            Application(routes, limits, self._workers), http=protocol, interface="asgi3",
            loop="asyncio", lifespan="off", log_config=None, access_log=False,
            proxy_headers=False, server_header=False, backlog=BACKLOG,
            timeout_keep_alive=limits.idle_timeout_s,
            h11_max_incomplete_event_size=limits.max_header_bytes,
            timeout_graceful_shutdown=limits.shutdown_grace_s)
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()
        self._serving = False

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    def serve_forever(self) -> None:
        self._serving = True
        try:
            if not self._server.should_exit:
                self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()
            self._workers.shutdown(wait=False)
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop accepting, give requests in flight ``shutdown_grace_s`` to finish, close all."""
        self._server.should_exit = True
        if self._serving:
            self._stopped.wait(self.limits.shutdown_grace_s + 2)
        else:
            with contextlib.suppress(OSError):
                self._socket.close()
            self._workers.shutdown(wait=False)
