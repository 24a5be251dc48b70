"""Whole by default (issue 31): with no setting every capability is on; one turned off is said, in
one start-up line naming its setting, by each process that would have used it."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import ImproperlyConfigured

from emailops import container
from emailops.capabilities import UNSUBSCRIBE_LINKS, WEBHOOKS, report_off
from emailops.config import Config
from tests.test_settings import run


def off_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "capability.off" in r.getMessage()]


def test_with_no_setting_webhook_events_go_to_the_durable_outbox():
    """A fresh process with none of the suite's variables (the suite turns the outbox off)."""
    script = (
        "from emailops import container; built = container.current(); "
        "print(built.config.webhooks.outbox, type(built.webhook_outbox).__name__, "
        "built.journal.outbox.table, built.event_journal.outbox.table)"
    )
    result = run("-c", script, DJANGO_DEBUG="true", JOURNAL_TABLE="email-journal")
    assert result.returncode == 0, result.stderr
    outbox_table = "email-journal-webhook-outbox"
    assert result.stdout.split() == ["durable", "CeleryOutbox", outbox_table, outbox_table]


@pytest.mark.parametrize(
    ("value", "outbox"),
    [("", "durable"), ("durable", "durable"), ("celery", "durable"), ("off", "off")],
)
def test_empty_is_the_default_and_off_turns_the_outbox_off(settings, value, outbox):
    settings.WEBHOOK_OUTBOX = value
    settings.JOURNAL_TABLE = "email-journal"  # (the durable case's tables: the test above)
    assert Config.from_settings().webhooks.outbox == outbox
    built = container.current()
    assert (type(built.webhook_outbox).__name__ == "CeleryOutbox") == (outbox == "durable")
    if outbox == "off":  # no outbox writes at all: the journal's plain UpdateItem as before
        assert built.webhook_outbox_store is None


def test_an_unknown_outbox_is_refused_naming_the_setting(settings):
    settings.WEBHOOK_OUTBOX = "redis"
    with pytest.raises(ImproperlyConfigured, match="WEBHOOK_OUTBOX"):
        Config.from_settings()


def test_one_line_per_capability_off_naming_its_setting(settings, caplog):
    caplog.set_level(logging.INFO, logger="emailops.capabilities")
    settings.WEBHOOK_OUTBOX = "off"
    settings.PUBLIC_BASE_URL = ""
    off = report_off(Config.from_settings(), WEBHOOKS, UNSUBSCRIBE_LINKS, process="consumer")
    assert off == [WEBHOOKS, UNSUBSCRIBE_LINKS]
    lines = off_lines(caplog)
    assert len(lines) == 2
    assert "capability=webhooks setting=WEBHOOK_OUTBOX process=consumer" in lines[0]
    assert "capability=unsubscribe_links setting=PUBLIC_BASE_URL" in lines[1]


def test_nothing_is_said_when_every_capability_is_on(settings, caplog):
    caplog.set_level(logging.INFO, logger="emailops.capabilities")
    settings.WEBHOOK_OUTBOX = "celery"
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    assert report_off(Config.from_settings(), WEBHOOKS, UNSUBSCRIBE_LINKS, process="web") == []
    assert off_lines(caplog) == []


def test_the_consumers_start_up_says_which_capability_is_off(aws_events, settings, caplog):
    from worker.events_consumer import build_events_consumer
    from worker.wiring import build_consumer

    caplog.set_level(logging.INFO, logger="emailops.capabilities")
    settings.WEBHOOK_OUTBOX = "off"
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    build_consumer(adapters=container.current(), concurrency=1, allow_no_dead_letter_queue=True)
    assert [line.split(" process=")[1].split()[0] for line in off_lines(caplog)] == ["consumer"]
    assert "setting=WEBHOOK_OUTBOX" in off_lines(caplog)[0]
    caplog.clear()
    build_events_consumer(adapters=container.current(), concurrency=1)
    assert len(off_lines(caplog)) == 1
    assert "setting=WEBHOOK_OUTBOX process=events_consumer" in off_lines(caplog)[0]
    caplog.clear()
    settings.WEBHOOK_OUTBOX = "celery"
    build_consumer(adapters=container.current(), concurrency=1, allow_no_dead_letter_queue=True)
    build_events_consumer(adapters=container.current(), concurrency=1)
    assert off_lines(caplog) == []


def test_the_web_process_says_so_at_start_up():
    result = run("-c", "import emailops.wsgi", DJANGO_DEBUG="true", WEBHOOK_OUTBOX="off")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "capability.off" in line]
    assert len(lines) == 2, result.stderr
    assert "setting=WEBHOOK_OUTBOX process=web" in lines[0]
    assert "setting=PUBLIC_BASE_URL process=web" in lines[1]
