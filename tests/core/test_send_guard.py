"""The send guard's rules over in-memory counters: Go's rate counters (global first, caps, 0 off),
hold or log-only over a cap, the hold budget, a counter error holds, and the loop detector."""

from __future__ import annotations

from emailops.core.log_only import LogOnlyReason
from emailops.core.send_guard import (
    OverCap,
    Safeguard,
    Verdict,
    global_bucket,
    loop_bucket,
    message_bucket,
)
from tests.fakes import InMemoryRateCounters

NOW = 1_750_000_020  # 20 s into a window
WINDOW = NOW - NOW % 60


def guard(**kw) -> tuple[Safeguard, InMemoryRateCounters, list[str]]:
    counters, alerts = InMemoryRateCounters(), []
    kw.setdefault("loop_limit", 0)
    return Safeguard(counters=counters, alert=alerts.append, **kw), counters, alerts


def check(g: Safeguard, n: int, *, message_id="m", now=NOW, recipient="a@example.com"):
    return g.check(message_id=message_id, recipient=recipient, key=f"key-{n}", now=now)


def test_the_global_cap_holds_until_the_window_ends_and_does_not_count_the_message():
    g, counters, _ = guard(global_cap=2, message_cap=10)
    verdicts = [check(g, n).verdict for n in range(3)]
    assert verdicts == [Verdict.ALLOW, Verdict.ALLOW, Verdict.HOLD]
    assert check(g, 3).until == WINDOW + 60
    # A denial is not counted (Go's ADD 1 counts it): the row stays at the cap.
    assert counters.counts[global_bucket(WINDOW)] == 2
    assert counters.counts[message_bucket("m", WINDOW)] == 2  # denied globally: not counted


def test_the_message_cap_and_zero_disables():
    g, counters, _ = guard(global_cap=0, message_cap=1)
    assert [check(g, n).verdict for n in range(2)] == [Verdict.ALLOW, Verdict.HOLD]
    assert global_bucket(WINDOW) not in counters.counts
    assert check(g, 9, message_id="other").verdict is Verdict.ALLOW


def test_log_only_mode_is_gos_behaviour():
    g, _, _ = guard(global_cap=1, over_cap=OverCap.LOG_ONLY)
    check(g, 0)
    over = check(g, 1)
    assert (over.verdict, over.reason) == (Verdict.LOG_ONLY, LogOnlyReason.RATE_SAFEGUARD)


def test_a_request_held_past_the_budget_is_log_only():
    g, counters, _ = guard(global_cap=1, hold_max_seconds=600)
    check(g, 0)
    assert check(g, 1).verdict is Verdict.HOLD
    for minute in range(1, 10):  # every later window is full too
        check(g, 100 + minute, now=NOW + 60 * minute)
        assert check(g, 1, now=NOW + 60 * minute).verdict is Verdict.HOLD
    check(g, 110, now=NOW + 600)
    spent = check(g, 1, now=NOW + 600)
    assert (spent.verdict, spent.reason) == (Verdict.LOG_ONLY, LogOnlyReason.RATE_SAFEGUARD)
    assert not counters.holds  # forgotten


def test_a_counter_error_holds_never_allows(caplog):
    g, counters, _ = guard(global_cap=5)
    counters.down = True
    verdict = check(g, 0)
    assert verdict.verdict is Verdict.HOLD and verdict.until == WINDOW + 60
    assert "rate limit check failed" in caplog.text


def test_the_loop_detector_counts_distinct_requests_and_alerts_once():
    g, counters, alerts = guard(global_cap=0, message_cap=0, loop_limit=5)
    verdicts = [check(g, n).verdict for n in range(8)]
    assert verdicts == [Verdict.ALLOW] * 5 + [Verdict.LOG_ONLY] * 3
    assert check(g, 2).verdict is Verdict.ALLOW  # a copy already counted comes back: not new
    assert check(g, 9).reason is LogOnlyReason.LOOP
    assert len(alerts) == 1 and "messageId m" in alerts[0]
    [bucket] = counters.copies
    assert bucket == loop_bucket("m", "A@Example.com", NOW - NOW % 3600)
    assert "a@example.com" not in bucket


def test_the_loop_detector_is_per_recipient_and_per_hour():
    g, _, alerts = guard(global_cap=0, message_cap=0, loop_limit=1)
    assert check(g, 0).verdict is Verdict.ALLOW
    assert check(g, 1, recipient="b@example.com").verdict is Verdict.ALLOW
    assert check(g, 2).verdict is Verdict.LOG_ONLY
    assert check(g, 3, now=NOW + 3600).verdict is Verdict.ALLOW
    assert len(alerts) == 1


def test_a_loop_copy_is_not_counted_against_the_rate():
    g, counters, _ = guard(global_cap=10, loop_limit=1)
    check(g, 0)
    check(g, 1)
    assert counters.counts[global_bucket(WINDOW)] == 1


def test_a_hold_records_its_recipient_hashed_and_masked():
    from emailops.core.send_guard import HeldRecipient, hold_bucket, recipient_digest

    g, counters, _ = guard(global_cap=1, message_cap=10)
    check(g, 0)
    assert check(g, 1, recipient="Kim@Example.com").verdict is Verdict.HOLD
    recorded = counters.held_for[hold_bucket("key-1")]
    assert recorded == HeldRecipient(recipient_digest("kim@example.com"), "k***@example.com")
