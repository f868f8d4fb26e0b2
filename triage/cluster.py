"""Reading a live cluster: the only module of triage that talks to the Kubernetes API.

Every request is a raw call through the ``kubernetes`` client with a timeout; the JSON stays
plain dicts, exactly what ``kubectl get -o json`` prints, so a Snapshot read here equals one
read from a dump directory. Failures become a ClusterError whose text is one sentence.
Read only: the single write is the server-side dry-run create of ``gpuwhy check``.

What one triage reads (``read_snapshot``):
- the pod (GET); when absent, the Deployment / ReplicaSet / StatefulSet / DaemonSet / Job of
  that name (GET each), their ReplicaSets and pods (one list per workload, label-selected,
  kept when the ownerReferences say so), the namespace's FailedCreate events (one list;
  they also resolve a generated pod name like ``finetune-2dtfx`` to its Job);
- events about the pod / workload / workload pods (field-selected by name);
- nodes and the non-terminated pods of every namespace (paged with limit/continue);
- the namespace's ResourceQuotas and the cluster's RuntimeClasses.

Finished (Succeeded / Failed) pods are left out of the lists on purpose: they hold nothing,
and on a large cluster finished Job pods can outnumber the running ones. So a live answer
never says which finished pods on a full node "hold nothing" (a dump that has them does);
which nodes matter is only known once classify has run, and classify must get its Snapshot
whole, up front. Lists come back in the API server's order (namespace, name), as in a dump
``kubectl get -o json`` wrote.

``WatchCache`` keeps nodes and non-terminated pods in memory (list + watch), so a triage
from it costs only the per-ref reads above, whatever the cluster size.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import re
import ssl
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException, load_kube_config
from kubernetes.config.incluster_config import InClusterConfigLoader

from triage.errors import ClusterError
from triage.objects import K8sObject, is_terminated, object_key
from triage.pods import sum_requests
from triage.refs import PodRef
from triage.snapshot import WORKLOAD_KINDS, Snapshot
from triage.vocabulary import Cause

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 10.0  # seconds per request
DEFAULT_PAGE_SIZE = 500
NON_TERMINATED = "status.phase!=Succeeded,status.phase!=Failed"
# More names than this: one list of the namespace's events instead of one request per name.
MAX_EVENT_QUERIES = 8
MAX_LIST_RESTARTS = 3
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class Resource:
    plural: str
    kind: str
    api_version: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def display(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "") -> str:
        path = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if namespace:
            path += f"/namespaces/{quote(namespace, safe='')}"
        path += f"/{self.plural}"
        return path + f"/{quote(name, safe='')}" if name else path


NODES = Resource("nodes", "Node", "v1")
PODS = Resource("pods", "Pod", "v1")
EVENTS = Resource("events", "Event", "v1")
QUOTAS = Resource("resourcequotas", "ResourceQuota", "v1")
RUNTIME_CLASSES = Resource("runtimeclasses", "RuntimeClass", "node.k8s.io/v1")
WORKLOADS: dict[str, Resource] = {
    "Deployment": Resource("deployments", "Deployment", "apps/v1"),
    "ReplicaSet": Resource("replicasets", "ReplicaSet", "apps/v1"),
    "StatefulSet": Resource("statefulsets", "StatefulSet", "apps/v1"),
    "DaemonSet": Resource("daemonsets", "DaemonSet", "apps/v1"),
    "Job": Resource("jobs", "Job", "batch/v1"),
}


class AdmissionRejected(Exception):
    """The API server's admission refused a (dry-run) create; ``cause`` when gpuwhy knows it."""

    def __init__(self, message: str, cause: Cause | None) -> None:
        super().__init__(message)
        self.message = message
        self.cause = cause


class _Expired(Exception):
    """410 Gone: a continue token or watch resourceVersion is too old; list again."""


# -- configuration -----------------------------------------------------------------------

@dataclass(frozen=True)
class Kubeconfig:
    """The kubeconfig files in use, merged the way kubectl merges them.

    A name (context, cluster, user) is taken from the first file that defines it, and so is
    ``current-context``; missing and empty files are skipped.
    """

    source: str  # as the user named it: the --kubeconfig path or the KUBECONFIG list
    files: tuple[Path, ...]
    contexts: Mapping[str, Mapping[str, Any]]
    clusters: frozenset[str]
    current_context: str

    def context_named(self, context: str | None) -> tuple[str, Mapping[str, Any]]:
        """The context to use (``--context`` or the current one); ClusterError if unusable."""
        name = context or self.current_context
        names = ", ".join(self.contexts) or "none"
        if not name:
            raise ClusterError(f"The kubeconfig {self.source} sets no current-context; pass "
                               f"--context (it has: {names}).")
        if name not in self.contexts:
            raise ClusterError(f'The kubeconfig {self.source} has no context "{name}" '
                               f"(it has: {names}).")
        cluster = str(self.contexts[name].get("cluster") or "")
        if cluster not in self.clusters:
            raise ClusterError(f'The kubeconfig {self.source}: context "{name}" names cluster '
                               f'"{cluster}", which it does not define.')
        return name, self.contexts[name]


def find_kubeconfig(kubeconfig: str | None = None) -> Kubeconfig | None:
    """``--kubeconfig``, else the files ``KUBECONFIG`` lists, else ``~/.kube/config``; None when
    there is none (a pod then uses its service account). ClusterError for a file gpuwhy
    cannot use."""
    if kubeconfig:
        if not Path(kubeconfig).expanduser().is_file():
            raise ClusterError(f"The kubeconfig file {kubeconfig} does not exist.")
        source = kubeconfig
    else:
        source = os.environ.get("KUBECONFIG") or "~/.kube/config"
    files = [Path(p).expanduser() for p in source.split(os.pathsep) if p]
    documents = [(file, _read_kubeconfig(file)) for file in files if file.is_file()]
    documents = [(file, document) for file, document in documents if document]
    if not documents:
        if kubeconfig or any(file.is_file() for file in files):
            raise ClusterError(f"The kubeconfig {source} is empty.")
        return None
    contexts: dict[str, Mapping[str, Any]] = {}
    clusters: set[str] = set()
    current = ""
    for _, document in documents:
        for entry in document.get("contexts") or []:
            contexts.setdefault(str(entry["name"]), entry.get("context") or {})
        clusters.update(str(entry["name"]) for entry in document.get("clusters") or [])
        current = current or str(document.get("current-context") or "")
    return Kubeconfig(source, tuple(file for file, _ in documents), contexts,
                      frozenset(clusters), current)


def _read_kubeconfig(file: Path) -> dict[str, Any]:
    """One kubeconfig file as a mapping ({} when empty); ClusterError when it is not one."""
    try:
        document = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ClusterError(f"Cannot use {file}: it is not valid YAML.") from exc
    except UnicodeDecodeError as exc:
        raise ClusterError(f"Cannot use {file}: it is not UTF-8 text.") from exc
    except OSError as exc:
        raise ClusterError(f"Cannot read the kubeconfig {file}: "
                           f"{_one_line(exc.strerror or str(exc))}.") from exc
    if document is None:
        return {}
    named_lists_ok = isinstance(document, dict) and all(
        isinstance(document.get(key) or [], list)
        and all(isinstance(entry, dict) and entry.get("name")
                for entry in document.get(key) or [])
        for key in ("clusters", "contexts", "users"))
    if not named_lists_ok:
        raise ClusterError(f"Cannot use {file}: it is not a kubeconfig (a YAML mapping with "
                           "lists of named clusters, contexts and users).")
    result: dict[str, Any] = document
    return result


def load_api_client(kubeconfig: str | None = None, context: str | None = None, *,
                    service_account: Path = SERVICE_ACCOUNT_DIR) -> ApiClient:
    """An ApiClient configured the way kubectl resolves it, on a fresh Configuration.

    ``--kubeconfig``, else ``KUBECONFIG`` (several files, merged), else ``~/.kube/config``,
    else the pod's service account (``KUBERNETES_SERVICE_HOST`` / ``_PORT`` and the token and
    CA files in ``service_account``). Reads are not retried (a timeout is reported after one
    wait, not four); connection attempts are.
    """
    configuration = Configuration()
    found = find_kubeconfig(kubeconfig)
    if found is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        listed = os.environ.get("KUBECONFIG")
        raise ClusterError(
            f"No kubeconfig found (none of the files KUBECONFIG lists exists: {listed}) and "
            "gpuwhy is not running inside a cluster." if listed else
            "No kubeconfig found (--kubeconfig, KUBECONFIG, ~/.kube/config) and gpuwhy is not "
            "running inside a cluster.")
    where = found.source if found else f"the in-cluster service account ({service_account})"
    try:
        if found is not None:
            load_kube_config(  # type: ignore[no-untyped-call]
                config_file=os.pathsep.join(str(file) for file in found.files),
                context=found.context_named(context)[0], client_configuration=configuration,
                persist_config=False)
        else:
            InClusterConfigLoader(  # type: ignore[no-untyped-call]
                token_filename=str(service_account / "token"),
                cert_filename=str(service_account / "ca.crt"),
            ).load_and_set(configuration)
    except (ConfigException, OSError, ValueError, LookupError, TypeError, AttributeError) as exc:
        detail = _one_line(str(exc).replace("Invalid kube-config file. ", "")).replace(". ", "; ")
        raise ClusterError(f"Cannot use {where}: {detail or type(exc).__name__}.") from exc
    configuration.retries = urllib3.Retry(total=2, connect=2, read=0, redirect=0, status=0,
                                          other=0)
    return ApiClient(configuration)


def kubeconfig_namespace(kubeconfig: str | None = None, context: str | None = None, *,
                         service_account: Path = SERVICE_ACCOUNT_DIR) -> str:
    """The namespace of the kubeconfig context in use, else the service account's, else
    "default" (kubectl's rule for a manifest that names none)."""
    found = find_kubeconfig(kubeconfig)
    if found is not None:
        return str(found.context_named(context)[1].get("namespace") or "default")
    namespace_file = service_account / "namespace"
    if os.environ.get("KUBERNETES_SERVICE_HOST") and namespace_file.is_file():
        return namespace_file.read_text(encoding="utf-8").strip() or "default"
    return "default"


def server_url(api_client: ApiClient) -> str:
    host: str = api_client.configuration.host
    return host


# -- requests ------------------------------------------------------------------------------

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


class ClusterReader:
    """Raw JSON requests with a timeout; errors become one-sentence ClusterErrors."""

    def __init__(self, api_client: ApiClient, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.server = server_url(api_client)

    def get(self, resource: Resource, namespace: str, name: str) -> K8sObject | None:
        """One object, or None when it does not exist."""
        call = _Call("get", resource, namespace, name)
        response = self._request(call, "GET", resource.path(namespace, name), [])
        if response is None:
            return None
        document: K8sObject = self._json(call, response)
        return document

    def list_all(self, resource: Resource, namespace: str = "", *, field_selector: str = "",
             label_selector: str = "", page_size: int = DEFAULT_PAGE_SIZE,
             ) -> tuple[list[K8sObject], str]:
        """All matching objects (paged) and the list's resourceVersion.

        A 410 on a continue token (the list took longer than etcd keeps history) restarts
        the list from the first page, as kubectl does.
        """
        call = _Call("list", resource, namespace)
        query = [(key, value) for key, value in (("fieldSelector", field_selector),
                                                 ("labelSelector", label_selector)) if value]
        if page_size:
            query.append(("limit", str(page_size)))
        for _ in range(MAX_LIST_RESTARTS):
            items: list[K8sObject] = []
            token = ""
            try:
                while True:
                    page_query = [*query, ("continue", token)] if token else query
                    response = self._request(call, "GET", resource.path(namespace), page_query)
                    if response is None:
                        raise self._not_found(call, "")
                    document = self._json(call, response)
                    items.extend(_with_kind(resource, document.get("items") or []))
                    metadata = document.get("metadata") or {}
                    token = metadata.get("continue") or ""
                    if not token:
                        return items, str(metadata.get("resourceVersion") or "")
            except _Expired:
                log.info("%s: continue token expired, listing again", call.describe())
        raise ClusterError(f"The Kubernetes API server at {self.server} kept expiring the "
                           f"paged list ({call.describe()}); the cluster changes faster than "
                           "gpuwhy can page through it, try a larger page size.")

    def watch(self, resource: Resource, resource_version: str, *, field_selector: str = "",
              timeout_seconds: int = 300, on_open: Callable[[Any], None] | None = None,
              ) -> Generator[K8sObject, None, None]:
        """Watch events (dicts with type and object) from a resourceVersion.

        Raises _Expired when the server answers 410 at once; a 410 inside the stream arrives
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

    def create_dry_run(self, resource: Resource, namespace: str, body: K8sObject) -> K8sObject:
        """Server-side dry-run create: admission runs in full, nothing is stored."""
        call = _Call("create", resource, namespace)
        response = self._request(call, "POST", resource.path(namespace), [("dryRun", "All")],
                                 body=body)
        if response is None:
            raise self._not_found(call, "")
        document: K8sObject = self._json(call, response)
        return document

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
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._transport_error(call, exc) from exc
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
            detail = _one_line(str(getattr(inner, "verify_message", None)
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
        detail = _one_line(getattr(reason, "reason", None) or str(reason)) or type(reason).__name__
        return ClusterError(f"Cannot reach the Kubernetes API server at {self.server}: {detail}.")

    def _status_error(self, call: _Call, code: int, reason: str, data: bytes) -> Exception:
        status = _status(data)
        message = _one_line(str(status.get("message") or data[:300].decode("utf-8", "replace")))
        if code == 410 and call.verb in ("list", "watch"):
            return _Expired(message)
        if code == 401:
            return ClusterError(f"The Kubernetes API server at {self.server} did not accept "
                                "gpuwhy's credentials (401 Unauthorized); check the kubeconfig "
                                "or service account token.")
        if call.verb == "create" and code in (400, 403, 422) and not _RBAC_DENIAL.search(message):
            return AdmissionRejected(message, _admission_cause(message))
        if code == 403:
            return self._forbidden(call, status, message)
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
        return ClusterError(f"Forbidden: {identity} cannot {call.verb} {resource} {scope} "
                            f'(RBAC needs verb "{call.verb}" on resource "{resource}").')

    def _not_found(self, call: _Call, message: str) -> ClusterError:
        return ClusterError(f"Not found: the Kubernetes API server at {self.server} has "
                            f"nothing for {call.describe()}"
                            + (f" ({message})." if message else "."))


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


def _one_line(text: str) -> str:
    return " ".join(text.split()).rstrip(".")


def _with_kind(resource: Resource, items: Iterable[K8sObject]) -> list[K8sObject]:
    """List items come without kind/apiVersion; add them, as kubectl does in its output."""
    return [{"apiVersion": resource.api_version, "kind": resource.kind, **item} for item in items]


# -- reading what one ref needs ----------------------------------------------------------------

@dataclass
class RefObjects:
    """The objects a ref resolves to: its pod(s), workloads and the events about them."""

    pods: list[K8sObject] = field(default_factory=list)
    workloads: list[K8sObject] = field(default_factory=list)
    events: list[K8sObject] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # corroborating reads that failed


def _optional(problems: list[str] | None,
              read: Callable[[], tuple[list[K8sObject], str]]) -> list[K8sObject]:
    """Events, quotas and RuntimeClasses only corroborate or refine an answer: when one of
    them cannot be read, the triage goes on and the Verdict says what it lacked."""
    if problems is None:
        return read()[0]
    try:
        return read()[0]
    except ClusterError as exc:
        problems.append(str(exc))
        return []


def read_ref_objects(reader: ClusterReader, ref: PodRef,
                     page_size: int = DEFAULT_PAGE_SIZE) -> RefObjects:
    namespace = ref.namespace
    pod = reader.get(PODS, namespace, ref.name)
    found = RefObjects()
    if pod is not None:
        found.pods = [pod]
        found.events = _events_about(reader, namespace, [ref.name], page_size, found.problems)
        return found
    failed_creates = _optional(found.problems, lambda: reader.list_all(
        EVENTS, namespace, field_selector="reason=FailedCreate", page_size=page_size))
    workloads = [w for kind in WORKLOAD_KINDS
                 if (w := reader.get(WORKLOADS[kind], namespace, ref.name)) is not None]
    if not workloads:
        workloads = _workloads_named_by(reader, namespace, ref.name, failed_creates)
    for workload in workloads:
        children, pods = _children(reader, workload, page_size)
        found.workloads.extend([workload, *children])
        found.pods.extend(pods)
    found.workloads = _unique(found.workloads)
    found.pods = _unique(found.pods)
    names = [ref.name, *(w["metadata"]["name"] for w in workloads),
             *(p["metadata"]["name"] for p in found.pods)]
    found.events = _unique([*_events_about(reader, namespace, names, page_size, found.problems),
                            *failed_creates])
    return found


def _events_about(reader: ClusterReader, namespace: str, names: Sequence[str],
                  page_size: int, problems: list[str]) -> list[K8sObject]:
    wanted = list(dict.fromkeys(names))
    if len(wanted) > MAX_EVENT_QUERIES:
        events = _optional(problems, lambda: reader.list_all(EVENTS, namespace,
                                                             page_size=page_size))
        return [e for e in events if (e.get("involvedObject") or {}).get("name") in wanted]
    found: list[K8sObject] = []
    for name in wanted:
        selector = f"involvedObject.name={name},involvedObject.namespace={namespace}"
        found.extend(_optional(problems, partial(reader.list_all, EVENTS, namespace,
                                                 field_selector=selector, page_size=page_size)))
        if problems:
            break  # the same refusal for every name: say it once
    return found


def _children(reader: ClusterReader, workload: K8sObject,
              page_size: int) -> tuple[list[K8sObject], list[K8sObject]]:
    """(ReplicaSets of a Deployment, pods) owned by the workload, found by its selector."""
    namespace = workload["metadata"].get("namespace", "")
    selector = label_selector(workload.get("spec", {}).get("selector") or {})
    if not selector:
        return [], []
    owners = {workload["metadata"].get("uid")}
    replica_sets: list[K8sObject] = []
    if workload.get("kind") == "Deployment":
        listed, _ = reader.list_all(WORKLOADS["ReplicaSet"], namespace, label_selector=selector,
                                page_size=page_size)
        replica_sets = [rs for rs in listed if _owned_by(rs, owners)]
        owners = {rs["metadata"].get("uid") for rs in replica_sets}
    pods, _ = reader.list_all(PODS, namespace, label_selector=selector, page_size=page_size)
    return replica_sets, [p for p in pods if _owned_by(p, owners)]


def _workloads_named_by(reader: ClusterReader, namespace: str, name: str,
                        failed_creates: Iterable[K8sObject]) -> list[K8sObject]:
    """Workloads whose FailedCreate events name the ref as the pod (or pod prefix) refused."""
    found: list[K8sObject] = []
    for event in failed_creates:
        involved = event.get("involvedObject") or {}
        pod_names = re.findall(r'pods "([^"]+)"', str(event.get("message") or ""))
        names_ref = any(p == name or (p.endswith("-") and name.startswith(p)) for p in pod_names)
        if names_ref and involved.get("kind") in WORKLOADS:
            workload = reader.get(WORKLOADS[involved["kind"]], namespace, involved.get("name", ""))
            if workload is not None:
                found.append(workload)
                found.extend(_controllers(reader, workload))
    return _unique(found)


def _controllers(reader: ClusterReader, workload: K8sObject) -> list[K8sObject]:
    """The workload's controller chain (a ReplicaSet's Deployment)."""
    namespace = workload["metadata"].get("namespace", "")
    for owner in workload["metadata"].get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") in WORKLOADS:
            parent = reader.get(WORKLOADS[owner["kind"]], namespace, owner.get("name", ""))
            if parent is not None:
                return [parent, *_controllers(reader, parent)]
    return []


def _owned_by(obj: K8sObject, uids: set[Any]) -> bool:
    return any(o.get("uid") in uids for o in obj["metadata"].get("ownerReferences") or [])


def _unique(objects: Iterable[K8sObject]) -> list[K8sObject]:
    by_identity: dict[tuple[str, str, str], K8sObject] = {}
    for obj in objects:
        meta = obj.get("metadata", {})
        by_identity.setdefault((obj.get("kind", ""), meta.get("uid", ""),
                                "/".join(object_key(obj))), obj)
    return list(by_identity.values())


def label_selector(selector: Mapping[str, Any]) -> str:
    """A LabelSelector object as the ``labelSelector`` query string."""
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or [])
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(operator, key))
    return ",".join(terms)


def _merge_pods(listed: Iterable[K8sObject], fetched: Iterable[K8sObject]) -> list[K8sObject]:
    """The listed pods with the individually fetched ones replacing or joining them."""
    by_key = {object_key(p): p for p in listed}
    for pod in fetched:
        by_key[object_key(pod)] = pod
    return list(by_key.values())


def _namespace_policy(reader: ClusterReader, namespace: str, page_size: int,
                      problems: list[str] | None = None,
                      ) -> tuple[list[K8sObject], list[K8sObject]]:
    quotas = _optional(problems, lambda: reader.list_all(QUOTAS, namespace, page_size=page_size))
    runtime_classes = _optional(problems, lambda: reader.list_all(RUNTIME_CLASSES,
                                                                  page_size=page_size))
    return quotas, runtime_classes


def read_snapshot(api_client: ApiClient, ref: PodRef, page_size: int = DEFAULT_PAGE_SIZE,
                  timeout: float = DEFAULT_TIMEOUT, cluster: str = "") -> Snapshot:
    """Everything one triage of ``ref`` needs, read cold from the API (``gpuwhy triage``)."""
    reader = ClusterReader(api_client, timeout)
    found = read_ref_objects(reader, ref, page_size)
    nodes, _ = reader.list_all(NODES, page_size=page_size)
    pods, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size)
    quotas, runtime_classes = _namespace_policy(reader, ref.namespace, page_size, found.problems)
    return Snapshot(nodes=nodes, pods=_merge_pods(pods, found.pods), events=found.events,
                    resourcequotas=quotas, runtimeclasses=runtime_classes,
                    workloads=found.workloads, cluster=cluster or reader.server,
                    problems=tuple(found.problems))


def read_bundle(api_client: ApiClient, namespace: str = "", page_size: int = DEFAULT_PAGE_SIZE,
                timeout: float = DEFAULT_TIMEOUT) -> Snapshot:
    """A support bundle (``gpuwhy snapshot``): what any triage in ``namespace`` could read.

    Nodes and RuntimeClasses; the non-terminated pods of every namespace (what a live triage
    reads), plus, with a namespace, that namespace's finished pods (a Job's history); the
    namespace's events, quotas and workloads. Without a namespace: every namespace's events,
    quotas and workloads, and no finished pods, so the bundle triages like the live cluster.
    """
    reader = ClusterReader(api_client, timeout)
    nodes, _ = reader.list_all(NODES, page_size=page_size)
    pods, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size)
    if namespace:
        own, _ = reader.list_all(PODS, namespace, page_size=page_size)
        pods = _merge_pods(pods, own)
    events, _ = reader.list_all(EVENTS, namespace, page_size=page_size)
    quotas, runtime_classes = _namespace_policy(reader, namespace, page_size)
    workloads = [w for kind in WORKLOAD_KINDS
                 for w in reader.list_all(WORKLOADS[kind], namespace, page_size=page_size)[0]]
    return Snapshot(nodes=nodes, pods=pods, events=events, resourcequotas=quotas,
                    runtimeclasses=runtime_classes, workloads=workloads, cluster=reader.server)


# -- watch cache ---------------------------------------------------------------------------

# The fields triage and scoring read; everything else (images, managedFields, env, volumes,
# last-applied-configuration, ...) is dropped to keep 150,000 pods small in memory.
_Keep = Mapping[str, Any]
SLIM_METADATA: _Keep = {key: True for key in (
    "name", "namespace", "uid", "labels", "ownerReferences", "creationTimestamp",
    "deletionTimestamp", "resourceVersion")}
SLIM_NODE: _Keep = {
    "apiVersion": True, "kind": True,
    "metadata": {**SLIM_METADATA, "annotations": True},
    "spec": {"taints": True, "unschedulable": True},
    "status": {key: True for key in ("capacity", "allocatable", "conditions", "runtimeHandlers")},
}
_CONTAINER: _Keep = {"name": True, "resources": True, "restartPolicy": True}
SLIM_POD: _Keep = {
    "apiVersion": True, "kind": True,
    "metadata": {**SLIM_METADATA, "annotations": True},
    "spec": {"nodeName": True, "schedulerName": True, "priority": True, "overhead": True,
             "containers": _CONTAINER, "initContainers": _CONTAINER},
    "status": {"phase": True},
}
# Pod annotations worth keeping: HAMi's allocation records (device usage per card).
SLIM_POD_ANNOTATION_PREFIXES = ("hami.io/", "4pd.io/", "nvidia.com/")


def slim(obj: Any, keep: _Keep | bool) -> Any:
    if keep is True:
        return obj
    if isinstance(obj, list):
        return [slim(item, keep) for item in obj]
    if isinstance(obj, dict) and isinstance(keep, Mapping):
        return {key: slim(value, keep[key]) for key, value in obj.items() if key in keep}
    return obj


def slim_pod(pod: K8sObject) -> K8sObject:
    small: K8sObject = slim(pod, SLIM_POD)
    annotations = small.get("metadata", {}).get("annotations")
    if annotations:
        small["metadata"]["annotations"] = {
            k: v for k, v in annotations.items() if k.startswith(SLIM_POD_ANNOTATION_PREFIXES)}
    return small


def slim_node(node: K8sObject) -> K8sObject:
    small: K8sObject = slim(node, SLIM_NODE)
    return small


class _NodeStore:
    """Nodes by name, viewed in the API server's list order (by name) like a cold list."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, K8sObject] = {}
        self._in_order = True

    def replace(self, items: Iterable[K8sObject]) -> None:
        fresh = {node["metadata"]["name"]: slim_node(node) for node in items}
        with self._lock:
            self._nodes, self._in_order = fresh, False

    def upsert(self, node: K8sObject) -> None:
        small = slim_node(node)
        name = small["metadata"]["name"]
        with self._lock:
            # replacing a known node keeps its place; only a new one spoils the order
            self._in_order = self._in_order and name in self._nodes
            self._nodes[name] = small

    def remove(self, node: K8sObject) -> None:
        with self._lock:
            self._nodes.pop(node["metadata"]["name"], None)

    def view(self) -> list[K8sObject]:
        with self._lock:
            if not self._in_order:
                self._nodes, self._in_order = dict(sorted(self._nodes.items())), True
            return list(self._nodes.values())

    def __len__(self) -> int:
        return len(self._nodes)


Amounts = dict[str, Decimal]  # resource -> summed effective request


class _PodStore:
    """Non-terminated pods, indexed the way a triage asks for them, kept up to date per event.

    By node: immutable tuples in the API server's list order (namespace, name), plus each
    node's summed requests (a pod's share is added on ADDED and taken away on DELETED), so a
    triage takes a shallow copy of two node-keyed maps (O(nodes)) and never walks or copies
    the pods. By namespace: for the quota's holders, also in list order.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], tuple[K8sObject, Amounts]] = {}
        self._by_node: dict[str, tuple[K8sObject, ...]] = {}
        self._requested: dict[str, Amounts] = {}
        self._by_namespace: dict[str, dict[str, K8sObject]] = {}
        self._unordered: set[str] = set()  # namespaces that gained a pod since last sorted

    def replace(self, items: Iterable[K8sObject]) -> None:
        fresh = _PodStore()
        for pod in items:
            fresh._add(pod)
        with self._lock:
            self._pods, self._by_node = fresh._pods, fresh._by_node
            self._requested, self._by_namespace = fresh._requested, fresh._by_namespace
            self._unordered = fresh._unordered

    def upsert(self, pod: K8sObject) -> None:
        with self._lock:
            self._discard(object_key(pod))
            self._add(pod)

    def remove(self, pod: K8sObject) -> None:
        namespace, name = key = object_key(pod)
        with self._lock:
            self._discard(key)
            self._by_namespace.get(namespace, {}).pop(name, None)

    def _add(self, pod: K8sObject) -> None:
        namespace, name = key = object_key(pod)
        names = self._by_namespace.setdefault(namespace, {})
        if is_terminated(pod):  # it left the field selector: the server sends it as DELETED
            names.pop(name, None)
            return
        small = slim_pod(pod)
        share = sum_requests([small])
        self._pods[key] = (small, share)
        if name not in names:
            self._unordered.add(namespace)
        names[name] = small  # a known name keeps its place
        if node_name := small.get("spec", {}).get("nodeName"):
            on_node = self._by_node.get(node_name, ())
            at = bisect.bisect_left([object_key(p) for p in on_node], key)
            self._by_node[node_name] = (*on_node[:at], small, *on_node[at:])
            self._requested[node_name] = _add_amounts(self._requested.get(node_name, {}), share, 1)

    def _discard(self, key: tuple[str, str]) -> None:
        """Take the pod out of the node index and sums (the namespace index keeps its slot)."""
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        old, share = entry
        node_name = old.get("spec", {}).get("nodeName")
        if not node_name:
            return
        rest = tuple(p for p in self._by_node.get(node_name, ()) if p is not old)
        if rest:
            self._by_node[node_name] = rest
            self._requested[node_name] = _add_amounts(self._requested[node_name], share, -1)
        else:
            self._by_node.pop(node_name, None)
            self._requested.pop(node_name, None)

    def by_node_view(self) -> tuple[dict[str, tuple[K8sObject, ...]], dict[str, Amounts]]:
        with self._lock:
            return dict(self._by_node), dict(self._requested)

    def nodes_of(self, keys: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The nodes the cached copies of these pods are bound to."""
        with self._lock:
            entries = [self._pods.get(key) for key in keys]
        return frozenset(node for entry in entries if entry is not None
                         if (node := entry[0].get("spec", {}).get("nodeName")))

    def in_namespace(self, namespace: str) -> list[K8sObject]:
        with self._lock:
            names = self._by_namespace.get(namespace, {})
            if namespace in self._unordered:
                names = self._by_namespace[namespace] = dict(sorted(names.items()))
                self._unordered.discard(namespace)
            return list(names.values())

    def __len__(self) -> int:
        return len(self._pods)


def _add_amounts(total: Mapping[str, Decimal], share: Mapping[str, Decimal],
                 sign: int) -> Amounts:
    """A new per-node total (the old one may be in a triage's view: never mutate it)."""
    result = dict(total)
    for resource, amount in share.items():
        result[resource] = result.get(resource, Decimal(0)) + sign * amount
        if not result[resource] and resource != "pods":
            del result[resource]
    return result


@dataclass(frozen=True)
class IndexedSnapshot(Snapshot):
    """A Snapshot whose pod indexes come prebuilt from the watch cache.

    ``pods`` holds only what the ref resolved to, fetched fresh; ``pods_on``, ``requested_on``
    and ``pods_in`` answer from the cache's per-node lists and sums and the ref namespace's
    pods, with the base class's meaning and a cold read's order: ``pods_on`` is every pod
    bound to the node (a fresh copy replaces the cached one, wherever that was; a fetched pod
    the cache lacks joins, finished or not), ``requested_on`` sums its non-terminated pods.
    On the few nodes a fetched pod touches (``fetched_nodes``: where it is bound, where the
    cache still has it) both are worked out from the merged list; everywhere else the cache's
    own sums are the answer.
    """

    pods_by_node: Mapping[str, tuple[K8sObject, ...]] = field(default_factory=dict)
    requested_by_node: Mapping[str, Amounts] = field(default_factory=dict)
    namespace_pods: tuple[K8sObject, ...] = ()
    cached_nodes_of_fetched: frozenset[str] = frozenset()

    @cached_property
    def fetched_nodes(self) -> frozenset[str]:
        bound = {name for pod in self.pods if (name := pod.get("spec", {}).get("nodeName"))}
        return self.cached_nodes_of_fetched | bound

    def pods_on(self, node_name: str) -> list[K8sObject]:
        cached = self.pods_by_node.get(node_name, ())
        if node_name not in self.fetched_nodes:
            return list(cached)
        # the cached pods, with the fetched copies in their place; by namespace and name, as
        # the base class orders them
        fresh = self._pods_by_key
        return sorted([*(p for p in cached if object_key(p) not in fresh),
                       *super().pods_on(node_name)], key=object_key)

    def requested_on(self, node_name: str) -> dict[str, Decimal]:
        if node_name in self.fetched_nodes:
            return super().requested_on(node_name)
        return self.requested_by_node.get(node_name) or {"pods": Decimal(0)}

    def pods_in(self, namespace: str) -> list[K8sObject]:
        cached = [p for p in self.namespace_pods if object_key(p)[0] == namespace]
        return _merge_pods(cached, super().pods_in(namespace))


class _Reflector:
    """List, then watch from the list's resourceVersion; list again on 410 Gone.

    A dropped stream is watched again from the last resourceVersion seen (bookmarks keep it
    fresh); if that is too old the server says 410 and the store is listed again.
    """

    def __init__(self, cache: WatchCache, resource: Resource, field_selector: str,
                 store: _NodeStore | _PodStore) -> None:
        self.cache = cache
        self.resource = resource
        self.field_selector = field_selector
        self.store = store
        self.listed = threading.Event()
        self.resource_version = ""
        self.lists = 0
        self.list_error: str | None = None  # why the list that is due keeps failing
        self._response: Any = None
        self.thread = threading.Thread(target=self.run, name=f"watch-{resource.plural}",
                                       daemon=True)

    def run(self) -> None:
        stop = self.cache.stopped
        while not stop.is_set():
            try:
                if not self.resource_version:
                    items, self.resource_version = self.cache.reader.list_all(
                        self.resource, field_selector=self.field_selector,
                        page_size=self.cache.page_size)
                    self.store.replace(items)
                    self.lists += 1
                    self.list_error = None
                    self.listed.set()
                self._watch()
            except _Expired:
                self.resource_version = ""
            except ClusterError as exc:
                if stop.is_set():
                    return
                self.cache.last_error = str(exc)
                if not self.resource_version:
                    self.list_error = str(exc)
                log.warning("watch cache: %s", exc)
                stop.wait(self.cache.retry_delay)
            except Exception:  # a dead thread would freeze the cache for good
                if stop.is_set():
                    return
                log.exception("watch cache: watching %s failed; listing again",
                              self.resource.plural)
                self.resource_version = ""
                stop.wait(self.cache.retry_delay)

    def _watch(self) -> None:
        events = self.cache.reader.watch(
            self.resource, self.resource_version, field_selector=self.field_selector,
            timeout_seconds=self.cache.watch_seconds, on_open=self._opened)
        try:
            with closing(events):  # an ERROR event ends the stream here: free its connection
                for event in events:
                    self._apply(event)
        finally:
            self._response = None

    def _apply(self, event: K8sObject) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired(obj.get("message", ""))
            raise ClusterError(f"The Kubernetes API server at {self.cache.reader.server} "
                               f"ended the watch of {self.resource.plural}: "
                               f"{_one_line(str(obj.get('message', '')))}.")
        if kind == "ADDED" or kind == "MODIFIED":
            self.store.upsert(obj)
        elif kind == "DELETED":
            self.store.remove(obj)
        self.resource_version = obj.get("metadata", {}).get("resourceVersion") or \
            self.resource_version

    def _opened(self, response: Any) -> None:
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


class WatchCache:
    """Nodes and non-terminated pods, kept current by list + watch in two threads."""

    def __init__(self, api_client: ApiClient, timeout: float = DEFAULT_TIMEOUT,
                 page_size: int = DEFAULT_PAGE_SIZE, watch_seconds: int = 300,
                 retry_delay: float = 2.0) -> None:
        self.reader = ClusterReader(api_client, timeout)
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.retry_delay = retry_delay
        self.stopped = threading.Event()
        self.last_error: str | None = None
        self.nodes = _NodeStore()
        self.pods = _PodStore()
        self._reflectors = (
            _Reflector(self, NODES, "", self.nodes),
            _Reflector(self, PODS, NON_TERMINATED, self.pods),
        )

    def start(self) -> None:
        for reflector in self._reflectors:
            reflector.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.stopped.set()
        for reflector in self._reflectors:
            reflector.close()
        for reflector in self._reflectors:
            if reflector.thread.is_alive():
                reflector.thread.join(timeout)

    @property
    def ready(self) -> bool:
        """True once nodes and pods have each been listed in full."""
        return all(r.listed.is_set() for r in self._reflectors)

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(r.listed.wait(max(deadline - time.monotonic(), 0.0)) for r in self._reflectors)

    @property
    def lists(self) -> int:
        """How many full lists were made (1 per resource, more after 410 Gone)."""
        return sum(r.lists for r in self._reflectors)

    def snapshot_for(self, ref: PodRef, cluster: str = "") -> IndexedSnapshot:
        """The Snapshot for one triage: per-ref reads from the API, nodes and pods from memory."""
        if not self.ready:
            # a first list that keeps failing (forbidden, unreachable) is the answer, not "wait"
            failing = next((r.list_error for r in self._reflectors
                            if r.list_error and not r.listed.is_set()), None)
            raise ClusterError(failing or "gpuwhy is still loading the cluster's nodes and "
                               "pods; try again in a minute.")
        found = read_ref_objects(self.reader, ref, self.page_size)
        quotas, runtime_classes = _namespace_policy(self.reader, ref.namespace, self.page_size,
                                                    found.problems)
        by_node, requested = self.pods.by_node_view()
        return IndexedSnapshot(
            nodes=self.nodes.view(), pods=found.pods, events=found.events,
            resourcequotas=quotas, runtimeclasses=runtime_classes, workloads=found.workloads,
            cluster=cluster or self.reader.server, problems=tuple(found.problems),
            pods_by_node=by_node,
            requested_by_node=requested,
            namespace_pods=tuple(self.pods.in_namespace(ref.namespace)),
            cached_nodes_of_fetched=self.pods.nodes_of(object_key(p) for p in found.pods))


# -- pre-flight (gpuwhy check) -----------------------------------------------------------------

class ManifestError(ValueError):
    """A manifest gpuwhy cannot check; the message names the file."""


# kind -> where the pod template sits
POD_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True)
class ManifestPod:
    source: str  # "Job/finetune"
    namespace: str  # "" when the manifest names none
    pod: K8sObject  # a Pod body ready to create


def read_manifest(path: str | Path) -> list[ManifestPod]:
    """The pods a manifest would create: Pods as they are, workloads' pod templates."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{file}: no such file") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{file}: not UTF-8 text") from None
    except OSError as exc:
        raise ManifestError(f"{file}: cannot read: {exc.strerror or exc}") from exc
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ManifestError(f"{file}: not valid YAML{where}") from exc
    pods: list[ManifestPod] = []
    for document in _expand_lists(documents):
        if not isinstance(document, dict):
            raise ManifestError(f"{file}: a document is not a Kubernetes object")
        if (pod := _pod_of(document)) is not None:
            pods.append(pod)
    if not pods:
        raise ManifestError(f"{file}: no Pod and no pod template (Deployment, ReplicaSet, "
                            "StatefulSet, DaemonSet, Job, CronJob) in it")
    return pods


def _expand_lists(documents: Iterable[Any]) -> Iterator[Any]:
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            yield from document.get("items") or []
        else:
            yield document


def _pod_of(document: K8sObject) -> ManifestPod | None:
    kind = document.get("kind")
    metadata = document.get("metadata") or {}
    name = str(metadata.get("name") or metadata.get("generateName") or "")
    namespace = str(metadata.get("namespace") or "")
    if kind == "Pod":
        template: Any = document
    elif kind in POD_TEMPLATE_PATHS:
        template = document
        for step in POD_TEMPLATE_PATHS[kind]:
            template = template.get(step) if isinstance(template, dict) else None
    else:
        return None
    where = ".".join(POD_TEMPLATE_PATHS.get(str(kind), ("spec",)))
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise ManifestError(f"{kind}/{name}: no pod {'spec' if kind == 'Pod' else 'template'} "
                            f"at {where}")
    # Always a generated name: a dry-run create of an existing pod's name would be refused
    # (409), and the would-be pod must not replace the running one in the snapshot.
    pod_meta = {k: v for k, v in (template.get("metadata") or {}).items()
                if k not in ("name", "namespace", "resourceVersion", "uid")}
    pod_meta["generateName"] = f"{name.rstrip('-')}-" if name else "check-"
    return ManifestPod(f"{kind}/{name}", namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template["spec"]})


def dry_run_pod(api_client: ApiClient, pod: K8sObject, namespace: str,
                timeout: float = DEFAULT_TIMEOUT) -> K8sObject:
    """The pod as admission would store it (quota, RuntimeClass, webhooks, defaults).

    Raises AdmissionRejected when admission refuses it, ClusterError when the API can't be used.
    """
    reader = ClusterReader(api_client, timeout)
    body = {**pod, "metadata": {**pod.get("metadata", {}), "namespace": namespace}}
    created = reader.create_dry_run(PODS, namespace, body)
    return {"apiVersion": "v1", "kind": "Pod", **created}


def preflight_snapshot(api_client: ApiClient, pod: K8sObject,
                       page_size: int = DEFAULT_PAGE_SIZE,
                       timeout: float = DEFAULT_TIMEOUT) -> Snapshot:
    """A Snapshot built like ``read_snapshot``, with the would-be pod in it."""
    reader = ClusterReader(api_client, timeout)
    namespace = pod["metadata"].get("namespace", "")
    nodes, _ = reader.list_all(NODES, page_size=page_size)
    pods, _ = reader.list_all(PODS, field_selector=NON_TERMINATED, page_size=page_size)
    quotas, runtime_classes = _namespace_policy(reader, namespace, page_size)
    return Snapshot(nodes=nodes, pods=_merge_pods(pods, [pod]), resourcequotas=quotas,
                    runtimeclasses=runtime_classes, cluster=reader.server)
