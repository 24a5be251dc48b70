"""The deployment files stay consistent with the code: there is no Docker engine in CI, so these
read them (compose parses, every service is checked, the image runs non-root gunicorn) and prove
that production code paths import without moto."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())


def test_compose_runs_every_process_with_a_healthcheck(compose):
    services = compose["services"]
    assert {
        "postgres",
        "redis",
        "moto",
        "console",
        "consumer",
        "events-consumer",
        "celery-worker",
        "webhook-worker",
        "celery-beat",
    } <= set(services)
    assert services["consumer"]["deploy"]["replicas"] == 2
    for name, service in services.items():
        if name in ("setup", "console"):  # a one-off job; the console uses the image's check
            continue
        assert service["healthcheck"]["test"], name
    assert "runserver" not in str(services["console"].get("command", ""))


def queues_read(service: dict) -> list[str]:
    """The Celery queues a service's worker reads ([] for a service that is no worker)."""
    words = str(service.get("command", "")).split()
    if words[:4] != ["celery", "-A", "emailops", "worker"]:
        return []
    return words[words.index("-Q") + 1].split(",") if "-Q" in words else ["emailops"]


def test_compose_is_whole_with_no_extra_setting(compose):
    """Webhook events are emitted by default, so a worker must read their queue; and the
    unsubscribe links need the console's public address (a host Django accepts)."""
    environment = compose["x-env"]
    assert environment.get("WEBHOOK_OUTBOX", "celery") == "celery"
    queue = environment.get("WEBHOOK_QUEUE", "emailops-webhooks")  # WEBHOOK_QUEUE's default
    readers = [
        name for name, service in compose["services"].items() if queue in queues_read(service)
    ]
    assert readers == ["webhook-worker"], readers
    assert environment["PUBLIC_BASE_URL"] == "http://localhost:8000"
    assert "localhost" in environment["DJANGO_ALLOWED_HOSTS"].split(",")
    assert "8000:8000" in compose["services"]["console"]["ports"]


def test_consumer_healthcheck_probes_the_metrics_port_it_serves(compose):
    consumer = compose["services"]["consumer"]
    argv = consumer["command"].split()
    port = argv[argv.index("--metrics-port") + 1]
    assert f"127.0.0.1:{port}/metrics" in " ".join(consumer["healthcheck"]["test"])


def test_image_serves_gunicorn_as_a_non_root_user_with_a_healthcheck():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    users = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert "collectstatic" in dockerfile
    assert "/healthz" in dockerfile.split("HEALTHCHECK", 1)[1]
    cmd = [line for line in dockerfile.splitlines() if line.startswith("CMD ")][-1]
    assert "gunicorn" in cmd and "emailops.wsgi:application" in cmd


def test_moto_is_not_a_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("moto")]
    assert any(d.startswith("moto") for d in project["optional-dependencies"]["local"])
    assert "emailops[local]" in project["optional-dependencies"]["dev"]


def test_production_code_imports_without_moto():
    """Every module of the shipped packages, under production settings, with moto unimportable."""
    script = """
import importlib, pkgutil, sys
class NoMoto:
    def find_spec(self, name, path=None, target=None):
        if name == "moto" or name.startswith("moto."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoMoto())
import django
django.setup()
for package in ("emailops", "worker", "templates_admin"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if ".migrations." not in info.name:
            importlib.import_module(info.name)
print("imported", len(sys.modules))
"""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "emailops.settings",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("imported")


def test_the_api_runs_on_its_own_gunicorn_with_a_timeout_that_fits_its_largest_request(compose):
    from django.conf import settings

    api = compose["services"]["api"]
    command = api["command"].split()
    assert command[0] == "gunicorn" and "emailops.wsgi:application" in command
    timeout = int(command[command.index("--timeout") + 1])
    sandbox_rate = 1  # emails per second: moto's GetSendQuota, and SES's sandbox
    assert timeout >= settings.API_MAX_RECIPIENTS / sandbox_rate + 30
    assert api["healthcheck"]["test"]
