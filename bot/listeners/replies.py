"""The sentences the bot says when it does not answer with a verdict."""

from __future__ import annotations

from bot.blocks import escape_mrkdwn, one_line

APOLOGY = "Sorry, something went wrong while answering that. It has been logged; please try again."
CHANNEL_REFUSAL = "Sorry, I don't answer in this channel. Please ask in your support channel."
CLUSTER_UNREADABLE = "Sorry, the cluster could not be read. Please try again in a minute."


def namespace_refusal(namespace: str) -> str:
    return (f"Sorry, namespace `{escape_mrkdwn(namespace, 63)}` can't be described in this "
            "channel. Please ask in the channel for that team.")


def cluster_refusal(cluster: str) -> str:
    return (f"Sorry, cluster `{escape_mrkdwn(cluster, 63)}` can't be described in this "
            "channel. Please ask in the channel for that cluster.")


def cluster_failure(error: Exception) -> str:
    """A ClusterError as the one plain sentence it carries, safe for mrkdwn."""
    return escape_mrkdwn(one_line(error), 2000) or CLUSTER_UNREADABLE
