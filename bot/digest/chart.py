"""The digest's picture: the cause counts of the last 8 weeks as a stacked bar chart (PNG).

Drawn with matplotlib, an optional extra (``pip install 'gpuwhy[charts]'``): without it the
digest is text alone. The figure is drawn on matplotlib's Agg canvas directly (no pyplot, no
global figure state), so the bot's threads may draw at once.
"""

from __future__ import annotations

import importlib.util
import io
import logging
from datetime import timedelta

from slack_sdk import WebClient

from bot.digest.digest import EVERYTHING, Digest, Scope, Stats, compute_stats
from bot.digest.post import Attach
from bot.digest.weeks import DigestError, add_weeks, load_timezone
from bot.store import Store

log = logging.getLogger(__name__)

CHART_WEEKS = 8
WIDTH, HEIGHT, DPI = 8.0, 4.0, 100  # inches at DPI: an 800 × 400 PNG
EXTRA_MISSING = "charts need matplotlib: pip install 'gpuwhy[charts]'"



def charts_installed() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def chart_stats(store: Store, digest: Digest, scope: Scope = EVERYTHING) -> Stats:
    """Answers per cause in the CHART_WEEKS weeks that end with the digest's."""
    tz = load_timezone(digest.timezone)
    start = add_weeks(digest.end, -CHART_WEEKS)
    incidents = store.incidents_between(start, digest.end)
    return compute_stats([i for i in incidents if scope.keeps(i)],
                         digest.end - timedelta(microseconds=1), tz, CHART_WEEKS)


def cause_chart(stats: Stats, title: str) -> bytes:
    """The PNG: a bar per week, stacked by cause (the vocabulary's order, bottom up)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise DigestError(EXTRA_MISSING) from None
    figure = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    labels = [week.key.split("-")[-1] for week in stats.weeks]  # "W48"
    positions = list(range(len(labels)))
    bottom = [0] * len(labels)
    for row in stats.rows:
        axes.bar(positions, row.counts, bottom=bottom, label=row.cause)
        bottom = [below + count for below, count in zip(bottom, row.counts, strict=True)]
    axes.set_xticks(positions, labels)
    axes.set_ylabel("answers")
    axes.set_title(title)
    if stats.rows:
        axes.legend(loc="upper left", fontsize="small", frameon=False,
                    bbox_to_anchor=(1.0, 1.0))
    else:
        axes.text(0.5, 0.5, "no answers in these weeks", ha="center", va="center",
                  transform=axes.transAxes)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def digest_chart(store: Store, digest: Digest, scope: Scope = EVERYTHING) -> bytes:
    return cause_chart(chart_stats(store, digest, scope),
                       f"gpuwhy answers per cause, {CHART_WEEKS} weeks to {digest.key}")


def slack_chart(store: Store, client: WebClient, scope: Scope = EVERYTHING) -> Attach | None:
    """Uploads the chart to the digest's channel (files_upload_v2); None without the extra."""
    if not charts_installed():
        return None

    def attach(channel: str, digest: Digest) -> None:
        client.files_upload_v2(
            channel=channel, file=digest_chart(store, digest, scope),
            filename=f"gpuwhy-causes-{digest.key}.png",
            title=f"Answers per cause, {CHART_WEEKS} weeks to {digest.key}",
            alt_txt=f"Stacked bars of gpuwhy's answers per cause for the {CHART_WEEKS} weeks "
                    f"to {digest.key}; the digest above has the figures as text.")

    return attach
