"""Sends reserved in blocks on the shared counter row (emailops.core.rate_allowance): a tenth of
the cap a call, never over the cap, spent with no call, the unspent given back when the window
ends (or all of it as the process stops), a full row not asked again that window."""

from __future__ import annotations

from emailops.core.rate_allowance import RateAllowance
from tests.fakes import InMemoryRateCounters

END = 1_750_000_040  # the window's end


class Counting(InMemoryRateCounters):
    def __init__(self) -> None:
        super().__init__()
        self.reserves = 0

    def reserve(self, bucket: str, n: int, *, cap: int, expires_at: int) -> int:
        self.reserves += 1
        return super().reserve(bucket, n, cap=cap, expires_at=expires_at)


def take(allowance: RateAllowance, cap: int, now: float = END - 30) -> bool:
    return allowance.take("msg#m#1", cap=cap, now=now, window_end=END, expires_at=END + 60)


def test_a_block_is_a_tenth_of_the_cap_spent_with_no_call_and_never_over_the_cap():
    counters = Counting()
    a, b = RateAllowance(counters=counters), RateAllowance(counters=counters)
    taken = [take(a, 25) for _ in range(7)] + [take(b, 25) for _ in range(30)]
    # a reserved 8 in blocks of 2 and spent 7: the one it holds is not b's to spend.
    assert taken.count(True) == 24 and counters.counts["msg#m#1"] == 25
    assert counters.reserves == 4 + 9 + 1  # a's blocks, b's blocks, then b's refusal
    assert not take(b, 25) and counters.reserves == 14  # full: not asked again this window
    a.settle(END - 30, everything=True)
    assert counters.counts["msg#m#1"] == 24


def test_the_unspent_goes_back_when_the_window_ends_or_as_the_process_stops():
    counters = Counting()
    allowance = RateAllowance(counters=counters)
    assert take(allowance, 300)  # a block of 30, one spent
    allowance.settle(END - 1)  # the window is not over: kept
    assert counters.counts["msg#m#1"] == 30
    allowance.settle(END)
    assert counters.counts["msg#m#1"] == 1  # the row shows the one send
    assert take(allowance, 300, now=END - 20)  # a new block (a later window's, say)
    allowance.give_back("msg#m#1")  # the claim was not ours
    allowance.settle(END - 10, everything=True)
    assert counters.counts["msg#m#1"] == 1


def test_a_small_cap_is_taken_a_send_at_a_time_and_the_most_bounds_a_block():
    assert RateAllowance(counters=Counting()).block(9) == 1
    assert RateAllowance(counters=Counting()).block(100_000) == 64
    assert RateAllowance(counters=Counting(), most=1).block(300) == 1
