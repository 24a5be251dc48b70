"""python manage.py devstack — the whole product on this machine, on embedded defaults.

Starts moto's server on loopback (AWS for everything: DynamoDB, S3, SQS, SES), bootstraps it, loads
the sample templates and mappings, migrates the console's database, creates a dev admin, then runs
the console, the consumer, the SES events consumer, a Celery worker (the console's jobs), a webhook
worker (the webhook queue's deliveries) and Celery beat (the periodic checks) until Ctrl-C, which
stops them all. The workers read Redis queues named after the console port, so two stacks on one
machine do not take each other's jobs. Sends to SES's simulator addresses
(bounce@simulator.amazonses.com...) yield the events SES would, and every capability is on: webhook
events are emitted (WEBHOOK_OUTBOX's default) and categorised mail carries unsubscribe links to
this console (PUBLIC_BASE_URL).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

SAMPLES = Path(settings.BASE_DIR) / "emailops" / "data" / "samples"
# The example send's context: every variable added-to-team's template reads (the manifest's
# list), so it renders without render.missing_variables and its links have a host.
TRY_CONTEXT = {
    "teamName": "Imaging",
    "administrator": "Dave",
    "host": "app.pennsieve.io",
    "organizationNodeId": "N:organization:c0ffee00-1234-4abc-9def-000000000001",
}


def local_aws_environment(endpoint: str) -> dict[str, str]:
    """Variables that point every process at the local moto server (real settings still win)."""
    defaults = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TEMPLATES_TABLE": "email-message-templates",
        "JOURNAL_TABLE": "email-journal",
        "S3_BUCKET": "emailops-templates",
        "EMAIL_SENDER": "Pennsieve <support@pennsieve.local>",
        "EMAIL_REPLY_TO": "support@pennsieve.local",
        "EMAIL_SERVICE_QUEUE_URL": f"{endpoint}/123456789012/email-service-queue",
        "SES_EVENTS_QUEUE_URL": f"{endpoint}/123456789012/email-ses-events",
        # moto publishes no SES events: play SES's mailbox simulator (bounce@, complaint@...).
        "SES_SIMULATE_EVENTS": "true",
        "SES_EVENTS_VERIFY_SIGNATURES": "false",
        "DJANGO_DEBUG": "true",
        # moto's GetSendQuota answers with SES's sandbox rate (1/s): too slow for a dev stack.
        "SES_MAX_SEND_RATE": "50",
    }
    env = {**defaults, **{k: v for k, v in os.environ.items() if k in defaults}}
    env["AWS_ENDPOINT_URL"] = endpoint  # never real AWS from the dev stack
    return env


def stack_environment(endpoint: str, port: int) -> dict[str, str]:
    """Every variable the stack's processes get: local_aws_environment's, and this stack's own
    Celery queues and unsubscribe links. A non-empty one in the shell wins (a .env copied from
    .env.example sets PUBLIC_BASE_URL to empty: that is production's "none", not the stack's)."""
    own = {
        "CELERY_TASK_DEFAULT_QUEUE": f"emailops-devstack-{port}",
        "WEBHOOK_QUEUE": f"emailops-devstack-{port}-webhooks",
        "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",  # the console serves /u/<token>
    }
    return {
        **local_aws_environment(endpoint),
        **{name: os.environ.get(name) or value for name, value in own.items()},
    }


def stack_processes(
    manage: list[str], port: int, env: Mapping[str, str], schedule: Path
) -> list[tuple[str, list[str], bool]]:
    """(name, command, whether its output goes to the Celery log) of each long-running process,
    in start order. ``env`` is the stack's environment (its queues); ``schedule`` beat's state."""
    celery = [sys.executable, "-m", "celery", "-A", "emailops"]
    return [
        ("console", [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], False),
        # -v 0: no "signal 15: …" or totals line at Ctrl-C, which ends with devstack's one line
        ("consumer", [*manage, "consume_emails", "--wait-time", "5", "-v", "0"], False),
        ("events consumer", [*manage, "consume_ses_events", "--wait-time", "5", "-v", "0"], False),
        ("celery worker", [*celery, "worker", "--loglevel", "INFO", "--concurrency", "2"], True),
        # Its own worker, as in production: a slow receiver never holds the console's jobs.
        (
            "webhook worker",
            [
                *(*celery, "worker", "-Q", env["WEBHOOK_QUEUE"]),
                *("--hostname", f"webhooks-{port}@%h", "--loglevel", "INFO", "--concurrency", "2"),
            ],
            True,
        ),
        ("celery beat", [*celery, "beat", "--loglevel", "INFO", "--schedule", str(schedule)], True),
    ]


def shell_path(path: Path, cwd: Path) -> str:
    """A path as short as it can be and still work when pasted in a shell opened in ``cwd``."""
    try:
        relative = path.relative_to(cwd)
    except ValueError:
        return shlex.quote(str(path))
    # "./" so that `source` reads this file instead of searching PATH for it
    return shlex.quote(f"./{relative}" if len(relative.parts) == 1 else str(relative))


def write_env_file(path: Path, endpoint: str, port: int) -> None:
    """The stack's variables as a file to `source` (DJANGO_DEBUG included: the dev key works)."""
    path.write_text(
        "".join(
            f"export {k}={shlex.quote(v)}\n" for k, v in stack_environment(endpoint, port).items()
        )
    )


def try_it(env_file: Path, cwd: Path) -> str:
    """Lines a new user pastes into another shell as they are: this interpreter by its path (the
    project's .venv, so no activation needed) and the stack's variables from ``env_file``."""
    python = shell_path(Path(sys.executable), cwd)
    manage = shell_path(Path(settings.BASE_DIR) / "manage.py", cwd)
    return (
        f"    cd {shlex.quote(str(cwd))}\n"
        f"    source {shell_path(env_file, cwd)}\n"
        f"    {python} {manage} enqueue_email --message-id added-to-team --to you@example.com "
        f"--context {shlex.quote(json.dumps(TRY_CONTEXT))}\n"
    )


def celery_log(env_file: Path) -> Path:
    """Where the Celery worker's and beat's output goes: beside the env file, gitignored."""
    return env_file.with_name(".devstack-celery.log")


def wait_until_serving(
    url: str, processes: dict[str, subprocess.Popen], timeout: float = 60
) -> bool:
    """Poll ``url`` until it answers (any HTTP status), a child exits, or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes.values()):
            return False
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answered
        except OSError:
            time.sleep(0.3)
    return False


def create_admin_args(password: str) -> list[str]:
    """``manage.py create_console_user`` for the dev admin. ``--password=…`` in one word: a random
    password may start with "-", which argparse would take for an option (1 start in 64 failed)."""
    return [
        "create_console_user",
        "admin",
        "--superuser",
        "--email",
        "admin@example.com",  # a deliverable-looking address: .local recipients are refused
        f"--password={password}",
        "--reset-password",  # each start prints the password it set: an existing admin's too
    ]


def stop_all(processes: dict[str, subprocess.Popen], timeout: float = 30) -> list[str]:
    """SIGTERM to every child still running, one wait for them all (each drains in parallel),
    SIGKILL for any still there at the deadline; returns the names, in start order."""
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in processes.values():
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return list(processes)


class Command(BaseCommand):
    help = "Run console + consumer on a local moto server with sample templates (Ctrl-C stops all)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000, help="console port (default 8000)")
        parser.add_argument("--moto-port", type=int, default=5055, help="moto port (default 5055)")
        parser.add_argument(
            "--admin-password",
            default=os.environ.get("DEVSTACK_ADMIN_PASSWORD", ""),
            help="password for the dev admin (default: a random one, printed)",
        )
        parser.add_argument(
            "--env-file",
            type=Path,
            default=Path(settings.BASE_DIR) / ".devstack.env",
            help="where to write the stack's variables for other shells (default .devstack.env)",
        )

    def handle(self, *args, port, moto_port, admin_password, env_file, **options):
        try:
            from moto.server import ThreadedMotoServer  # the `local` extra, not in production
        except ModuleNotFoundError as exc:
            raise CommandError("moto is not installed: pip install -e '.[local]'") from exc

        # Ctrl-C and SIGTERM stop the stack: children first, then moto. SIGINT is set explicitly
        # because a shell that starts us in the background hands it down ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request access log
        endpoint = f"http://127.0.0.1:{moto_port}"
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
        moto.start()
        env = {**os.environ, **stack_environment(endpoint, port)}
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        password = admin_password or secrets.token_urlsafe(9)

        def step(*command: str) -> None:
            # Its own process group: Ctrl-C reaches only us, and subprocess.run kills the step.
            result = subprocess.run([*manage, *command], env=env, check=False, process_group=0)
            if result.returncode:
                raise CommandError(f"`manage.py {' '.join(command)}` failed ({result.returncode})")

        processes: dict[str, subprocess.Popen] = {}

        # Celery's banners and task lines go here, not over the console block below.
        celery_log_path = celery_log(env_file)
        celery_log_file = celery_log_path.open("a", encoding="utf-8")

        def start(name: str, command: list[str], *, log=None) -> None:
            # Its own process group too: the terminal's Ctrl-C would otherwise reach every child
            # at once, and our SIGTERM after it would be a second signal ("stopping now", a
            # KeyboardInterrupt traceback). Each child gets exactly one SIGTERM, from us.
            processes[name] = subprocess.Popen(
                command,
                env=env,
                cwd=settings.BASE_DIR,
                process_group=0,
                stdout=log,
                stderr=subprocess.STDOUT if log else None,
            )

        try:
            step("migrate", "--noinput", "-v", "0")
            step("bootstrap_aws")
            step("load_templates", str(SAMPLES / "templates"))
            step("load_template_mappings", str(SAMPLES / "mappings.json"))
            step(*create_admin_args(password))
            # beat's schedule state in a temporary directory: nothing to clean up in the checkout
            schedule = Path(tempfile.mkdtemp(prefix="emailops-beat-")) / "schedule"
            for name, command, to_celery_log in stack_processes(manage, port, env, schedule):
                start(name, command, log=celery_log_file if to_celery_log else None)
            write_env_file(env_file, endpoint, port)
            # The block below is the last thing on the screen: printed once the console answers.
            wait_until_serving(f"http://127.0.0.1:{port}/admin/login/", processes)
            self.stdout.write(
                self.style.SUCCESS(
                    f"\nemailops is running (Ctrl-C stops everything).\n"
                    f"  console:  http://127.0.0.1:{port}/admin/  (user admin, password {password})\n"
                    f"  AWS:      moto at {endpoint}\n"
                    f"  Celery:   worker and beat on {settings.CELERY_BROKER_URL}, queue "
                    f"{env['CELERY_TASK_DEFAULT_QUEUE']}; webhook worker on "
                    f"{env['WEBHOOK_QUEUE']} (log: {shell_path(celery_log_path, Path.cwd())})\n"
                    "  other roles: manage.py create_console_user NAME --group Support (or "
                    '"Support leads", "Template owners"), after the source line below; see README\n'
                    f"  try, in another shell:\n{try_it(env_file, Path.cwd())}"
                )
            )
            self.stdout.flush()
            while not (exited := [n for n, p in processes.items() if p.poll() is not None]):
                time.sleep(0.5)
            codes = ", ".join(f"{n} (exit code {processes[n].returncode})" for n in exited)
            raise CommandError(f"{codes} exited; stopped the rest")
        except KeyboardInterrupt:
            pass  # Ctrl-C or SIGTERM: the normal way to stop; said below in one line
        finally:
            # Signals from here on would only interrupt the clean-up: the stop is under way.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stopped = stop_all(processes)
            celery_log_file.close()
            moto.stop()
            self.stdout.write(f"stopped: {', '.join([*stopped, 'moto'])}")
