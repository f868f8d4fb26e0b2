"""Answers wait for the Slack requests in flight to be acked, never longer than their limit."""

from __future__ import annotations

from contextlib import ExitStack

from bot.slack.listeners.state import AcksFirst
from bot.web.serve import SlackEndpoint
from bot.web.server import Request
from tests.bot.slack.test_slack_app import FORM, SECRET, make_app, simple_source
from tests.slackfake import FakeSlack, command_body, sign


class FakeTime:
    """A clock that only moves when something sleeps; every sleep is written down."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []
        self.on_sleep: list[ExitStack] = []  # requests that end at the next sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds
        while self.on_sleep:
            self.on_sleep.pop().close()


def gate(time: FakeTime) -> AcksFirst:
    return AcksFirst(quiet_s=0.15, longest_wait_s=1.0, clock=time.clock, sleep=time.sleep)


def test_an_answer_with_no_request_about_starts_at_once() -> None:
    time = FakeTime()
    gate(time).wait_for_quiet()
    assert time.slept == []


def test_an_answer_waits_out_the_quiet_spell_after_the_last_ack() -> None:
    time = FakeTime()
    acks = gate(time)
    with acks.acking():
        pass
    time.now += 0.05
    acks.wait_for_quiet()
    assert time.slept == [0.1]


def test_an_answer_starts_a_quiet_spell_after_the_request_in_flight_ends() -> None:
    time = FakeTime()
    acks = gate(time)
    request = ExitStack()
    request.enter_context(acks.acking())
    time.on_sleep.append(request)  # acked during the first look
    acks.wait_for_quiet()
    assert time.slept == [0.15, 0.15]


def test_requests_that_never_stop_hold_an_answer_for_the_longest_wait_only() -> None:
    time = FakeTime()
    acks = gate(time)
    with acks.acking():
        started = time.now
        acks.wait_for_quiet()
        assert round(time.now - started, 6) == 1.0
    assert len(time.slept) == 7  # six looks of 0.15 s and the 0.1 s left


def test_the_slack_endpoint_marks_each_request_it_handles(slack: FakeSlack) -> None:
    time = FakeTime()
    acks = gate(time)
    endpoint = SlackEndpoint(make_app(slack, simple_source()), SECRET, acks=acks)
    body = command_body("research/full", response_url=slack.response_url())
    headers = {"content-type": FORM, **sign(SECRET, body)}
    response = endpoint(Request("POST", "/slack/events", "", headers, body.encode(), "test"))
    assert response.status == 200
    acks.wait_for_quiet()
    assert time.slept == [0.15]
    slack.wait_for("chat.postMessage")  # the app's own answer, before its Slack goes away
