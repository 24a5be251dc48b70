"""Journal search cost: AWS calls and server time per page, over 10k rows for one recipient.

    .venv/bin/python bench/journal_search.py [--rows 10000] [--repeat 5]

Loads the rows into moto in-process (BatchWriteItem), then times the console's search selector and
the whole search page (view + template) for each scenario, counting DynamoDB calls with a botocore
``before-call`` hook. Times are moto's, in this process: compare them with each other, not with AWS.
Goals: one Query for an unfiltered page; a bounded number (at most the page budget) with filters.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

import moto_env  # noqa: F401  (sets up Django and moto credentials first)
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from moto import mock_aws

from emailops import container
from emailops.aws import provision
from templates_admin.journal import selectors
from templates_admin.journal.views import search
from tests.journal_factory import BASE_TIME, journal_row, put_rows

RECIPIENT = "heavy.user@example.com"
MESSAGE_IDS = [f"message-{n}" for n in range(10)]  # each one in 10 rows


def load(rows: int) -> float:
    client = container.current().client("dynamodb")
    provision.ensure_journal_table(client, settings.JOURNAL_TABLE, lambda _: None)
    started = time.perf_counter()
    put_rows(
        client,
        settings.JOURNAL_TABLE,
        [
            journal_row(
                RECIPIENT,
                at=BASE_TIME + i * 60,
                message_id="rare-message" if i % 1000 == 0 else MESSAGE_IDS[i % 10],
                status="FAILED" if i % 20 == 7 else "SENT",
            )
            for i in range(rows)
        ],
    )
    return time.perf_counter() - started


class CallCounter:
    """Counts DynamoDB calls by operation, through a botocore event hook on the shared client."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.in_aws = 0.0
        self._started = 0.0
        events = container.current().journal_search.client.meta.events
        events.register("before-call.dynamodb", self.before)
        events.register("after-call.dynamodb", self.after)

    def before(self, model, **kwargs) -> None:
        self.calls[model.name] += 1
        self._started = time.perf_counter()

    def after(self, **kwargs) -> None:
        self.in_aws += time.perf_counter() - self._started

    def measure(
        self, action: Callable[[], object], repeat: int
    ) -> tuple[Counter[str], float, float]:
        """Calls made by one run; median wall time and median time outside AWS calls (ms)."""
        wall, own = [], []
        for _ in range(repeat):
            self.calls.clear()
            self.in_aws = 0.0
            started = time.perf_counter()
            action()
            elapsed = time.perf_counter() - started
            wall.append(elapsed * 1000)
            own.append((elapsed - self.in_aws) * 1000)
        return Counter(self.calls), statistics.median(wall), statistics.median(own)


def page_view(params: dict[str, str]) -> Callable[[], object]:
    user = get_user_model()(username="bench", is_staff=True, is_superuser=True, is_active=True)
    factory = RequestFactory()

    def render() -> object:
        request = factory.get("/admin/templates_admin/emailjournalpage/", params)
        request.user = user
        request.container = container.current()  # as ContainerMiddleware sets it
        response = search(request, admin.site)
        response.render()
        assert response.status_code == 200, response.status_code
        return response

    return render


def scenarios() -> list[tuple[str, dict]]:
    since = BASE_TIME + 3000 * 60
    day = {
        "since": datetime.fromtimestamp(since, UTC),
        "until": datetime.fromtimestamp(since + 86400, UTC),
    }
    return [
        ("unfiltered, first page", {}),
        ("unfiltered, page 2", {"_page": 2}),
        ("unfiltered, oldest first", {"oldest_first": True}),
        ("  same, JOURNAL_GO_CUTOVER set", {"oldest_first": True, "_cutover": "2026-05-01"}),
        ("messageId (1 in 10)", {"message_id": MESSAGE_IDS[3]}),
        ("messageId (1 in 10), page 2", {"message_id": MESSAGE_IDS[3], "_page": 2}),
        ("status FAILED (1 in 20)", {"status": "FAILED"}),
        ("messageId (1 in 1000)", {"message_id": "rare-message"}),
        ("date range: one day", day),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with mock_aws():
        settings.JOURNAL_TABLE = "bench-journal"
        settings.AWS_REGION = "us-east-1"
        container.reset()
        seconds = load(args.rows)
        print(f"loaded {args.rows} rows for {RECIPIENT} in {seconds:.1f} s (BatchWriteItem)")
        header = (
            f"{'scenario':<30} {'rows':>5} {'Query':>6} {'other':>6} {'read':>6} "
            f"{'partial':>8} {'selector ms':>12} {'page ms':>8} {'page ms w/o AWS':>16}"
        )
        print(header)
        print("-" * len(header))
        for title, kwargs in scenarios():
            settings.JOURNAL_GO_CUTOVER = kwargs.pop("_cutover", "")
            container.reset()
            counter = CallCounter()
            page_number = kwargs.pop("_page", 1)
            cursor = None
            for _ in range(page_number - 1):
                cursor = selectors.journal_search(
                    adapters=container.current(), query=RECIPIENT, cursor=cursor, **kwargs
                ).next_cursor
            result = selectors.journal_search(
                adapters=container.current(), query=RECIPIENT, cursor=cursor, **kwargs
            )
            calls, selector_ms, _ = counter.measure(
                lambda kw=kwargs, c=cursor: selectors.journal_search(
                    adapters=container.current(), query=RECIPIENT, cursor=c, **kw
                ),
                args.repeat,
            )
            view_params = {"q": RECIPIENT} | {
                k: v for k, v in kwargs.items() if k in ("message_id", "status")
            }
            if cursor:
                view_params["cursor"] = cursor
            page_ms = own_ms = "-"
            if "since" not in kwargs and not kwargs.get("oldest_first"):
                _, ms, own = counter.measure(page_view(view_params), args.repeat)
                page_ms, own_ms = f"{ms:.0f}", f"{own:.0f}"
            scanned = sum(run.scanned for run in result.runs)
            other = sum(n for op, n in calls.items() if op != "Query")
            print(
                f"{title:<30} {len(result.rows):>5} {calls['Query']:>6} {other:>6} {scanned:>6} "
                f"{'yes' if result.partial else 'no':>8} {selector_ms:>12.0f} {page_ms:>8} "
                f"{own_ms:>16}"
            )
        print(
            f"(read = items DynamoDB evaluated for the page; a page stops after "
            f"{container.current().journal_search.max_calls} Queries or "
            f"{container.current().journal_search.max_scanned} items read. ms: median wall time, in-process "
            "moto; 'w/o AWS' leaves out the time inside DynamoDB calls: our code and the template)"
        )


if __name__ == "__main__":
    main()
