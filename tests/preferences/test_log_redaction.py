"""No unsubscribe token in a log line (issue 35, finding 5): gunicorn's access and error logs in
the image (emailops.access_log.RedactingLogger) and Django's request warnings through the
settings' console handler (emailops.logging.RedactUnsubscribeTokens)."""

from __future__ import annotations

import io
import logging
import re
import shlex
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from django.test import Client
from gunicorn.config import Config as GunicornConfig
from gunicorn.glogging import Logger as PlainGunicornLogger

from emailops.access_log import RedactingLogger
from emailops.logging import RedactUnsubscribeTokens, redact_unsubscribe_tokens
from emailops.unsubscribe import unsubscribe_token

ROOT = Path(__file__).resolve().parents[2]
LOGGER_CLASS = "emailops.access_log.RedactingLogger"
TOKEN = "ZZkKDqMhZlKMiN9T6z-byL58AoPgy0H1-gWO4Z3KUAMGYlc7p3M8Ih7cvw"
LEGACY = "WyJlcmluQGV4YW1wbGUuY29tIiwibmV3cyJd:1a2b3c"  # base64 of ["erin@example.com","news"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f'"GET /u/{TOKEN} HTTP/1.1" 200', '"GET /u/[token] HTTP/1.1" 200'),
        (f"Bad Request: /u/{LEGACY}", "Bad Request: /u/[token]"),
        (f"/u/{TOKEN}?org=7", "/u/[token]?org=7"),
        (f"https://mail.example.org/u/{TOKEN}#x", "https://mail.example.org/u/[token]#x"),
        (f"Not Found: /u/{TOKEN}/more", "Not Found: /u/[token]/more"),
        (f"/u/{TOKEN} and /u/{LEGACY}", "/u/[token] and /u/[token]"),
        ("GET /admin/uploads/u HTTP/1.1", "GET /admin/uploads/u HTTP/1.1"),
        ("GET /u/ HTTP/1.1", "GET /u/ HTTP/1.1"),
        ("GET /healthz", "GET /healthz"),
    ],
)
def test_the_redaction_rewrites_the_token_and_nothing_else(line, expected):
    assert redact_unsubscribe_tokens(line) == expected


# --- gunicorn ---------------------------------------------------------------------------------


def gunicorn_logger(logger_class, tmp_path: Path):
    cfg = GunicornConfig()
    cfg.set("accesslog", str(tmp_path / "access.log"))
    cfg.set("errorlog", str(tmp_path / "error.log"))
    return logger_class(cfg)


def request_to(path: str, referer: str = "-"):
    environ = {
        "REQUEST_METHOD": "POST",
        "RAW_URI": path,
        "PATH_INFO": path.split("?")[0],
        "QUERY_STRING": path.partition("?")[2],
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "192.0.2.7",
        "HTTP_REFERER": referer,
        "HTTP_USER_AGENT": "Gmail one-click",
    }
    response = SimpleNamespace(status="200 OK", sent=36, headers=[("Content-Type", "text/plain")])
    return response, [("Referer", referer)], environ


def written(logger, tmp_path: Path) -> str:
    for handler in logger.access_log.handlers + logger.error_log.handlers:
        handler.flush()
    return (tmp_path / "access.log").read_text() + (tmp_path / "error.log").read_text()


def log_a_token(logger) -> None:
    logger.cfg.set("access_log_format", '%(r)s %(U)s %(q)s "%(f)s" "%({referer}i)s"')
    response, headers, environ = request_to(f"/u/{TOKEN}?org=7", f"https://x.example/u/{TOKEN}")
    logger.access(response, headers, environ, timedelta(milliseconds=3))
    logger.error("Invalid request from ip=%s: %s", "192.0.2.7", f"GET /u/{TOKEN} HTTP/1.1")


def test_gunicorns_plain_logger_writes_the_token(tmp_path):
    """What the image wrote before (the reason for the class): the token, five times."""
    logger = gunicorn_logger(PlainGunicornLogger, tmp_path)
    log_a_token(logger)
    assert written(logger, tmp_path).count(TOKEN) == 5


def test_the_images_logger_class_writes_no_token_in_access_or_error_lines(tmp_path):
    cfg = GunicornConfig()
    cfg.set("logger_class", LOGGER_CLASS)  # as --logger-class names it
    assert cfg.logger_class is RedactingLogger
    logger = gunicorn_logger(RedactingLogger, tmp_path)
    log_a_token(logger)
    text = written(logger, tmp_path)
    assert TOKEN not in text
    assert "POST /u/[token]?org=7 HTTP/1.1 /u/[token] org=7" in text
    assert '"https://x.example/u/[token]"' in text
    assert "Invalid request from ip=192.0.2.7: GET /u/[token] HTTP/1.1" in text
    # a configuration reload runs setup again: still one filter a log
    logger.setup(logger.cfg)
    assert sum(isinstance(f, RedactUnsubscribeTokens) for f in logger.access_log.filters) == 1


def gunicorn_commands() -> list[list[str]]:
    """Every gunicorn command the image, compose and the deploy guide declare."""
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    cmd = [line for line in dockerfile.splitlines() if line.startswith("CMD ")][-1]
    commands = [yaml.safe_load(cmd.removeprefix("CMD "))]
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    for service in compose["services"].values():
        command = service.get("command") or ""
        if "gunicorn" in str(command):
            commands.append(shlex.split(command) if isinstance(command, str) else command)
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    for block in re.findall(r"```\n(gunicorn .*?)```", deploy, re.S):
        commands.append(shlex.split(block.replace("\\\n", " ")))
    return commands


def test_every_declared_gunicorn_names_the_redacting_logger_class():
    commands = gunicorn_commands()
    assert len(commands) >= 3, commands
    for argv in commands:
        assert argv[0] == "gunicorn", argv
        assert argv[argv.index("--logger-class") + 1] == LOGGER_CLASS, argv


# --- Django -----------------------------------------------------------------------------------


@pytest.fixture
def console_output():
    """What the settings' console handler writes (root's handler with the logfmt formatter)."""
    [handler] = [
        h
        for h in logging.getLogger().handlers
        if type(h) is logging.StreamHandler and h.formatter.__class__.__name__ == "LogfmtFormatter"
    ]
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        yield stream
    finally:
        handler.setStream(previous)


@pytest.mark.django_db
def test_djangos_bad_request_warning_names_no_token(store, console_output):
    token = unsubscribe_token("erin@example.com", "news")
    bad = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert Client().get(f"/u/{bad}").status_code == 400
    assert Client().put(f"/u/{token}").status_code == 405
    text = console_output.getvalue()
    assert "Bad Request: /u/[token]" in text and "Method Not Allowed" in text
    assert bad not in text and token not in text


def test_django_servers_request_lines_and_tracebacks_name_no_token(console_output):
    logging.getLogger("django.server").warning(
        '"%s" %s %s', f"GET /u/{TOKEN} HTTP/1.1", "400", "123"
    )
    try:
        raise ValueError(f"while serving /u/{TOKEN}")
    except ValueError:
        logging.getLogger("django.request").exception("Internal Server Error: %s", f"/u/{TOKEN}")
    text = console_output.getvalue()
    assert TOKEN not in text
    assert "GET /u/[token] HTTP/1.1" in text and "while serving /u/[token]" in text


def test_a_record_that_cannot_be_formatted_is_left_to_the_handler():
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "%s %s", ("one",), None)
    assert RedactUnsubscribeTokens().filter(record) is True
    assert record.msg == "%s %s"
