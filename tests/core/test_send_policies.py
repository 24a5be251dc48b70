"""Each send policy's answers (emailops/core/policies/), the chain's walk (``ask_each``), and the
pipeline's shape: a fixed sequence with no optional collaborator."""

from __future__ import annotations

import dataclasses
import logging
import types
import typing

import pytest

from emailops.core.compose import Composed
from emailops.core.contract import Recipient, parse_request
from emailops.core.errors import TransientError
from emailops.core.events import EventLog
from emailops.core.log_only import LogOnlyReason
from emailops.core.pipeline import Action, EmailPipeline
from emailops.core.policies.emergency_stop import EmergencyStop
from emailops.core.policies.reputation_pause import ReputationPause
from emailops.core.policies.send_guard import SendGuardCheck
from emailops.core.policies.service_stop import ServiceStop
from emailops.core.policies.suppression import Suppression
from emailops.core.policies.template_off import TemplateOff
from emailops.core.policies.unsubscribed import Unsubscribed
from emailops.core.ports import TemplateMapping
from emailops.core.preferences import Preference
from emailops.core.reputation import GateDecision
from emailops.core.retry import RetryState
from emailops.core.send_guard import Safeguard
from emailops.core.send_policy import SEND, Ask, Kind, Stage, Verdict, ask_each
from emailops.pipeline_build import send_policies
from tests.fakes import FixedGate, InMemoryRateCounters

NOW = 1_750_000_000
LOG = EventLog(logging.getLogger("tests.policies"))
BODY = '{"messageId": "m", "recipients": [{"email": "a@example.com"}], "context": {}}'


def ask(
    *,
    category: str = "",
    priority: str = "normal",
    send_disabled: bool = False,
    name: str = "a@example.com",
    key: str = "k1",
    state: RetryState | None = None,
) -> Ask:
    mapping = TemplateMapping(
        "m", "m.html", "S", category=category, priority=priority, send_disabled=send_disabled
    )
    composed = Composed(mapping, "default/m.html", "S", "<p>x</p>", "x", missing=())
    return Ask(
        parse_request(BODY),
        composed,
        LOG,
        lambda: NOW,
        Recipient("a@example.com"),
        name,
        key,
        state or RetryState(),
    )


class Limiter:
    def acquire(self) -> float:
        return 0.0

    def on_throttled(self) -> None: ...

    def on_daily_quota_exceeded(self) -> None: ...


# --- one module each ---------------------------------------------------------------------------


def test_reputation_pause_holds_pauses_paces_slowness_and_lets_a_failing_gate_go():
    slow = Limiter()
    gate = FixedGate(
        {"bulk": (GateDecision.PAUSE, "bounce 6 %"), "normal": (GateDecision.SLOW, "")}
    )
    policy = ReputationPause(gate, slow, pause_wait_seconds=90)
    assert policy.stage is Stage.RECORD
    assert policy.check(ask(priority="bulk")) == Verdict.hold(NOW + 90, "paused: bounce 6 %")
    paced = policy.check(ask(priority="normal"))
    assert (paced.kind, paced.pace) == (Kind.SEND, (slow,))
    assert policy.check(ask(priority="critical")) is SEND

    class Broken:
        def decide(self, **_):
            raise ConnectionError("redis down")

    assert ReputationPause(Broken(), slow).check(ask(priority="bulk")) is SEND


def test_service_stop_makes_every_recipient_log_only():
    verdict = ServiceStop().check(ask())
    assert (verdict.kind, verdict.reason) == (Kind.LOG_ONLY, LogOnlyReason.SERVICE_STOP)
    assert verdict.detail == "SEND_ENABLED is false"


def test_emergency_stop_is_log_only_with_its_reason_while_it_is_on():
    class Switch:
        reason: str | None = None

        def stop_reason(self):
            return self.reason

    switch = Switch()
    policy = EmergencyStop(switch)
    assert policy.check(ask()) is SEND
    switch.reason = "incident 42 (by lead)"
    assert policy.check(ask()) == Verdict.log_only(
        LogOnlyReason.SERVICE_STOP, "emergency stop: incident 42 (by lead)"
    )


def test_template_off_is_log_only_for_a_mapping_with_send_disabled():
    assert TemplateOff().check(ask()) is SEND
    assert TemplateOff().check(ask(send_disabled=True)) == Verdict.log_only(
        LogOnlyReason.TEMPLATE_OFF, "SendDisabled on m"
    )


def test_suppression_answers_suppressed_with_the_lists_reason_by_the_requests_address():
    class Listed:
        asked: list[str] = []

        def suppression_reason(self, address):
            self.asked.append(address)
            return "hard bounce" if address == "a@example.com" else None

    listed = Listed()
    assert Suppression(listed).check(ask(name="erased:0123")) == Verdict.suppressed("hard bounce")
    assert listed.asked == ["a@example.com"]  # not the tombstone's name

    class Down:
        def suppression_reason(self, address):
            raise TransientError("read suppression", reason="timeout")

    with pytest.raises(TransientError):  # the pipeline retries the recipient
        Suppression(Down()).check(ask())


def test_unsubscribed_is_log_only_for_refusable_mail_only_read_under_the_journals_name():
    class Preferences:
        def __init__(self, subscribed: bool) -> None:
            self.subscribed, self.reads = subscribed, []

        def get(self, address, category):
            self.reads.append((address, category))
            return Preference(address, category, self.subscribed, "page", NOW, label="Activity")

    off = Preferences(subscribed=False)
    verdict = Unsubscribed(off).check(ask(category="activity", name="erased:0123"))
    assert verdict == Verdict.log_only(
        LogOnlyReason.UNSUBSCRIBED, "unsubscribed from Activity on 2025-06-15 (page)"
    )
    assert off.reads == [("erased:0123", "activity")]
    assert Unsubscribed(off).check(ask(category="activity", priority="critical")) is SEND
    assert Unsubscribed(off).check(ask(category="")) is SEND  # transactional: never asked
    assert len(off.reads) == 1
    assert Unsubscribed(Preferences(subscribed=True)).check(ask(category="activity")) is SEND


def test_send_guard_check_holds_over_the_cap_undoes_its_count_and_passes_a_released_key():
    counters = InMemoryRateCounters()
    guard = Safeguard(counters=counters, global_cap=1, message_cap=0, loop_limit=0)
    policy = SendGuardCheck(guard)
    assert policy.stage is Stage.ADMISSION
    allowed = policy.check(ask(key="k1"))
    assert allowed.kind is Kind.SEND and sum(counters.counts.values()) == 1
    allowed.undo()  # the claim was not ours: the slot is this process's to spend again
    policy.settle(NOW, everything=True)  # a stopping consumer gives back what it holds
    assert sum(counters.counts.values()) == 0
    assert policy.check(ask(key="k2")).kind is Kind.SEND  # the cap's one slot, free again
    held = policy.check(ask(key="k3"))
    assert (held.kind, held.until) == (Kind.HOLD, NOW - NOW % 60 + 60)
    assert sum(counters.counts.values()) == 1  # the row shows the send, never over the cap
    released = RetryState(released=("k4",))
    assert policy.check(ask(key="k4", state=released)) is SEND  # not even counted


# --- the chain ---------------------------------------------------------------------------------


class Answer:
    def __init__(self, verdict: Verdict, stage: Stage = Stage.RECIPIENT) -> None:
        self.verdict, self.stage, self.asked = verdict, stage, 0

    def check(self, ask: Ask) -> Verdict:
        self.asked += 1
        return self.verdict


def test_the_chain_stops_at_the_first_refusal_and_gives_back_what_was_taken():
    undone: list[str] = []
    slow = Limiter()
    first = Answer(Verdict(Kind.SEND, pace=(slow,)))
    counted = Answer(Verdict(Kind.SEND, undo=lambda: undone.append("counted")))
    refusal = Answer(Verdict.hold(NOW + 5, "later"))
    never = Answer(SEND)
    assert ask_each([first, counted, refusal, never], ask()) is refusal.verdict
    assert (never.asked, undone) == (0, ["counted"])
    merged = ask_each([first, counted], ask())
    assert merged.pace == (slow,)
    merged.undo()
    assert undone == ["counted", "counted"]
    assert ask_each([never], ask(), refusal.verdict) is refusal.verdict  # an earlier refusal


def test_the_default_chain_is_in_stage_order_and_leaves_out_what_is_not_given():
    gate, switch = FixedGate(), object()
    chain = send_policies(
        gate=gate,
        send_enabled=False,
        send_switch=switch,
        suppressions=object(),
        preferences=object(),
        send_guard=object(),
    )
    assert [type(p) for p in chain] == [
        ReputationPause,
        ServiceStop,
        EmergencyStop,
        TemplateOff,
        Suppression,
        Unsubscribed,
        SendGuardCheck,
    ]
    stages = [p.stage.value for p in chain]
    assert stages == sorted(stages)  # the list's order is the order asked
    assert [type(p) for p in send_policies()] == [TemplateOff]


# --- the pipeline's shape ----------------------------------------------------------------------


def optional_fields(cls: type) -> list[str]:
    """The dataclass fields whose type admits None, or whose default is None."""
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        if (union and type(None) in typing.get_args(hint)) or f.default is None:
            found.append(f.name)
    return found


def test_the_pipeline_has_no_optional_collaborator():
    assert optional_fields(EmailPipeline) == []


def test_the_check_catches_an_optional_field():
    @dataclasses.dataclass
    class Bag:
        journal: int
        suppressions: int | None = None
        gate: typing.Optional[int] = 0  # noqa: UP045 (the old spelling is caught too)

    assert optional_fields(Bag) == ["suppressions", "gate"]


# --- the chain in the pipeline -----------------------------------------------------------------


def test_the_pipeline_asks_the_send_controls_before_the_suppression_list():
    from tests.core.test_pipeline import Stack, request_body

    class Everyone:
        def suppression_reason(self, address):
            return "hard bounce"

    stack = Stack()
    stack.use(send_enabled=False, suppressions=Everyone())
    body = request_body(datasetName="D")
    stack.process(body)
    row = stack.row(body, "alice@example.com")
    assert (row["Status"], row["LoggedOnlyReason"]) == ("SENT", "service-stop")
    stack.use(send_enabled=True)
    other = request_body(datasetName="E")
    stack.process(other)
    assert stack.row(other, "alice@example.com")["Status"] == "SUPPRESSED"
    assert stack.sender.sent == []


def test_a_pause_does_not_hold_back_the_mark_of_a_send_ses_already_accepted():
    from tests.core.test_pipeline import Stack, request_body

    stack, gate = Stack(), FixedGate()
    stack.use(gate=gate)
    body = request_body(datasetName="D")
    stack.journal.fail_next["mark_sent"] = [TransientError("mark", reason="down")] * 5
    first = stack.process(body)  # SES accepted; the SENT mark could not be stored
    assert first.state.accepted
    gate.decisions["normal"] = (GateDecision.PAUSE, "bounce 6 %")
    stack.clock.now += 10_000
    again = stack.process(body, state=first.state)
    assert (again.action, again.sent) == (Action.DELETE, 1)  # marked, not paused
    assert len(stack.sender.sent) == 1
    paused = stack.process(request_body(datasetName="E"))
    assert paused.action is Action.WAIT and "paused: bounce 6 %" in paused.reason
