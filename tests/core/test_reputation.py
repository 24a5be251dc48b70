"""Rates from hourly counts: SES's definitions, the minimum volume, the warn and act lines."""

from __future__ import annotations

import pytest

from emailops.core.reputation import (
    HourCounts,
    Thresholds,
    event_counter,
    hour_of,
    hour_range,
    rates_over,
)

WARN, ACT = Thresholds(0.02, 0.0005), Thresholds(0.04, 0.0008)


def rates(**counts):
    hours = [HourCounts("account", "2026-12-01T10", counts)]
    return rates_over(hours, min_volume=200, warn=WARN, act=ACT)


def test_bounce_rate_is_hard_bounces_over_delivered_or_bounced_and_complaints_over_delivered():
    got = rates(sent=1000, delivered=970, bounced_permanent=20, bounced_transient=10, complained=1)
    assert got.bounce_rate == 0.02 and got.complaint_rate == round(1 / 970, 6)
    assert (got.sent, got.delivered, got.bounced, got.complained) == (1000, 970, 20, 1)


@pytest.mark.parametrize(
    ("counts", "state"),
    [
        ({"delivered": 150, "bounced_permanent": 40}, "low_volume"),  # 21 % of too few
        ({"delivered": 990, "bounced_permanent": 10}, "ok"),
        ({"delivered": 980, "bounced_permanent": 20}, "warn"),
        ({"delivered": 960, "bounced_permanent": 40}, "act"),
        ({"delivered": 2000, "complained": 1}, "warn"),  # 0.05 %
        ({"delivered": 2000, "complained": 2}, "act"),  # 0.1 %
    ],
)
def test_states(counts, state):
    assert rates(**counts).state == state


def test_hours_add_up_and_the_window_is_inclusive():
    hours = [
        HourCounts("account", "2026-12-01T10", {"delivered": 100}),
        HourCounts("account", "2026-12-01T11", {"delivered": 100, "bounced_permanent": 10}),
    ]
    assert rates_over(hours, min_volume=200, warn=WARN, act=ACT).state == "act"
    assert hour_of(1_796_119_200) == "2026-12-01T10"
    assert hour_range(1_796_119_200 + 59 * 60, 24) == ("2026-11-30T11", "2026-12-01T10")


def test_event_counters():
    assert event_counter("Bounce", "Permanent") == "bounced_permanent"
    assert event_counter("Bounce", "Transient") == "bounced_transient"
    assert event_counter("Bounce", "Undetermined") == "bounced_transient"
    assert [event_counter(t) for t in ("Delivery", "Complaint", "Reject", "DeliveryDelay")] == [
        "delivered",
        "complained",
        "rejected",
        "delayed",
    ]
    assert event_counter("Open") is None and event_counter("Send") is None
