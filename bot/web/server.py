"""The HTTP server under `gpuwhy serve`: waitress with gpuwhy's limits, and a route table.

Waitress reads every request in its event loop and hands only complete requests to a fixed pool
of worker threads, so a slow or idle client costs a socket, never a thread. It refuses a
malformed Content-Length (400) and one over the body limit (413) before reading the body. On
top of its idle timeout (silence) gpuwhy adds a deadline for the whole request, so a client that
trickles its headers a byte at a time is cut off too.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer

log = logging.getLogger(__name__)

TEXT = "text/plain; charset=utf-8"
# (method, path) → the WSGI application answering it.
Routes = Mapping[tuple[str, str], WSGIApplication]


@dataclass(frozen=True)
class HTTPLimits:
    """What one client may cost the server."""

    threads: int = 8  # requests handled at once; the rest wait, read, in the event loop
    connections: int = 200  # open sockets; past it waitress stops accepting until one closes
    max_body_bytes: int = 1 << 20  # Slack's payloads are far smaller
    max_header_bytes: int = 16 << 10
    request_timeout_s: int = 10  # from a request's first byte to its last
    idle_timeout_s: int = 30  # a kept-alive connection with no request in flight
    shutdown_grace_s: int = 5  # for requests being answered when serve stops


@dataclass(frozen=True)
class Request:
    """A request with its body read (within the server's limits)."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    client: str

    @classmethod
    def from_environ(cls, environ: WSGIEnvironment) -> Request:
        headers = {key[5:].lower().replace("_", "-"): value
                   for key, value in environ.items() if key.startswith("HTTP_")}
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            if environ.get(key):
                headers[key.lower().replace("_", "-")] = environ[key]
        # The server has checked the length (digits only, within max_body_bytes).
        length = int(environ.get("CONTENT_LENGTH") or 0)
        return cls(method=environ["REQUEST_METHOD"], path=environ.get("PATH_INFO", ""),
                   query=environ.get("QUERY_STRING", ""), headers=headers,
                   body=environ["wsgi.input"].read(length) if length else b"",
                   client=environ.get("REMOTE_ADDR", "?"))


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes | str = b""
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = field(default=())

    def send(self, start_response: StartResponse) -> list[bytes]:
        data = self.body.encode("utf-8") if isinstance(self.body, str) else self.body
        start_response(f"{self.status} {_REASONS.get(self.status, 'Status')}",
                       [("Content-Type", self.content_type), ("Content-Length", str(len(data))),
                        *self.headers])
        return [data]


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            405: "Method Not Allowed", 413: "Content Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


def plain(handler: Callable[[Request], Response]) -> WSGIApplication:
    """A WSGI application from a function of a :class:`Request`."""

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        return handler(Request.from_environ(environ)).send(start_response)

    return application


class Router:
    """The WSGI application the server runs: one route table, 404 and 405 for the rest."""

    def __init__(self, routes: Routes) -> None:
        self.routes = dict(routes)

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        application = self.routes.get((method, path))
        if application is not None:
            return application(environ, start_response)
        allowed = sorted(m for m, p in self.routes if p == path)
        if allowed:
            return Response(405, "method not allowed\n",
                            headers=(("Allow", ", ".join(allowed)),)).send(start_response)
        return Response(404, "not found\n").send(start_response)


class _Channel(HTTPChannel):
    """A connection that remembers when the request it is reading began."""

    request_started = 0.0

    def received(self, data: bytes) -> bool:
        if self.request is None:
            self.request_started = time.monotonic()
        return bool(super().received(data))


class _Server(TcpWSGIServer):
    channel_class = _Channel
    request_timeout_s = HTTPLimits.request_timeout_s

    def maintenance(self, now: int) -> None:
        super().maintenance(now)  # closes connections idle for longer than channel_timeout
        cutoff = time.monotonic() - self.request_timeout_s
        channels: Mapping[int, _Channel] = self.active_channels  # type: ignore[assignment]
        for channel in list(channels.values()):
            if channel.request is not None and channel.request_started < cutoff:
                log.info("closed the connection from %s: request incomplete after %g s",
                         channel.addr[0] if channel.addr else "?", self.request_timeout_s)
                channel.will_close = True


class HTTPServer:
    """Serves ``routes`` on ``host``:``port`` until :meth:`shutdown`."""

    def __init__(self, host: str, port: int, routes: Routes,
                 limits: HTTPLimits = HTTPLimits()) -> None:
        self.limits = limits
        self._map: dict[int, Any] = {}
        self._server = _Server(
            Router(routes), map=self._map, host=host, port=port, ident="gpuwhy",
            threads=limits.threads, connection_limit=limits.connections,
            max_request_body_size=limits.max_body_bytes,
            max_request_header_size=limits.max_header_bytes,
            channel_timeout=limits.idle_timeout_s,
            cleanup_interval=1, asyncore_loop_timeout=1, asyncore_use_poll=True,
            expose_tracebacks=False, clear_untrusted_proxy_headers=False)
        self._server.request_timeout_s = limits.request_timeout_s
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._serving = False

    @property
    def port(self) -> int:
        return int(self._server.getsockname()[1])

    def serve_forever(self) -> None:
        self._serving = True
        try:
            while not self._stopping.is_set():
                wasyncore.loop(timeout=self._server.adj.asyncore_loop_timeout, map=self._map,
                               use_poll=True, count=1)
        finally:
            wasyncore.close_all(self._map)
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop accepting, give requests in flight ``shutdown_grace_s`` to finish, close all."""
        if self._stopping.is_set():
            return
        self._server.accepting = False
        self._server.task_dispatcher.shutdown(timeout=self.limits.shutdown_grace_s)
        self._stopping.set()
        if self._serving:
            # The loop may have seen the flag and closed its trigger already.
            with contextlib.suppress(OSError):
                self._server.pull_trigger()
            self._stopped.wait(self.limits.shutdown_grace_s + 1)
        else:
            wasyncore.close_all(self._map)
