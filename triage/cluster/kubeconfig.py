"""Which cluster and credentials: kubeconfig files merged the way kubectl merges them,
else the pod's service account."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.config import ConfigException, load_kube_config
from kubernetes.config.incluster_config import InClusterConfigLoader

from triage.cluster.errors import one_line
from triage.errors import ClusterError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


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
                           f"{one_line(exc.strerror or str(exc))}.") from exc
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
                    service_account: Path = SERVICE_ACCOUNT_DIR,
                    in_cluster: bool = False) -> ApiClient:
    """An ApiClient configured the way kubectl resolves it, on a fresh Configuration.

    ``--kubeconfig``, else ``KUBECONFIG`` (several files, merged), else ``~/.kube/config``,
    else the pod's service account (``KUBERNETES_SERVICE_HOST`` / ``_PORT`` and the token and
    CA files in ``service_account``); ``in_cluster`` goes to the service account directly.
    Reads are not retried (a timeout is reported after one wait, not four); connection
    attempts are.
    """
    configuration = Configuration()
    found = None if in_cluster else find_kubeconfig(kubeconfig)
    if in_cluster and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise ClusterError("gpuwhy is not running inside a cluster (KUBERNETES_SERVICE_HOST "
                           "is not set), so in_cluster cannot be used.")
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
        detail = one_line(str(exc).replace("Invalid kube-config file. ", "")).replace(". ", "; ")
        raise ClusterError(f"Cannot use {where}: {detail or type(exc).__name__}.") from exc
    configuration.retries = urllib3.Retry(total=2, connect=2, read=0, redirect=0, status=0,
                                          other=0)
    # The watch cache holds a stream per watched kind (11 with DRA and Kueue) besides the
    # triage's own requests; the default (5 per CPU) would discard connections on 2 CPUs.
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
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
