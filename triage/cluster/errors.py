"""What reading a cluster can raise besides ClusterError, and the one-sentence helper."""

from __future__ import annotations

from triage.vocabulary import Cause


class AdmissionRejected(Exception):
    """The API server's admission refused a (dry-run) create; ``cause`` when gpuwhy knows it."""

    def __init__(self, message: str, cause: Cause | None) -> None:
        super().__init__(message)
        self.message = message
        self.cause = cause


class Expired(Exception):
    """410 Gone: a continue token or watch resourceVersion is too old; list again."""


def one_line(text: str) -> str:
    return " ".join(text.split()).rstrip(".")
