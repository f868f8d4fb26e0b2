"""The weekly digest and per-week stats: which causes keep coming back.

``digest`` counts (pure functions of stored incidents) and renders; ``weeks`` says what a week
is; ``post`` sends the digest to Slack once per week and channel.
"""

from bot.answer.kept import implicated_nodes
from bot.digest.digest import (
    EVERYTHING,
    Blocks,
    BrokenNode,
    Digest,
    Scope,
    compute_digest,
    compute_stats,
    digest_blocks,
    digest_text,
    load_digest,
    stats_blocks,
    stats_text,
)
from bot.digest.post import (
    Attach,
    DigestScheduler,
    PostError,
    digest_client,
    post_once,
    slack_post,
)
from bot.digest.weeks import (
    DEFAULT_STATS_WEEKS,
    MAX_WEEKS,
    DigestError,
    add_weeks,
    last_full_week,
    load_timezone,
    parse_weeks,
    week_key,
    week_start,
)

__all__ = [
    "DEFAULT_STATS_WEEKS",
    "EVERYTHING",
    "MAX_WEEKS",
    "Attach",
    "Blocks",
    "BrokenNode",
    "Digest",
    "DigestError",
    "DigestScheduler",
    "PostError",
    "Scope",
    "add_weeks",
    "compute_digest",
    "compute_stats",
    "digest_blocks",
    "digest_client",
    "digest_text",
    "implicated_nodes",
    "last_full_week",
    "load_digest",
    "load_timezone",
    "parse_weeks",
    "post_once",
    "slack_post",
    "stats_blocks",
    "stats_text",
    "week_key",
    "week_start",
]
