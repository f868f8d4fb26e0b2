"""The house's floors: scoring/ is the bottom one and reaches up into nothing."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.paths import REPO


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", sorted((REPO / "scoring").rglob("*.py")),
                         ids=lambda path: str(path.relative_to(REPO)))
def test_scoring_imports_nothing_from_the_floors_above(path: Path) -> None:
    above = sorted(module for module in imported_modules(path)
                   if module.split(".")[0] in {"triage", "bot"})
    assert above == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("from triage.snapshot import Snapshot\nimport bot.store\n")
    assert imported_modules(module) == {"triage.snapshot", "bot.store"}


def where_things_are() -> dict[str, list[str]]:
    """The README's "Where things are" table: each cause word with the check modules named."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            modules = [word.strip("`;,") for word in cells[1].split()
                       if word.strip("`;,").endswith(".py")]
            for word in cells[0].split(","):
                rows[word.strip().strip("`")] = modules
    return rows


def test_the_readme_says_where_each_cause_word_is_checked() -> None:
    from triage.classify.pipeline import CHECKS

    rows = where_things_are()
    checks_dir = REPO / "triage" / "classify" / "checks"
    for cause, checks in CHECKS.items():
        named = rows.get(cause.value)
        assert named, f"{cause.value} has no row in the README's Where things are"
        defined_in = {Path(getattr(check, part).__code__.co_filename).name
                      for check in checks for part in ("check", "drop", "explain")
                      if callable(getattr(check, part, None))}
        assert defined_in <= set(named), (cause.value, defined_in - set(named))
        assert all((checks_dir / module).is_file() for module in named), named


# -- the raw objects are read where the rows are built --------------------------------------

# What reads a Kubernetes object's JSON shape, or hands one on: its sections, the node table
# row's raw Node, the dict type, the Snapshot and the modules of raw helpers, and a check
# going past its Subject's rows to the raw pod, spec, workload or Snapshot.
RAW_SHAPES = {
    "section": re.compile(r'\.get\("(?:spec|metadata|status)"|\["(?:spec|metadata|status)"\]'),
    ".raw": re.compile(r"\.raw\b"),
    "K8sObject": re.compile(r"\bK8sObject\b"),
    "raw import": re.compile(r"^from (?:triage\.(?:snapshot|cache|pods)|scoring\.objects) import",
                             re.M),
    "subject's raw": re.compile(r"\bsubject\.(?:snapshot|pod|spec|workload)\b"),
}
# Where those are allowed, by file, each with why: the row builders, which read raw by their
# job (the list only shrinks).
RAW_ALLOWED: dict[str, dict[str, str]] = {
    # -- the builders: the rows and the facts they are made of
    "scoring/nodetable.py": dict.fromkeys(("section", ".raw", "K8sObject", "raw import"),
                                          "builds the node table's rows from the Nodes"),
    "scoring/nodes.py": dict.fromkeys(("section", "K8sObject", "raw import"),
                                      "the node facts nodetable.py parses"),
    "scoring/objects.py": dict.fromkeys(("K8sObject",), "the raw object helpers"),
}
# DRA's and Kueue's modules (scoring/dra/, checks/dra*.py, checks/queue*.py) have layout
# tests of their own: tests/scoring/test_dra_rows_layout.py, tests/triage/test_queue_rows_layout.py
RAW_OWNED_ELSEWHERE = ("scoring/dra/", "triage/classify/checks/dra",
                       "triage/classify/checks/queue")


def _funnel_modules() -> list[Path]:
    return sorted(path for folder in ("scoring", "triage/classify")
                  for path in (REPO / folder).rglob("*.py")
                  if not str(path.relative_to(REPO)).startswith(RAW_OWNED_ELSEWHERE))


def raw_reads(text: str) -> set[str]:
    return {what for what, pattern in RAW_SHAPES.items() if pattern.search(text)}


@pytest.mark.parametrize("path", _funnel_modules(), ids=lambda path: str(path.relative_to(REPO)))
def test_checks_and_scoring_read_rows_not_raw_objects(path: Path) -> None:
    relative = str(path.relative_to(REPO))
    found = raw_reads(path.read_text(encoding="utf-8"))
    allowed = RAW_ALLOWED.get(relative, {})
    assert found <= set(allowed), (
        f"{relative} reads raw objects ({', '.join(sorted(found - set(allowed)))}): read the "
        "rows (scoring/rows, scoring/nodetable, triage/rows/), or make a row grow")
    # an entry no longer needed goes: the list only shrinks
    assert set(allowed) <= found, f"{relative}: allowed but gone: {set(allowed) - found}"


@pytest.mark.parametrize(("text", "what"), [
    ('spec = pod.get("spec") or {}', "section"), ('name = node["metadata"]["name"]', "section"),
    ("labels(node.raw)", ".raw"), ("def f(pod: K8sObject) -> None:", "K8sObject"),
    ("from triage.snapshot import Snapshot", "raw import"),
    ("from scoring.objects import is_terminated", "raw import"),
    ("subject.spec.get('x')", "subject's raw"),
])
def test_the_raw_read_check_sees_each_shape(text: str, what: str) -> None:
    assert raw_reads(text) == {what}


def test_the_raw_read_check_passes_rows() -> None:
    assert raw_reads("held = subject.rows.holders_on(node.name, resource)\n"
                     "from scoring.rows import PodRow\nrow.raw_count\n") == set()


# -- the Snapshot: made by the readers, read by the row builders ----------------------------

# The modules that may import the Snapshot (or the watch cache's): what makes it (the dump and
# live readers, the watch cache) and what builds the rows of it. scoring/ imports nothing
# from triage/ at all (test_scoring_imports_nothing_from_the_floors_above).
SNAPSHOT_MODULES = frozenset({"triage.snapshot", "triage.cache", "triage.cache.snapshot"})
SNAPSHOT_READERS = ("triage/snapshot.py", "triage/rows/", "triage/cache/", "triage/cluster/")
# triage() is the public entry point, which tools outside gpuwhy call with a Snapshot: its
# module may name the type for that signature alone, imported under TYPE_CHECKING (then it
# is no name of the module when it runs), and reads the rows.
SNAPSHOT_IN_SIGNATURE = {"triage/classify/resolve.py": "triage"}
# The Rows hand the Snapshot and the raw objects of their rows to the row builders alone.
PAST_THE_ROWS = re.compile(r"\brows\.(?:snapshot|object_of)\b")


def _snapshot_import_nodes(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that bring in the Snapshot's modules or names of them."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        if SNAPSHOT_MODULES.intersection(names):
            found.append(node)
    return found


def _signature_only(tree: ast.Module, function: str) -> bool:
    """The Snapshot is imported under ``if TYPE_CHECKING:`` and named only in the argument
    annotations of ``function``."""
    guarded = [statement for node in tree.body if isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
               for statement in node.body]
    imports = _snapshot_import_nodes(tree)
    if not imports or not all(node in guarded and isinstance(node, ast.ImportFrom)
                              and [alias.name for alias in node.names] == ["Snapshot"]
                              for node in imports):
        return False
    signature = next(node for node in tree.body
                     if isinstance(node, ast.FunctionDef) and node.name == function)
    in_signature = {id(name) for arg in signature.args.args if arg.annotation is not None
                    for name in ast.walk(arg.annotation)}
    return all(id(node) in in_signature for node in ast.walk(tree)
               if isinstance(node, ast.Name) and node.id == "Snapshot")


def _holds_the_snapshot(module: ModuleType) -> list[str]:
    """The names of a module, once imported, that are the Snapshot's module, a Snapshot type
    or a function or class defined there: what a re-export would hand on unseen by grep."""
    from triage import snapshot as snapshot_module
    from triage.snapshot import Snapshot

    return sorted(name for name, value in vars(module).items()
                  if getattr(value, "__name__", None) != f"{module.__name__}.{name}"  # its own
                  and (value is snapshot_module  # submodule, of a package: no import of it
                       or (isinstance(value, type) and issubclass(value, Snapshot))
                       or getattr(value, "__module__", None) in SNAPSHOT_MODULES))


def snapshot_reach(path: Path, module: ModuleType) -> list[str]:
    """How a module of the pure core reaches the Snapshot, by its import statements, by what
    it holds once imported and through the Rows; empty when it does not."""
    relative = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    signature = SNAPSHOT_IN_SIGNATURE.get(relative)
    reach = [f"imports {ast.unparse(node)}" for node in _snapshot_import_nodes(tree)
             if signature is None or not _signature_only(tree, signature)]
    return (reach + [f"holds {name}" for name in _holds_the_snapshot(module)]
            + [f"reads {found}" for found in sorted(set(PAST_THE_ROWS.findall(text)))])


def _core_modules() -> list[Path]:
    return sorted(path for folder in ("triage", "scoring") for path in (REPO / folder).rglob("*.py")
                  if not str(path.relative_to(REPO)).startswith(SNAPSHOT_READERS))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


@pytest.mark.parametrize("path", _core_modules(), ids=lambda path: str(path.relative_to(REPO)))
def test_only_the_readers_and_row_builders_reach_the_snapshot(path: Path) -> None:
    reach = snapshot_reach(path, importlib.import_module(_module_name(path)))
    assert reach == [], (f"{path.relative_to(REPO)} reaches the Snapshot ({'; '.join(reach)}): "
                         "read the Rows (triage/rows/), or build what it needs there")


def test_the_entry_point_names_the_snapshot_for_its_signature_alone() -> None:
    for relative, function in SNAPSHOT_IN_SIGNATURE.items():
        assert _signature_only(ast.parse((REPO / relative).read_text(encoding="utf-8")),
                               function), relative


def _put_back(tmp_path: Path, relative: str, line: str) -> tuple[Path, ModuleType]:
    """A copy of a module of the core with ``line`` among its imports, imported."""
    text = (REPO / relative).read_text(encoding="utf-8")
    anchor = "\nfrom __future__ import annotations\n"
    copy = tmp_path / Path(relative).name
    copy.write_text(text.replace(anchor, f"{anchor}\n{line}\n", 1), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"put_back_{copy.stem}", copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return copy, module


@pytest.mark.parametrize(("line", "seen"), [
    ("from triage.snapshot import Snapshot", ["imports from triage.snapshot import Snapshot",
                                              "holds Snapshot"]),
    ("import triage.snapshot", ["imports import triage.snapshot"]),
    ("from triage import snapshot", ["imports from triage import snapshot", "holds snapshot"]),
    ("from triage.snapshot import WORKLOAD_KINDS",
     ["imports from triage.snapshot import WORKLOAD_KINDS"]),
    # handed on by a module that may import it: grep for triage.snapshot misses it
    ("from triage.rows.table import Snapshot as Cluster", ["holds Cluster"]),
    ("from triage.cache import IndexedSnapshot",
     ["imports from triage.cache import IndexedSnapshot", "holds IndexedSnapshot"]),
    # no import at all: through the Subject's Rows
    ("_pods = lambda subject: subject.rows.snapshot.pods", ["reads rows.snapshot"]),
    ("_pod = lambda subject: subject.rows.object_of(subject.row)", ["reads rows.object_of"]),
])
def test_a_check_importing_the_snapshot_again_is_seen(tmp_path: Path, line: str,
                                                      seen: list[str]) -> None:
    path, module = _put_back(tmp_path, "triage/classify/checks/gpu.py", line)
    assert snapshot_reach(path, module) == seen


def test_the_entry_point_s_allowance_is_for_its_signature_alone(tmp_path: Path) -> None:
    resolve = "triage/classify/resolve.py"
    text = (REPO / resolve).read_text(encoding="utf-8")
    assert _signature_only(ast.parse(text), "triage")
    # named in a body too, or imported when the module runs: no longer the signature alone
    body = text.replace('    """The answer for one ref: a pod, a workload, or a pasted generated '
                        'pod name."""\n',
                        '    """The answer for one ref: a pod, a workload, or a pasted generated '
                        'pod name."""\n    assert isinstance(snapshot, Snapshot)\n', 1)
    assert body != text and not _signature_only(ast.parse(body), "triage")
    path, module = _put_back(tmp_path, resolve, "from triage.snapshot import Snapshot")
    assert not _signature_only(ast.parse(path.read_text(encoding="utf-8")), "triage")
    assert "holds Snapshot" in snapshot_reach(path, module)
