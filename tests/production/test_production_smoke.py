"""The production shape without Docker: every service of docker/compose.yml, run as the file and
docker/Dockerfile declare it, from a plain (non-editable) install of what the image copies.

- The "image": the Dockerfile's COPY sources are copied into a build directory and installed with
  pip (not editable) into a fresh venv; its build steps (collectstatic) run from a directory that
  holds only manage.py, as the image's /app does, so nothing can come from this checkout.
- The services: compose's `setup` first, then every other service built from the image (the
  console runs the Dockerfile's CMD), each with compose's x-env; compose hostnames map to this
  machine (moto server on a free port, PostgreSQL and Redis on their own database).
- Then: healthchecks as declared, an admin login with static files from whitenoise, one email
  through the send API and one through the queue to the journal (SENT, then DELIVERED by the
  events consumer), a beat task run by the worker, and a clean SIGTERM of every process within
  its stop grace period.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pytest
import yaml  # a dev dependency: missing, this must fail rather than skip

from tests.conftest import skip_or_fail
from tests.production.deployment import (
    COMPOSE,
    CONTEXT,
    ROOT,
    Image,
    command_argv,
    declared_packages,
    env_example_defaults,
    interpolate,
    map_hosts,
    stop_grace_seconds,
)
from tests.support.stack import MotoServer, free_port, wait_until

pytestmark = pytest.mark.production

SMOKE_DATABASE = "emailops_smoke"
SMOKE_REDIS_DB = 12  # its own Redis database: the unit tests use 15, a local stack 0
PG_HOSTPORT = "127.0.0.1:5432"
REDIS_HOSTPORT = "127.0.0.1:6379"
SIMULATOR = "simulator.amazonses.com"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


# --- The files agree with each other (no services needed) ----------------------------------------


def test_the_image_copies_every_package_pyproject_ships():
    """`pip install .` in the image installs only what COPY put there: a package left out is
    simply missing at run time (api was, and Django could not start)."""
    copied = Image.read().copied_paths()
    missing = [package for package in declared_packages() if package not in copied]
    assert not missing, f"docker/Dockerfile does not COPY {missing} (pyproject ships them)"
    assert {"pyproject.toml", "manage.py"} <= copied


def test_compose_sets_every_setting_whose_default_is_this_machine():
    """A default like redis://127.0.0.1:6379 means "nothing" in a container: each must be set."""
    environment = compose()["x-env"]
    loopback = {
        name
        for name, value in env_example_defaults().items()
        if re.search(r"//(127\.0\.0\.1|localhost):\d+", value)
    }
    assert loopback, ".env.example lists no loopback default: this check reads it wrong"
    unset = sorted(loopback - set(environment))
    assert not unset, f"docker/compose.yml's x-env does not set {unset}"


def test_every_service_gets_longer_to_stop_than_gunicorn_takes_to_drain():
    cmd = Image.read().cmd
    graceful = float(cmd[cmd.index("--graceful-timeout") + 1])
    for name, service in compose()["services"].items():
        if "build" in service and name != "setup":
            assert stop_grace_seconds(service) > graceful, name


# --- The running stack ---------------------------------------------------------------------------


@dataclass
class Service:
    name: str
    argv: list[str]
    process: subprocess.Popen
    log_path: Path
    grace: float

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


@dataclass
class ProductionStack:
    app: Path
    env: dict[str, str]
    console: str
    moto: MotoServer
    services: list[Service] = field(default_factory=list)
    probes: list[tuple[str, list[str]]] = field(default_factory=list)

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    def manage(self, *args: str, env: dict[str, str] | None = None) -> str:
        return run(["python", "manage.py", *args], cwd=self.app, env={**self.env, **(env or {})})

    def client(self, name: str):
        return boto3.client(
            name,
            endpoint_url=self.moto.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def journal_row(self, key: str) -> dict:
        item = self.client("dynamodb").get_item(
            TableName=self.env["JOURNAL_TABLE"], Key={"Id": {"S": key}}, ConsistentRead=True
        )
        return {k: next(iter(v.values())) for k, v in item.get("Item", {}).items()}

    def logs(self) -> str:
        return "\n".join(f"--- {s.name}\n{s.output()[-3000:]}" for s in self.services)


def run(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 180) -> str:
    try:
        result = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{argv} did not finish within {timeout} s") from exc
    assert result.returncode == 0, f"{argv} exited {result.returncode}:\n{result.stderr[-4000:]}"
    return result.stdout


def require_services() -> None:
    for what, hostport in (("PostgreSQL", PG_HOSTPORT), ("Redis", REDIS_HOSTPORT)):
        host, port = hostport.split(":")
        with socket.socket() as sock:
            sock.settimeout(3)
            if sock.connect_ex((host, int(port))) != 0:
                skip_or_fail(f"{what} is not listening on {hostport}")


def postgres(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"postgresql://postgres@{PG_HOSTPORT}/postgres", autocommit=True) as db:
        db.execute(sql)


def redis_flush() -> None:
    import redis

    redis.Redis.from_url(f"redis://{REDIS_HOSTPORT}/{SMOKE_REDIS_DB}").flushdb()


def build_image(tmp: Path, image: Image) -> tuple[Path, Path]:
    """The image's build, as far as it is not Docker's: COPY into a build directory, install it
    (not editable) into a fresh venv, put manage.py in an app directory of its own. Returns
    (venv bin, app directory)."""
    context = tmp / "image"
    for sources, destination in image.copies:
        for source in sources:
            origin = CONTEXT / source
            target = context / destination if destination != "./" else context / origin.name
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp, env=dict(os.environ), timeout=120)
    # The image installs with --no-cache-dir (a smaller layer); here pip's cache keeps it quick.
    run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(context)],
        cwd=tmp,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        timeout=400,
    )
    app = tmp / "app"
    app.mkdir()
    shutil.copy2(context / "manage.py", app / "manage.py")
    return venv / "bin", app


def build_steps(image: Image) -> list[str]:
    """The RUN steps after `pip install .`: they run in the image's WORKDIR."""
    (install,) = [step for step in image.runs if "pip install" in step]
    first, *rest = [part.strip() for part in install.split("&&")]
    assert first.split()[:2] == ["pip", "install"] and first.split()[-1] == ".", first
    return rest


def localize(argv: list[str], *, ports: dict[int, int], tmp: Path, data: Path) -> list[str]:
    """The few container-only details of a declared command, mapped to this machine. Each
    container has its own network (:8000, :9100 are free there) and its own /tmp; the setup
    command's emailops/data/... paths are relative to /app, where the image has the source copy:
    here they resolve in the installed package (stricter: the samples must be packaged)."""
    out = []
    for arg in argv:
        for inside, outside in ports.items():
            arg = re.sub(rf"\b(0\.0\.0\.0|127\.0\.0\.1):{inside}\b", f"127.0.0.1:{outside}", arg)
        arg = re.sub(r"(?<![\w/.])/tmp/", f"{tmp}/", arg)
        arg = re.sub(r"(?<![\w/.])emailops/data/", f"{data}/", arg)
        out.append(arg)
    return out


def start(
    name: str, argv: list[str], *, app: Path, env: dict[str, str], grace: float, logs: Path
) -> Service:
    log_path = logs / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv,
            cwd=app,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: nothing it forks can outlive the test
        )
    return Service(name, argv, process, log_path, grace)


def probe(argv: list[str], *, app: Path, env: dict[str, str]) -> bool:
    try:
        return (
            subprocess.run(argv, cwd=app, env=env, capture_output=True, timeout=20).returncode == 0
        )
    except subprocess.TimeoutExpired:
        return False


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    require_services()
    tmp = tmp_path_factory.mktemp("production")
    image = Image.read()
    spec = compose()
    services = spec["services"]
    started: list[Service] = []
    moto = None
    postgres(f'DROP DATABASE IF EXISTS "{SMOKE_DATABASE}" WITH (FORCE)')
    postgres(f'CREATE DATABASE "{SMOKE_DATABASE}"')
    redis_flush()
    try:
        bin_dir, app = build_image(tmp, image)
        moto = MotoServer()
        hosts = {
            "moto": (f"127.0.0.1:{moto.port}", None),
            "postgres": (PG_HOSTPORT, f"/{SMOKE_DATABASE}"),
            "redis": (REDIS_HOSTPORT, f"/{SMOKE_REDIS_DB}"),
        }
        env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(tmp),
            **image.env,
        }
        secret = secrets.token_urlsafe(64)
        for name, value in spec["x-env"].items():
            env[name] = map_hosts(interpolate(str(value), {"DJANGO_SECRET_KEY": secret}), hosts)
        leftover = {k: v for k, v in env.items() if urllib.parse.urlsplit(v).hostname in services}
        assert not leftover, f"compose hostnames the test does not map: {leftover}"
        # Only to make beat's first run come within the test, not after a minute.
        env["OPS_DLQ_CHECK_SECONDS"] = "2"
        data = Path(
            run(
                [
                    "python",
                    "-c",
                    "import emailops, pathlib; print(pathlib.Path(emailops.__file__).parent / 'data')",
                ],
                cwd=app,
                env=env,
            ).strip()
        )
        assert ROOT not in data.parents, f"emailops imported from the checkout: {data}"

        for step in build_steps(image):
            run(["sh", "-c", step], cwd=app, env=env)
        setup = localize(command_argv(services["setup"]["command"]), ports={}, tmp=tmp, data=data)
        run(setup, cwd=app, env=env, timeout=240)

        console_port = free_port()
        logs = tmp / "logs"
        logs.mkdir()
        probes: list[tuple[str, list[str]]] = []
        for name, service in services.items():
            if "build" not in service or name == "setup":
                continue  # moto, postgres, redis: run by this machine (or moto server above)
            replicas = int(service.get("deploy", {}).get("replicas", 1))
            for replica in range(1, replicas + 1):
                own = dict(env)
                ports = {8000: console_port}
                argv = command_argv(service.get("command") or image.cmd)
                if "--metrics-port" in argv:  # each replica's own port on this machine
                    at = argv.index("--metrics-port") + 1
                    ports[int(argv[at])] = free_port()
                    argv[at] = str(ports[int(argv[at])])
                argv = localize(argv, ports=ports, tmp=tmp, data=data)
                label = f"{name}-{replica}" if replicas > 1 else name
                started.append(
                    start(
                        label, argv, app=app, env=own, grace=stop_grace_seconds(service), logs=logs
                    )
                )
                check = service.get("healthcheck", {}).get("test") or (
                    ["CMD", *image.healthcheck] if "command" not in service else None
                )
                if check and "os.kill(1, 0)" not in " ".join(check):  # pid 1: the container's
                    kind, *words = check
                    words = localize(words, ports=ports, tmp=tmp, data=data)
                    if kind == "CMD-SHELL":
                        words = ["sh", "-c", interpolate(" ".join(words), {})]
                    probes.append((label, words))
        stack = ProductionStack(
            app=app,
            env=env,
            console=f"http://127.0.0.1:{console_port}",
            moto=moto,
            services=started,
            probes=probes,
        )
        host_env = {**env, "HOSTNAME": socket.gethostname()}  # celery's node name is celery@host
        for label, words in probes:
            healthy = wait_until(
                lambda w=words: probe(w, app=app, env=host_env), timeout=90, interval=1
            )
            dead = [s.name for s in started if s.process.poll() is not None]
            assert healthy and not dead, f"{label} unhealthy, exited: {dead}\n{stack.logs()}"
        yield stack
    finally:
        for service in started:
            service.kill_group()
        if moto is not None:
            moto.stop()
        with contextlib.suppress(Exception):
            postgres(f'DROP DATABASE IF EXISTS "{SMOKE_DATABASE}" WITH (FORCE)')
        with contextlib.suppress(Exception):
            redis_flush()


def fetch(opener, url: str, data: dict | None = None, headers: dict | None = None):
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        response = opener.open(request, timeout=15)
    except urllib.error.HTTPError as exc:
        response = exc
    return response.status, response.headers, response.read().decode(errors="replace"), response.url


def test_healthz_answers(stack):
    status, _, body, _ = fetch(urllib.request.build_opener(), f"{stack.console}/healthz")
    assert (status, body) == (200, "ok\n")


def test_admin_login_with_static_files_from_whitenoise(stack):
    password = secrets.token_urlsafe(16)
    stack.manage(
        "createsuperuser",
        "--noinput",
        "--username",
        "smoke",
        "--email",
        "smoke@example.com",
        env={"DJANGO_SUPERUSER_PASSWORD": password},
    )
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    status, _, page, _ = fetch(opener, f"{stack.console}/admin/login/")
    assert status == 200, page
    stylesheets = re.findall(r'<link[^>]+href="(/static/[^"]+\.css)"', page)
    # Hashed names: collectstatic's manifest is in the install, and whitenoise serves from it.
    assert stylesheets and all(re.search(r"\.[0-9a-f]{12}\.css$", s) for s in stylesheets), page
    for stylesheet in stylesheets:
        status, headers, css, _ = fetch(opener, stack.console + stylesheet)
        assert status == 200 and headers["Content-Type"].startswith("text/css"), stylesheet
        assert "max-age=315360000" in headers.get("Cache-Control", ""), headers
        assert css.strip()

    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    status, _, page, url = fetch(
        opener,
        f"{stack.console}/admin/login/?next=/admin/",
        {
            "csrfmiddlewaretoken": token,
            "username": "smoke",
            "password": password,
            "next": "/admin/",
        },
    )
    assert status == 200 and url == f"{stack.console}/admin/", page[-2000:]
    assert "id_password" not in page and "smoke" in page.lower()


def _request(recipient: str, dedupe: str) -> dict:
    return {
        "messageId": "dataset-publication-accepted",
        "dedupeId": dedupe,
        "recipients": [{"name": "Smoke", "email": recipient}],
        "context": {"datasetName": "Smoke", "reviewerName": "Bob", "date": "2026-06-18"},
    }


def _sent_and_delivered(stack: ProductionStack, key: str) -> dict:
    """The journal row, once SENT (the pipeline) and DELIVERED (the events consumer)."""
    rows: list[dict] = [{}]

    def done() -> bool:
        rows[0] = stack.journal_row(key)
        return rows[0].get("Status") == "SENT" and rows[0].get("DeliveryStatus") == "DELIVERED"

    assert wait_until(done, timeout=60, interval=0.5), f"{key}: {rows[0]}\n{stack.logs()}"
    return rows[0]


def test_an_email_from_the_send_api_reaches_the_journal(stack):
    token = stack.manage("create_api_token", "smoke", "--rate", "0").strip().splitlines()[-1]
    body = json.dumps(_request(f"api@{SIMULATOR}", f"smoke-api-{secrets.token_hex(4)}"))
    request = urllib.request.Request(
        f"{stack.console}/api/v1/send",
        data=body.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        (result,) = json.loads(response.read())["results"]
    assert result["status"] == "SENT", result
    assert _sent_and_delivered(stack, result["id"])["SesMessageId"] == result["sesMessageId"]


def test_an_email_from_the_queue_reaches_the_journal_through_a_consumer(stack):
    dedupe, recipient = f"smoke-queue-{secrets.token_hex(4)}", f"queue@{SIMULATOR}"
    stack.client("sqs").send_message(
        QueueUrl=stack.env["EMAIL_SERVICE_QUEUE_URL"],
        MessageBody=json.dumps(_request(recipient, dedupe)),
    )
    assert _sent_and_delivered(stack, f"{dedupe}:{recipient}")["SesMessageId"]


def test_beat_schedules_a_task_the_worker_runs(stack):
    worker = stack.service("celery-worker")

    def ran() -> bool:
        return bool(re.search(r"check_dead_letter_depth\[[^\]]+\] succeeded", worker.output()))

    assert wait_until(ran, timeout=60, interval=1), stack.logs()


def test_every_process_stops_cleanly_on_sigterm(stack):
    """As `docker compose stop` does: SIGTERM to each process (pid 1 of its container), SIGKILL
    after the service's stop_grace_period. Each must exit 0 within it, leaving no child behind."""
    for service in stack.services:
        assert service.process.poll() is None, f"{service.name} already exited\n{service.output()}"
        service.process.send_signal(signal.SIGTERM)
    began = time.monotonic()
    results = {}
    for service in stack.services:
        remaining = service.grace - (time.monotonic() - began)
        try:
            code = service.process.wait(timeout=max(remaining, 0.1))
        except subprocess.TimeoutExpired:
            code = "still running"
        results[service.name] = (code, round(time.monotonic() - began, 1))
    leftovers = []
    for service in stack.services:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(service.process.pid, 0)
            leftovers.append(service.name)
    assert all(code == 0 for code, _ in results.values()), f"{results}\n{stack.logs()}"
    assert not leftovers, f"children left behind by {leftovers}"
    problems = [
        s.name for s in stack.services if re.search(r"Traceback|level=ERROR| ERROR", s.output())
    ]
    assert not problems, f"errors logged by {problems}\n{stack.logs()}"
