"""Raw requests to the Kubernetes API: a reader that sends every request with a timeout and
turns every failure into one sentence (a ClusterError)."""

from __future__ import annotations

import json
import logging
import re
import ssl
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from scoring.objects import K8sObject
from triage.cluster.errors import AdmissionRejected, Expired, one_line
from triage.cluster.kubeconfig import server_url
from triage.cluster.limits import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT
from triage.cluster.resources import _VERSION, ACCESS_REVIEWS, VISIBILITY_GROUP, Resource
from triage.errors import ClusterError
from triage.pages import ItemShape, Listing, with_kind
from triage.vocabulary import Cause

log = logging.getLogger(__name__)

MAX_LIST_RESTARTS = 3
L = TypeVar("L", bound=Listing)  # what a paged list puts its items into (list_into)



@dataclass(frozen=True)
class _Call:
    verb: str  # the RBAC verb: get, list, watch, create
    resource: Resource
    namespace: str = ""
    name: str = ""

    def describe(self) -> str:
        what = f"{self.verb} {self.resource.display}"
        if self.name:
            what += f" {self.namespace}/{self.name}" if self.namespace else f" {self.name}"
        elif self.namespace:
            what += f" in namespace {self.namespace}"
        return what


_RBAC_DENIAL = re.compile(r"cannot \w+ resource")
_USER = re.compile(r'User "([^"]+)"')
_RUNTIME_CLASS_NOT_FOUND = re.compile(r'RuntimeClass "[^"]*" not found')


class Forbidden(ClusterError):
    """403: RBAC does not let gpuwhy's identity make this call (the message says which)."""

    def __init__(self, message: str, verb: str, resource: str) -> None:
        super().__init__(message)
        self.verb = verb
        self.resource = resource


class NotServed(ClusterError):
    """A list answered 404: the API server does not serve that resource (or its group)."""


class UnknownVersion(ClusterError):
    """The API group is served, but in no version gpuwhy reads."""


# a list page's continue token, where kube-apiserver puts it: in the metadata before the items
_HEAD_TOKEN = re.compile(rb'"metadata":\s*\{[^{}]*?"continue":\s*"([^"]+)"')


def head_token(data: bytes) -> str:
    """The continue token read from a page's head without decoding it ("" if not there)."""
    found = _HEAD_TOKEN.search(data, 0, 4096)
    return found.group(1).decode() if found else ""


class ClusterReader:
    """Raw JSON requests with a timeout; errors become one-sentence ClusterErrors."""

    def __init__(self, api_client: ApiClient, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.server = server_url(api_client)
        self._versions: dict[str, str | None] = {}  # API group -> the version read (discovery)
        self._unserved: set[str] = set()  # group/versions a GET found not served

    def get(self, resource: Resource, namespace: str, name: str,
            subresource: str = "") -> K8sObject | None:
        """One object (or its subresource), or None when it does not exist."""
        call = _Call("get", resource, namespace, name)
        path = resource.path(namespace, name) + (f"/{subresource}" if subresource else "")
        response = self._request(call, "GET", path, [])
        if response is None:
            return None
        document: K8sObject = self._json(call, response)
        return document

    def list_all(self, resource: Resource, namespace: str = "", *, field_selector: str = "",
             label_selector: str = "", page_size: int = DEFAULT_PAGE_SIZE,
             keep: ItemShape | Callable[[K8sObject], K8sObject | None] | None = None,
             ahead: bool = False) -> tuple[list[K8sObject], str]:
        """All matching objects (paged) and the list's resourceVersion (``list_into`` a list)."""
        return self.list_into(list, resource, namespace, field_selector=field_selector,
                              label_selector=label_selector, page_size=page_size, keep=keep,
                              ahead=ahead)

    def list_into(self, into: Callable[[], L], resource: Resource, namespace: str = "", *,
                  field_selector: str = "", label_selector: str = "",
                  page_size: int = DEFAULT_PAGE_SIZE,
                  keep: ItemShape | Callable[[K8sObject], K8sObject | None] | None = None,
                  ahead: bool = False) -> tuple[L, str]:
        """All matching objects (paged), put into a new ``into()`` page by page as each page
        is read (a store's listing indexes them then), and the list's resourceVersion.

        ``keep`` sees each item as its page arrives and returns what to keep of it (None: drop
        it), so a list of 150,000 pods never holds more than one page in full; an ItemShape
        decodes each page straight into what it keeps. A 410 on a continue token (the list
        took longer than etcd keeps history) restarts the list from the first page, as
        kubectl does. ``ahead``: the next page is asked for, from another thread, as soon as
        a page's continue token is read from its head, while this one is decoded (the API
        server renders it meanwhile); a token the decoded page does not confirm is asked for
        again. A list started again from its first page starts a new ``into()``.
        """
        call = _Call("list", resource, namespace)
        query = [(key, value) for key, value in (("fieldSelector", field_selector),
                                                 ("labelSelector", label_selector)) if value]
        if page_size:
            query.append(("limit", str(page_size)))

        def ask(token: str) -> Any:
            """The page's response, its body not read yet."""
            page_query = [*query, ("continue", token)] if token else query
            response = self._request(call, "GET", resource.path(namespace), page_query)
            if response is None:
                raise self._not_found(call, "")
            return response

        def fetch(token: str) -> bytes:
            return self._body(call, ask(token))

        with ThreadPoolExecutor(1, thread_name_prefix=f"list-{resource.plural}") if ahead \
                else nullcontext() as fetcher:
            for _ in range(MAX_LIST_RESTARTS):
                items = into()
                token = ""
                try:
                    data = fetch(token)
                    while True:
                        asked = head_token(data) if fetcher is not None else ""
                        following = fetcher.submit(ask, asked) \
                            if fetcher is not None and asked else None
                        metadata = self._page(call, resource, data, keep, items)
                        token = metadata.get("continue") or ""
                        if not token:
                            return items, str(metadata.get("resourceVersion") or "")
                        # the body is read here: read by the other thread, each chunk of it
                        # would wait for this one's decoding to let go of the interpreter
                        data = self._body(call, following.result()) if following is not None \
                            and token == asked else fetch(token)
                except Expired:
                    log.info("%s: continue token expired, listing again", call.describe())
        raise ClusterError(f"The Kubernetes API server at {self.server} kept expiring the "
                           f"paged list ({call.describe()}); the cluster changes faster than "
                           "gpuwhy can page through it, try a larger page size.")

    def _page(self, call: _Call, resource: Resource, data: bytes,
              keep: ItemShape | Callable[[K8sObject], K8sObject | None] | None,
              items: Listing) -> Mapping[str, Any]:
        """Add what ``keep`` keeps of a list page's items to ``items``; the page's metadata."""
        if isinstance(keep, ItemShape) and (cut := keep.kept_page(resource, data)) is not None:
            items.extend(cut[1])
            return cut[0]
        document = self._parse(call, data)
        metadata = document.get("metadata") or {}
        page = with_kind(resource, document.pop("items", None) or [])
        del document  # the page's full objects go as soon as they are kept
        if keep is None:
            items.extend(page)
        else:
            items.extend(kept for item in page if (kept := keep(item)) is not None)
        return metadata

    def watch(self, resource: Resource, resource_version: str, *, field_selector: str = "",
              timeout_seconds: int = 300, on_open: Callable[[Any], None] | None = None,
              ) -> Generator[K8sObject, None, None]:
        """Watch events (dicts with type and object) from a resourceVersion.

        Raises Expired when the server answers 410 at once; a 410 inside the stream arrives
        as an ERROR event. ``on_open`` receives the streaming response (to close it).
        """
        call = _Call("watch", resource)
        query = [("watch", "1"), ("resourceVersion", resource_version),
                 ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        # The server ends the stream after timeoutSeconds; allow a margin before giving up.
        response = self._request(call, "GET", resource.path(), query,
                                 read_timeout=timeout_seconds + max(self.timeout, 30.0))
        if response is None:
            raise self._not_found(call, "")
        if on_open is not None:
            on_open(response)
        buffer = b""
        try:
            for chunk in response.stream(amt=None, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._transport_error(call, exc) from exc
        except json.JSONDecodeError as exc:
            raise self._invalid_json(call) from exc
        finally:
            response.release_conn()

    def served_version(self, group: str, known: Sequence[str]) -> str | None:
        """The version of an API group to read (GET /apis/GROUP, asked once per reader): the
        server's preferred one when gpuwhy reads it, as kubectl does, else the first one it
        reads that is served; None when the group is not served at all."""
        if group in self._versions:
            return self._versions[group]
        document = self._api_group(group)
        found: str | None = None
        if document is not None:
            served = [str(v.get("version")) for v in document.get("versions") or []
                      if isinstance(v, Mapping)]
            preferred = _preferred(document)
            found = preferred if preferred in known else next(
                (version for version in known if version in served), None)
            if found is None:
                raise UnknownVersion(
                    f"The Kubernetes API server at {self.server} serves {group} only as "
                    f"{', '.join(served) or 'no version'}; gpuwhy reads {', '.join(known)}, so "
                    "it leaves those objects out.")
        self._versions[group] = found
        return found

    def pending_workloads(self, version: str, cluster_queue: str) -> list[K8sObject] | None:
        """Kueue's visibility API: the ClusterQueue's pending workloads, in Kueue's order; None
        where it is not served (remembered, as a refusal is: a reader asks once)."""
        resource = Resource("clusterqueues", "ClusterQueue", f"{VISIBILITY_GROUP}/{version}")
        if resource.api_version in self._unserved:
            return None
        try:
            found = self.get(resource, "", cluster_queue, "pendingworkloads")
        except ClusterError:  # refused or failing: not asked again by this reader either
            self._unserved.add(resource.api_version)
            raise
        if found is None:
            self._unserved.add(resource.api_version)
            return None
        return [item for item in found.get("items") or [] if isinstance(item, dict)]

    def create_dry_run(self, resource: Resource, namespace: str, body: K8sObject) -> K8sObject:
        """Server-side dry-run create: admission runs in full, nothing is stored."""
        call = _Call("create", resource, namespace)
        response = self._request(call, "POST", resource.path(namespace), [("dryRun", "All")],
                                 body=body)
        if response is None:
            raise self._not_found(call, "")
        document: K8sObject = self._json(call, response)
        return document

    def preferred_version(self, group: str) -> str | None:
        """The version of an API group the server prefers (GET /apis/<group>); None when it
        does not serve the group."""
        document = self._api_group(group)
        return None if document is None else _preferred(document)

    def _api_group(self, group: str) -> K8sObject | None:
        """GET /apis/<group>: its APIGroup document, None when the group is not served."""
        call = _Call("get", Resource(group, "APIGroup", "v1"))
        response = self._request(call, "GET", f"/apis/{quote(group, safe='.')}", [])
        return None if response is None else self._json(call, response)

    def server_version(self) -> str:
        """The API server's version (GET /version), e.g. v1.36.2."""
        call = _Call("get", _VERSION)
        response = self._request(call, "GET", "/version", [])
        if response is None:
            raise self._not_found(call, "")
        return str(self._json(call, response).get("gitVersion") or "(version not reported)")

    def access_allowed(self, verb: str, resource: Resource, namespace: str = "") -> bool:
        """May gpuwhy's identity ``verb`` ``resource`` (everywhere unless ``namespace``)?
        A SelfSubjectAccessReview: the API server answers, nothing is stored."""
        call = _Call("create", ACCESS_REVIEWS)
        body = {"apiVersion": ACCESS_REVIEWS.api_version, "kind": ACCESS_REVIEWS.kind,
                "spec": {"resourceAttributes": {"verb": verb, "group": resource.group,
                                                "resource": resource.plural,
                                                "namespace": namespace}}}
        try:
            response = self._request(call, "POST", ACCESS_REVIEWS.path(), [], body=body)
        except AdmissionRejected as exc:  # a webhook or a malformed review, not an RBAC "no"
            raise ClusterError(f"The Kubernetes API server at {self.server} refused to review "
                               f"access ({verb} {resource.display}): {exc.message}") from exc
        if response is None:
            raise self._not_found(call, "")
        status = self._json(call, response).get("status") or {}
        return status.get("allowed") is True

    # -- plumbing ---------------------------------------------------------------------

    def _request(self, call: _Call, method: str, path: str, query: list[tuple[str, str]],
                 body: K8sObject | None = None, read_timeout: float | None = None) -> Any:
        """The urllib3 response of a 2xx answer; None for a 404; raises otherwise."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        params = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=query, header_params=headers,
            body=body, auth_settings=["BearerToken"])
        timeout: float | tuple[float, float] = (
            self.timeout if read_timeout is None else (self.timeout, read_timeout))
        try:
            response = self.api_client.call_api(*params, _request_timeout=timeout)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._transport_error(call, exc) from exc
        if 200 <= response.status < 300:
            return response.response
        data = self._read(call, response)
        if response.status == 404 and call.verb == "get":
            return None
        raise self._status_error(call, response.status, response.reason or "", data)

    def _read(self, call: _Call, response: Any) -> bytes:
        try:
            data: bytes = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._transport_error(call, exc) from exc
        return data

    def _json(self, call: _Call, response: Any) -> K8sObject:
        return self._parse(call, self._body(call, response))

    def _body(self, call: _Call, response: Any) -> bytes:
        try:
            data: bytes = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._transport_error(call, exc) from exc
        return data

    def _parse(self, call: _Call, data: bytes) -> K8sObject:
        try:
            document = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._invalid_json(call) from exc
        if not isinstance(document, dict):
            raise self._invalid_json(call)
        return document

    def _invalid_json(self, call: _Call) -> ClusterError:
        return ClusterError(f"The Kubernetes API server at {self.server} sent a truncated or "
                            f"invalid JSON answer to {call.describe()}.")

    def _transport_error(self, call: _Call, exc: BaseException) -> ClusterError:
        reason: BaseException = exc
        if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            reason = exc.reason
        # NewConnectionError is a ConnectTimeoutError subclass: test it first
        if isinstance(reason, urllib3.exceptions.NameResolutionError):
            return ClusterError(f"Cannot reach the Kubernetes API server at {self.server}: "
                                "its host name does not resolve.")
        if isinstance(reason, urllib3.exceptions.NewConnectionError | ConnectionRefusedError):
            cause = reason.__cause__ or reason.__context__ or reason
            detail = getattr(cause, "strerror", None) or "connection failed"
            return ClusterError(f"Cannot reach the Kubernetes API server at {self.server}: "
                                f"{str(detail).lower()}.")
        if isinstance(reason, urllib3.exceptions.SSLError | ssl.SSLError):
            inner = next((a for a in reason.args if isinstance(a, ssl.SSLError)), reason)
            detail = one_line(str(getattr(inner, "verify_message", None)
                                   or getattr(inner, "reason", None) or inner))
            return ClusterError(f"Cannot reach the Kubernetes API server at {self.server}: the "
                                f"TLS handshake failed ({detail}); check the cluster's "
                                "certificate-authority in the kubeconfig.")
        if isinstance(reason, urllib3.exceptions.TimeoutError | TimeoutError):
            return ClusterError(f"The Kubernetes API server at {self.server} did not answer "
                                f"within {self.timeout:g} s ({call.describe()}).")
        if isinstance(reason, urllib3.exceptions.ProtocolError | ConnectionError):
            return ClusterError(f"The connection to the Kubernetes API server at {self.server} "
                                f"broke during {call.describe()} (reset or closed early).")
        detail = one_line(getattr(reason, "reason", None) or str(reason)) or type(reason).__name__
        return ClusterError(f"Cannot reach the Kubernetes API server at {self.server}: {detail}.")

    def _status_error(self, call: _Call, code: int, reason: str, data: bytes) -> Exception:
        status = _status(data)
        message = one_line(str(status.get("message") or data[:300].decode("utf-8", "replace")))
        if code == 410 and call.verb in ("list", "watch"):
            return Expired(message)
        if code == 401:
            return ClusterError(f"The Kubernetes API server at {self.server} did not accept "
                                "gpuwhy's credentials (401 Unauthorized); check the kubeconfig "
                                "or service account token.")
        if call.verb == "create" and code in (400, 403, 422) and not _RBAC_DENIAL.search(message):
            return AdmissionRejected(message, _admission_cause(message))
        if code == 403:
            return self._forbidden(call, status, message)
        if code == 404 and call.verb in ("list", "watch"):
            return NotServed(str(self._not_found(call, message)))
        if code == 404:
            return self._not_found(call, message)
        return ClusterError(f"The Kubernetes API server at {self.server} failed to "
                            f"{call.describe()}: {code} {reason}"
                            + (f": {message}." if message else "."))

    def _forbidden(self, call: _Call, status: Mapping[str, Any], message: str) -> ClusterError:
        details = status.get("details") or {}
        plural = details.get("kind") or call.resource.plural
        group = details.get("group", call.resource.group)
        resource = f"{plural}.{group}" if group else plural
        user = _USER.search(message)
        identity = f'User "{user.group(1)}"' if user else "gpuwhy's identity"
        scope = (f'in namespace "{call.namespace}"' if call.namespace
                 else "at the cluster scope")
        return Forbidden(f"Forbidden: {identity} cannot {call.verb} {resource} {scope} "
                         f'(RBAC needs verb "{call.verb}" on resource "{resource}").',
                         call.verb, resource)

    def _not_found(self, call: _Call, message: str) -> ClusterError:
        return ClusterError(f"Not found: the Kubernetes API server at {self.server} has "
                            f"nothing for {call.describe()}"
                            + (f" ({message})." if message else "."))


def _preferred(group: Mapping[str, Any]) -> str | None:
    """An APIGroup document's preferred version ("v1beta2"), None when it names none."""
    preferred = group.get("preferredVersion") or {}
    version = preferred.get("version") if isinstance(preferred, Mapping) else None
    return str(version) if version else None


def _status(data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return document if isinstance(document, dict) else {}


def _admission_cause(message: str) -> Cause | None:
    lowered = message.lower()
    if "exceeded quota" in lowered or "failed quota" in lowered:
        return Cause.QUOTA_EXCEEDED
    if _RUNTIME_CLASS_NOT_FOUND.search(message):
        return Cause.RUNTIMECLASS_MISSING
    return None



