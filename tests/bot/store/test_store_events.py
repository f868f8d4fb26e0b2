"""Slack event claims in the store: one replica answers each event, old claims are pruned.

Two replicas racing for one claim: tests/test_store.py, test_racing_claims_one_winner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.store import Store, StoreError

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def claimed(store: Store) -> list[str]:
    with store.engine.connect() as connection:
        return list(connection.scalars(text("SELECT event_id FROM slack_events "
                                            "ORDER BY event_id")))


def test_an_event_is_claimed_once(store: Store) -> None:
    assert store.claim_event("Ev01") is True
    assert store.claim_event("Ev01") is False
    assert store.claim_event("Ev02") is True
    assert claimed(store) == ["Ev01", "Ev02"]


def test_claims_older_than_a_day_are_pruned(store: Store) -> None:
    assert store.claim_event("Ev-old", at=T0) is True
    # A retry 23 hours later still finds the claim.
    assert store.claim_event("Ev-old", at=T0 + timedelta(hours=23)) is False
    assert store.claim_event("Ev-new", at=T0 + timedelta(hours=25)) is True
    assert claimed(store) == ["Ev-new"]
    assert store.claim_event("Ev-old", at=T0 + timedelta(hours=25)) is True


def test_pruning_runs_at_most_hourly(store: Store) -> None:
    later = T0 + timedelta(days=2)
    assert store.claim_event("Ev-a", at=later) is True  # prunes, next prune in an hour
    assert store.claim_event("Ev-stale", at=T0) is True  # a claim two days older
    assert store.claim_event("Ev-b", at=later + timedelta(minutes=59)) is True
    assert claimed(store) == ["Ev-a", "Ev-b", "Ev-stale"]
    assert store.claim_event("Ev-c", at=later + timedelta(hours=1)) is True
    assert claimed(store) == ["Ev-a", "Ev-b", "Ev-c"]


def test_prune_events_says_how_many(store: Store) -> None:
    for minutes in (0, 10, 20):
        store.claim_event(f"Ev{minutes}", at=T0 + timedelta(minutes=minutes))
    assert store.prune_events(T0 + timedelta(minutes=15)) == 2
    assert store.prune_events(T0 + timedelta(minutes=15)) == 0
    assert claimed(store) == ["Ev20"]


def test_a_store_without_the_table_is_a_one_line_error(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'no-schema.db'}")  # never upgraded
    with pytest.raises(StoreError) as caught:
        store.claim_event("Ev01")
    message = str(caught.value)
    assert message.startswith("database sqlite:///") and "cannot prune Slack event" in message
    assert "\n" not in message
    store.close()
