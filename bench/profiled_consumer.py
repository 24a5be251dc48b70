"""``manage.py <command> ...`` with every thread under cProfile (its own CPU time: waits are not in it), for a benchmark's profile of a
consumer at steady state (cProfile alone sees only the main thread; a consumer's work is in its
worker threads). Each thread's profile is written at exit to ``<out>.<n>``; merge them with
``pstats.Stats(*paths)``.

    python bench/profiled_consumer.py <out> consume_emails [flags...]
"""

from __future__ import annotations

import atexit
import cProfile
import runpy
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def first_call(frame, event, arg) -> None:  # a new thread's first event: its own profiler
        profile = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profile)
        sys.setprofile(None)
        profile.enable()

    def dump() -> None:
        with lock:
            taken = list(profiles)
        for n, profile in enumerate(taken):
            try:
                profile.dump_stats(f"{out}.{n}")
            except Exception as exc:  # a thread still running: its profile is left out
                print(f"profile {n} not written: {exc}", file=sys.stderr)

    threading.setprofile(first_call)
    main_profile = cProfile.Profile(time.thread_time)
    profiles.append(main_profile)
    atexit.register(dump)
    sys.argv = [str(ROOT / "manage.py"), *args]
    sys.path.insert(0, str(ROOT))
    main_profile.enable()
    runpy.run_path(str(ROOT / "manage.py"), run_name="__main__")


if __name__ == "__main__":
    main()
