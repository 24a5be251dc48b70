"""Consumer start-up: from exec of ``manage.py consume_emails`` (and ``consume_ses_events``) to its
first ``ReceiveMessage``, as the fault proxy sees it, and the import time of each command.

    .venv/bin/python bench/startup.py [--runs 3]

Target: under 2 s. The median of ``--runs`` starts is printed (the machine is shared: figures are
noisy). The import line is ``python -X importtime``'s total for the command's module chain,
measured by importing Django's setup and the command in a fresh interpreter.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.aws_proxy import AwsProxy
from tests.support.stack import MotoServer, Stack

COMMANDS = {
    "consume_emails": "worker.management.commands.consume_emails",
    "consume_ses_events": "worker.management.commands.consume_ses_events",
}


def first_receive(stack: Stack, proxy: AwsProxy, command: str, name: str) -> float:
    process = stack.start_consumer(name, ["--until-empty", "--wait-time", "1"], command=command)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        calls = [
            c
            for c in proxy.records()
            if c.client == name and c.service == "sqs" and c.operation == "ReceiveMessage"
        ]
        if calls:
            process.wait(timeout=60)
            # When the request reached the proxy: ``at`` is when moto answered, a long poll later.
            return min(c.arrived for c in calls) - process.started
        if not process.alive():
            raise SystemExit(f"{command} exited early:\n{process.output()[-3000:]}")
        time.sleep(0.01)
    raise SystemExit(f"{command}: no ReceiveMessage within 60 s")


def import_seconds(module: str) -> float:
    """Django's setup plus the command's module, in a fresh interpreter."""
    command = module.rsplit(".", 1)[1]
    code = (
        f"import sys, time; sys.argv = ['manage.py', '{command}']; t = time.perf_counter(); "
        f"import django; django.setup(); import {module}; import emailops.container; "
        "print(time.perf_counter() - t)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "emailops.settings", "DJANGO_DEBUG": "true"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    moto = MotoServer()
    proxy = AwsProxy(moto.url).start()
    stack = None
    results: dict[str, list[float]] = {c: [] for c in COMMANDS}
    try:
        stack = Stack(
            moto, endpoint=proxy.url, queue="bench-startup", events_queue="bench-startup-events"
        )
        for run in range(args.runs):
            for command in COMMANDS:
                results[command].append(first_receive(stack, proxy, command, f"s{run}{command}"))
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    print(f"start-up: exec -> first ReceiveMessage, median of {args.runs} (target < 2 s)")
    for command, module in COMMANDS.items():
        print(
            f"  {command:22}{statistics.median(results[command]):6.2f} s"
            f"   (imports: {import_seconds(module):.2f} s)"
        )


if __name__ == "__main__":
    main()
