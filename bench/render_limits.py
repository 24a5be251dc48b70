"""Bounded rendering: CPU time and RSS growth of every hostile probe under the default limits.

    .venv/bin/python bench/render_limits.py

Target (issue 8): each probe fails within 1 s of CPU time and 50 MB. The tests check that each
probe is stopped by its own limit and within 50 MB; CPU time depends on the machine and its load,
so it is a figure here. ``deadline`` in the last column means the 1 s deadline stopped a probe
before its own limit did: on this machine its count is too generous.
"""

from __future__ import annotations

import moto_env  # noqa: F401  (the project on sys.path)

from tests.core.test_render_limits import PROBES, SLOW_PROBES, measure


def main() -> None:
    print(f"{'probe':36} {'CPU s':>7} {'RSS MB':>7}  stopped by")
    worst = 0.0
    for probes, seconds in ((PROBES, 0.0), (SLOW_PROBES, 0.5)):
        for r in measure(probes, seconds=seconds):
            expected = probes[r["name"]][1]
            by = "its limit" if expected in (r["error"] or "") else f"deadline: {r['error']!r}"
            worst = max(worst, r["cpu"])
            print(f"{r['name']:36} {r['cpu']:7.3f} {r['rss_mb']:7.1f}  {by}")
    print(f"slowest probe: {worst:.3f} s of CPU (target < 1 s)")


if __name__ == "__main__":
    main()
