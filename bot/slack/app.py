"""The Slack app: one bolt App for HTTP and Socket Mode, built from settings and a triage source."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from slack_bolt import App
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from bot.answer.blocks import compile_answer_templates
from bot.clusters.sources import TriageSource
from bot.config import BotConfig
from bot.slack.listeners import register_listeners
from bot.slack.listeners.state import BotState, utc_now
from bot.store import Store
from bot.web.metrics import SLACK_API_ERRORS

RATE_LIMIT_RETRIES = 3
SLACK_LOG = logging.getLogger("gpuwhy.slack")
# Bolt warns that SLACK_BOT_TOKEN goes unused whenever it is given a client, even one built
# from that very token; the warning would greet every start of `gpuwhy serve`.
SLACK_LOG.addFilter(
    lambda record: record.getMessage() != warning_client_prioritized_and_token_skipped())


class CountedWebClient(WebClient):
    """A WebClient that counts failed calls in gpuwhy_slack_api_errors by method and error."""

    def api_call(self, api_method: str, **kwargs: Any) -> Any:
        try:
            return super().api_call(api_method, **kwargs)
        except SlackApiError as exc:
            SLACK_API_ERRORS.labels(api_method, str(exc.response.get("error") or "unknown")).inc()
            raise
        except (SlackClientError, OSError):
            SLACK_API_ERRORS.labels(api_method, "unreachable").inc()
            raise


def slack_client(environ: Mapping[str, str] | None = None) -> WebClient:
    """A Web API client with the bot token from SLACK_BOT_TOKEN; SLACK_API_URL overrides the base.

    429 answers are retried after the Retry-After the API sends.
    """
    environ = os.environ if environ is None else environ
    base_url = environ.get("SLACK_API_URL") or WebClient.BASE_URL
    client = CountedWebClient(token=environ.get("SLACK_BOT_TOKEN"),
                       base_url=base_url if base_url.endswith("/") else base_url + "/")
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


def create_app(
    config: BotConfig,
    source: TriageSource,
    store: Store | None = None,
    client: WebClient | None = None,
    *,
    signing_secret: str | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> App:
    """The bolt App with gpuwhy's listeners; ``client`` defaults to :func:`slack_client`."""
    state = BotState(config=config, source=source, store=store, clock=clock)
    return bolt_app(state, client, signing_secret=signing_secret)


def bolt_app(state: BotState, client: WebClient | None = None, *,
             signing_secret: str | None = None) -> App:
    """The bolt App answering from ``state``; the caller keeps ``state`` to close it.

    Every listener acks and hands its work to the answer workers, so each returns at once:
    bolt runs it in the request's own thread and replies when it returns
    (process_before_response=True), which keeps every ack inside Slack's 3-second limit in
    HTTP and Socket Mode. Bolt's other way, the listener on a thread of its own and the
    request's thread polling for the ack every 10 ms, cost 4 ms of CPU and 11 ms of wall time
    per ack: a burst of 200 commands took over a second to ack.
    """
    app = App(
        client=client if client is not None else slack_client(),
        signing_secret=signing_secret,
        process_before_response=True,
        logger=SLACK_LOG,
    )
    register_listeners(app, state)
    compile_answer_templates()
    return app
