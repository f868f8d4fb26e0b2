"""One reflector of the watch cache: a list, then a watch from its resourceVersion, of one
resource into its store, again after any failure with a growing delay (kube's reflector)."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import closing, suppress
from typing import TYPE_CHECKING, Any

from scoring.objects import K8sObject
from triage.cache import NodeStore, ObjectStore, PodStore
from triage.cluster.errors import Expired, one_line
from triage.cluster.reader import NotServed
from triage.cluster.resources import (
    SCHEDULING_GROUP,
    Resource,
    gang_resources,
)
from triage.dumpfile import bulk_parse
from triage.errors import ClusterError

if TYPE_CHECKING:
    from triage.cluster.watch import WatchCache

log = logging.getLogger("triage.cluster.watch")  # one logger for the cache and its reflectors
MAX_RETRY_DELAY = 60.0  # seconds between tries of a list or watch that keeps failing


class Reflector:
    """List, then watch from the list's resourceVersion; list again on 410 Gone.

    A dropped stream is watched again from the last resourceVersion seen (bookmarks keep it
    fresh); if that is too old the server says 410 and the store is listed again.
    """

    def __init__(self, cache: WatchCache, resource: Resource, field_selector: str,
                 store: NodeStore | PodStore | ObjectStore, optional: bool = False,
                 discovered: int | None = None) -> None:
        self.cache = cache
        self.resource = resource
        # Which of gang_resources(version) this is, the version asked of discovery before
        # each list (scheduling.k8s.io: alpha, the served version changes with the release)
        self.discovered = discovered
        self.field_selector = field_selector
        self.store = store
        # A cluster may not serve it (no DRA API group): then it is empty, asked again later.
        self.optional = optional
        self.listed = threading.Event()
        self.resource_version = ""
        self.lists = 0
        self.list_error: str | None = None  # why the list that is due keeps failing
        self.heard: float | None = None  # time.monotonic() of the API server's last answer
        self.last_error: str | None = None  # the last failure of this resource's list/watch
        self.failing: ClusterError | None = None  # set from a failure to the next success
        self.failures = 0  # in a row: the retry backs off
        self._response: Any = None
        self.thread = threading.Thread(target=self.run, name=f"watch-{resource.plural}",
                                       daemon=True)

    def run(self) -> None:
        stop = self.cache.stopped
        while not stop.is_set():
            try:
                if not self.resource_version:
                    self._discover()
                    with bulk_parse():  # a list makes objects that live on: GC would re-walk them
                        # the pods are indexed as each page comes, while the next renders
                        items, self.resource_version = self.cache.reader.list_into(
                            self.store.listing, self.resource, field_selector=self.field_selector,
                            page_size=self.cache.page_size, keep=self.store.slim, ahead=True)
                        self.store.replace(items)
                        del items
                    self.heard = time.monotonic()
                    self.lists += 1
                    self.list_error = None
                    self._recovered()
                    self.listed.set()
                self._watch()
            except Expired:
                self.resource_version = ""
            except NotServed:
                if not self.optional:
                    raise
                self.store.replace([])
                self.heard = time.monotonic()
                self.resource_version = ""
                self.listed.set()
                stop.wait(self.cache.watch_seconds)
            except ClusterError as exc:
                if stop.is_set():
                    return
                self.cache.last_error = self.last_error = str(exc)
                if not self.resource_version:
                    self.list_error = str(exc)
                self.failing = exc
                self.failures += 1
                delay = min(self.cache.retry_delay * 2 ** (self.failures - 1), MAX_RETRY_DELAY)
                self.cache.warn(str(exc), delay)
                stop.wait(delay)
            except Exception:  # a dead thread would freeze the cache for good
                if stop.is_set():
                    return
                log.exception("watch cache: watching %s failed; listing again",
                              self.resource.plural)
                self.resource_version = ""
                stop.wait(self.cache.retry_delay)

    def _discover(self) -> None:
        if self.discovered is None:
            return
        version = self.cache.reader.preferred_version(SCHEDULING_GROUP)
        if version is None:
            raise NotServed(f"{SCHEDULING_GROUP} is not served")
        self.resource = gang_resources(version)[self.discovered]

    def _watch(self) -> None:
        events = self.cache.reader.watch(
            self.resource, self.resource_version, field_selector=self.field_selector,
            timeout_seconds=self.cache.watch_seconds, on_open=self._opened)
        try:
            with closing(events):  # an ERROR event ends the stream here: free its connection
                for event in events:
                    self.heard = time.monotonic()  # bookmarks too: the server is there
                    self._apply(event)
            self.heard = time.monotonic()  # the server ended the stream at timeoutSeconds
        finally:
            self._response = None

    def _apply(self, event: K8sObject) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired(obj.get("message", ""))
            raise ClusterError(f"The Kubernetes API server at {self.cache.reader.server} "
                               f"ended the watch of {self.resource.plural}: "
                               f"{one_line(str(obj.get('message', '')))}.")
        if kind == "ADDED" or kind == "MODIFIED":
            self.store.upsert(obj)
        elif kind == "DELETED":
            self.store.remove(obj)
        self.resource_version = obj.get("metadata", {}).get("resourceVersion") or \
            self.resource_version

    def _recovered(self) -> None:
        self.failing, self.failures = None, 0

    def _opened(self, response: Any) -> None:
        self.heard = time.monotonic()
        self._recovered()
        self._response = response
        if self.cache.stopped.is_set():
            self.close()

    def close(self) -> None:
        """Unblock a stream that is waiting for the server (``stop()``)."""
        response = self._response
        if response is None:
            return
        with suppress(ValueError, RuntimeError, OSError):  # the stream ended on its own
            response.shutdown()
