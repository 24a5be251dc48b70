"""python manage.py reputation — bounce and complaint rates, and the guard's pauses.

    reputation [--json] [--window-hours N]                 counts, rates and states; pauses
    reputation pause PRIORITY [--organization N] --reason R     hold bulk (or normal) mail
    reputation resume PRIORITY [--organization N] --reason R    let it go again
    reputation evaluate              run the guard's periodic evaluation now (as Celery beat does)

Figures come from the hourly counters (STATS_TABLE), never from the journal. Pauses set or lifted
here are audited like the console's (ReputationPauseChange, by the operating-system user).
"""

from __future__ import annotations

import getpass
import json

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from emailops import container
from emailops.container import Container
from emailops.core.errors import EmailOpsError
from templates_admin.management.actions import HumanCommand
from templates_admin.reputation import guard, selectors, services


def _percent(rate: float) -> str:
    return f"{rate * 100:.2f} %"


class Command(HumanCommand):
    help = "Show bounce and complaint rates and the reputation guard's pauses, or set/lift one."

    # The system checks import the URLconf (the console, the API): 0.4 s of every run of an
    # operator's command. `manage.py check` (CI, the deploy) runs them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="one JSON object, snake_case keys")
        parser.add_argument(
            "--window-hours", type=int, default=None, help="default REPUTATION_WINDOW_HOURS"
        )
        sub = parser.add_subparsers(dest="action")
        for name, what in (("pause", "hold mail of a priority"), ("resume", "lift a pause")):
            action = sub.add_parser(name, help=what)
            action.add_argument("priority", choices=["bulk", "normal"])
            action.add_argument("--organization", default=None, help="one organization's mail")
            action.add_argument("--reason", required=True, help="why (audited)")
        sub.add_parser("evaluate", help="judge the rates now; set or lift automatic pauses")

    def handle(self, *args, action: str | None = None, **options):
        adapters = container.current()
        try:
            if action in ("pause", "resume"):
                return self._change(action, options, adapters)
            if action == "evaluate":
                reading = guard.reputation_evaluate(adapters=adapters)
                for warning in reading["warnings"]:
                    self.stdout.write(f"warn: {warning}")
                acting = ", ".join(reading["acting"]) or "nothing"
                self.stdout.write(f"acting on: {acting}")
                return None
            return self._show(options["json"], options["window_hours"], adapters)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except EmailOpsError as exc:
            raise CommandError(exc.describe()) from exc

    def _change(self, action: str, options: dict, adapters: Container) -> None:
        change = services.pause_set if action == "pause" else services.pause_lift
        change(
            reputation_state=adapters.reputation_state,
            priority=options["priority"],
            organization=options["organization"],
            reason=options["reason"],
            user=None,
            actor=f"cli:{getpass.getuser()}",
        )
        where = f"organization {options['organization']}" if options["organization"] else "account"
        done = "paused" if action == "pause" else "resumed"
        self.stdout.write(f"{options['priority']} mail {done} ({where})")

    def _show(self, as_json: bool, window_hours: int | None, adapters: Container) -> None:
        summary = selectors.reputation_summary(adapters=adapters, window_hours=window_hours)
        if as_json:
            self.stdout.write(json.dumps(summary, indent=2, sort_keys=True))
            return
        self.stdout.write(
            f"Last {summary['window_hours']} h (judged from {summary['min_volume']} "
            "delivered-or-bounced sends):"
        )
        rows = [("account", summary["account"])]
        rows += [(f"messageId {k}", v) for k, v in summary["message_ids"].items()]
        rows += [(f"organization {k}", v) for k, v in summary["organizations"].items()]
        for name, f in rows:
            self.stdout.write(
                f"  {name:<40} sent {f['sent']:>7}  delivered {f['delivered']:>7}  "
                f"bounced {f['bounced']:>5} ({_percent(f['bounce_rate'])})  "
                f"complained {f['complained']:>4} ({_percent(f['complaint_rate'])})  {f['state']}"
            )
        for label, entries in (("paused", summary["paused"]), ("slowed", summary["slowed"])):
            for e in entries:
                where = f"organization {e['organization']}" if e["organization"] else "account"
                self.stdout.write(
                    f"{label}: {e['priority']} ({where}) since {e['since']}: {e['reason']}"
                )
        if not summary["paused"] and not summary["slowed"]:
            self.stdout.write("no pauses")
