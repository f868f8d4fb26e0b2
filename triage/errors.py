"""Errors that reach the user as one plain sentence."""


class ClusterError(Exception):
    """Reading the cluster failed: unreachable, timed out, forbidden, not found, server error.

    ``str(error)`` is one sentence fit for a Slack reply or a terminal line.
    """
