"""The digest's chart: the PNG decoded (size, not blank), uploaded with files_upload_v2 after the
text, the text posted all the same when the upload fails, and text alone without the extra."""

from __future__ import annotations

import builtins
import importlib.util
import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

from bot.cli.main import main
from bot.config import DigestSchedule
from bot.digest import Digest, DigestScheduler, Scope, last_full_week, load_digest
from bot.digest.chart import chart_stats, digest_chart
from bot.store import Store
from bot.web.metrics import DIGEST_POSTS
from tests.bot.digest.test_digest_cli import (  # noqa: F401  (fixtures: used by name)
    clean_environment,
    db,
    last_week_key,
    slack,
)
from tests.slackfake import FakeSlack

UTC_ZONE = ZoneInfo("UTC")


@pytest.fixture
def without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if gpuwhy[charts] were not installed: matplotlib cannot be found or imported."""
    real_find_spec, real_import = importlib.util.find_spec, builtins.__import__

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.split(".")[0] == "matplotlib" else real_find_spec(name, *args,
                                                                              **kwargs)

    def guarded_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "matplotlib":
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    for module in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(builtins, "__import__", guarded_import)


def decoded(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()  # the whole image decodes
    return image


def assert_a_chart(png: bytes) -> None:
    image = decoded(png)
    assert image.format == "PNG" and image.size == (800, 400)
    colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    # bars, text and the white page: far more than a blank image's one colour
    assert colours is not None and len(colours) > 10


def test_digest_chart_writes_a_png(db: str, tmp_path: Path,  # noqa: F811
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "causes.png"
    assert main(["digest", "--db", db, "--chart", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"gpuwhy digest {last_week_key()}")
    assert_a_chart(out.read_bytes())


def test_the_chart_counts_eight_weeks_to_the_digest(db: str) -> None:  # noqa: F811
    store = Store(db)
    digest = load_digest(store, last_full_week(datetime.now(UTC), UTC_ZONE), UTC_ZONE)
    stats = chart_stats(store, digest)
    # db: 2 exhausted last week, 1 allocatable-zero the week before
    assert len(stats.weeks) == 8 and stats.weeks[-1].key == digest.key
    assert {row.cause: row.counts[-2:] for row in stats.rows} == {
        "allocatable-zero": (1, 0), "exhausted": (0, 2)}
    assert chart_stats(store, digest, Scope(namespaces=lambda ns: False)).rows == ()
    assert_a_chart(digest_chart(store, digest, Scope(namespaces=lambda ns: False)))
    store.close()


def test_the_chart_goes_with_the_posted_digest(db: str, slack: FakeSlack,  # noqa: F811
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--db", db, "--post", "C-digest"]) == 0
    assert capsys.readouterr().out == f"posted the digest {last_week_key()} to C-digest\n"
    methods = [c.method for c in slack.calls]
    assert methods.index("chat.postMessage") < methods.index("files.getUploadURLExternal") \
        < methods.index("upload") < methods.index("files.completeUploadExternal")
    [complete] = slack.calls_to("files.completeUploadExternal")
    assert complete.params["channel_id"] == "C-digest" and complete.answer["ok"]
    [file_id] = slack.uploads
    assert_a_chart(slack.uploads[file_id])
    files = complete.params["files"]
    listed = json.loads(files) if isinstance(files, str) else files
    assert listed[0]["title"] == f"Answers per cause, 8 weeks to {last_week_key()}"


@pytest.mark.parametrize("failing", ["files.getUploadURLExternal", "upload",
                                     "files.completeUploadExternal"])
def test_the_digest_goes_out_when_the_upload_fails(
        db: str, slack: FakeSlack, failing: str,  # noqa: F811
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    slack.fail(failing, "not_allowed")
    failed = DIGEST_POSTS.labels("chart-failed")._value.get()
    assert main(["digest", "--db", db, "--post", "C-digest"]) == 0
    assert capsys.readouterr().out == f"posted the digest {last_week_key()} to C-digest\n"
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert DIGEST_POSTS.labels("chart-failed")._value.get() == failed + 1
    assert any("posted without its chart" in r.getMessage() for r in caplog.records)
    # posted once: a second run finds the claim and posts nothing more
    assert main(["digest", "--db", db, "--post", "C-digest"]) == 0
    assert len(slack.calls_to("chat.postMessage")) == 1


@pytest.mark.usefixtures("without_matplotlib")
def test_without_the_extra_the_digest_is_text(db: str, slack: FakeSlack,  # noqa: F811
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--db", db, "--post", "C-digest"]) == 0
    assert [c.method for c in slack.calls] == ["chat.postMessage"]
    assert main(["digest", "--db", db, "--chart", "out.png"]) == 2
    assert capsys.readouterr().err == (
        "gpuwhy digest: charts need matplotlib: pip install 'gpuwhy[charts]'\n")


def test_the_bot_posts_the_chart_after_the_digest(db: str) -> None:  # noqa: F811
    store = Store(db)
    posted: list[str] = []
    attached: list[tuple[str, str]] = []

    def attach(channel: str, digest: Digest) -> None:
        attached.append((channel, digest.key))
        raise OSError("the upload URL did not answer")

    scheduler = DigestScheduler(store, lambda channel, text, blocks: posted.append(channel),
                                DigestSchedule(channel="C1", weekday=0, hour=0), attach)
    assert scheduler.run_pending(datetime.now(UTC)) is True
    assert posted == ["C1"] and attached == [("C1", last_week_key())]
    store.close()
