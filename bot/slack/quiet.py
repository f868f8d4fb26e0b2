"""Slack Web API calls whose failure the caller reports itself, in one line of its own
(`gpuwhy doctor`, `gpuwhy digest --post`, serve's start-up check): the client logs nothing
and does not retry, so an unreachable API is that one line, not library ERROR lines first."""

from __future__ import annotations

import logging

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

QUIET_LOG = logging.getLogger("gpuwhy.slack.quiet")
QUIET_LOG.addHandler(logging.NullHandler())
QUIET_LOG.propagate = False
TIMEOUT_S = 10


def quiet_client(token: str | None, base_url: str, timeout: float = TIMEOUT_S) -> WebClient:
    return WebClient(token=token, base_url=base_url if base_url.endswith("/") else base_url + "/",
                     timeout=int(timeout), logger=QUIET_LOG, retry_handlers=[])


def unreachable(base_url: str, exc: BaseException) -> str:
    """"cannot reach the Slack Web API at URL: connection refused", not the urllib repr."""
    reason = getattr(exc, "reason", exc)
    text = (reason.strerror or "").lower() if isinstance(reason, OSError) else ""
    return f"cannot reach the Slack Web API at {base_url}: {text or ' '.join(str(reason).split())}"


def slack_failure(base_url: str, exc: BaseException) -> str:
    """Slack's own error code when it answered, else why it could not be reached."""
    if isinstance(exc, SlackApiError):
        return f"Slack answered {exc.response.get('error') or 'an error'}"
    return unreachable(base_url, exc)
