"""Writing a support bundle (`gpuwhy snapshot DIR`): a bundle is made to be shared, so what
the cluster's objects carry as configuration is redacted before it reaches the disk, and the
files are readable by their owner only.

Redacted: every container's ``env[].value`` (the names stay, and ``valueFrom`` references
stay: they name a Secret or ConfigMap key, not its value), in pods and in workloads' pod
templates alike, and the annotations known to hold a whole object or a command line. Triage
reads none of them, so a bundle answers exactly as the live cluster does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from triage.snapshot import DUMP_FILES, OPTIONAL_DUMP_LISTS, Snapshot

REDACTED = "(redacted by gpuwhy snapshot)"
# Annotations that hold an object's whole applied configuration (env values, tokens in
# args) or the command line that changed it.
CONFIG_ANNOTATIONS = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration",
    "kopf.zalando.org/last-handled-configuration",
    "kubernetes.io/change-cause",
})
DIRECTORY_MODE, FILE_MODE = 0o700, 0o600
README = "README.txt"
README_TEXT = """\
A gpuwhy support bundle: the cluster's objects as `kubectl get -o json` prints them, read by
`gpuwhy snapshot`. Answer from it with `gpuwhy triage NAMESPACE/POD --snapshot {directory}`.

Redacted before writing: every container's env values (the variable names stay; valueFrom
references to Secrets and ConfigMaps stay, they hold no value) and the annotations
{annotations}. Secrets and ConfigMaps are never read.

Still in it: node names, labels and addresses, namespace, pod and image names, commands and
arguments, event messages. Look before you share it. The files are readable by their owner
only (mode 0600, the directory 0700).
"""


def redact(item: Any) -> Any:
    """A copy of ``item`` (any object from the API) without env values and config-holding
    annotations; everything else as it was."""
    if isinstance(item, list):
        return [redact(element) for element in item]
    if not isinstance(item, dict):
        return item
    copy: dict[str, Any] = {}
    for key, value in item.items():
        if key == "env" and isinstance(value, list):
            copy[key] = [_without_value(variable) for variable in value]
        elif key == "annotations" and isinstance(value, dict):
            copy[key] = {name: REDACTED if name in CONFIG_ANNOTATIONS else text
                         for name, text in value.items()}
        else:
            copy[key] = redact(value)
    return copy


def _without_value(variable: Any) -> Any:
    if isinstance(variable, dict) and "value" in variable:
        return {**variable, "value": REDACTED}
    return redact(variable)


def write_bundle(snapshot: Snapshot, path: str | Path) -> Path:
    """Write the redacted dump files and the bundle's README into ``path`` (created 0700, or
    set to 0700), each file 0600; returns the directory."""
    directory = Path(path)
    directory.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    directory.chmod(DIRECTORY_MODE)
    for filename, attribute in DUMP_FILES.items():
        if attribute in OPTIONAL_DUMP_LISTS and not getattr(snapshot, attribute):
            continue  # a cluster that does not serve the group has no such file
        document = {"apiVersion": "v1", "kind": "List",
                    "items": redact(getattr(snapshot, attribute)),
                    "metadata": {"resourceVersion": ""}}
        _write_private(directory / filename, json.dumps(document, indent=4) + "\n")
    _write_private(directory / README, README_TEXT.format(
        directory=directory, annotations=", ".join(sorted(CONFIG_ANNOTATIONS))))
    return directory


def _write_private(path: Path, text: str) -> None:
    """Owner-only from the first byte (an existing file of an earlier bundle is set too)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with open(descriptor, "w", encoding="utf-8") as file:
        os.fchmod(file.fileno(), FILE_MODE)
        file.write(text)
