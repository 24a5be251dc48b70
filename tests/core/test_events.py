"""logfmt lines: one event per line, values quoted only when they must be, None fields left out."""

from __future__ import annotations

import logging
import shlex

import pytest

from emailops.core.events import EventLog, logfmt


def test_plain_fields():
    assert logfmt("recipient.sent", attempt=1, key="abc", ok=True) == (
        "event=recipient.sent attempt=1 key=abc ok=True"
    )


def test_none_fields_are_left_out_but_falsy_ones_are_kept():
    assert logfmt("e", a=None, b=0, c=False) == "event=e b=0 c=False"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", '""'),
        ("two words", '"two words"'),
        ("a=b", '"a=b"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("line\nbreak", '"line\\nbreak"'),
        ("cr\rlf", '"cr\\rlf"'),
        ("tab\there", '"tab\there"'),
        ("back\\slash x", '"back\\\\slash x"'),
        ("back\\slash", "back\\slash"),  # nothing forces quoting: left alone
        ("é/ü:ok", "é/ü:ok"),
    ],
)
def test_quoting(value, expected):
    assert logfmt("e", v=value) == f"event=e v={expected}"


def test_a_line_is_always_one_line():
    line = logfmt("e\nvil", reason="a\nb\r\nc", other="x y")
    assert "\n" not in line and "\r" not in line
    assert shlex.split(line) == ["event=e\\nvil", "reason=a\\nb\\r\\nc", "other=x y"]


def test_event_log_binds_fields(caplog):
    logger = logging.getLogger("tests.events")
    log = EventLog(logger, sqsMessageId="s1", messageId=None)
    bound = log.bind(messageId="m", recipient="a@x.com")
    with caplog.at_level(logging.INFO, logger="tests.events"):
        log.info("request.invalid", error="bad body")
        bound.warning("send.failed", attempt=2, recipient="b@x.com")
        bound.error("mark_sent.failed")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, 'event=request.invalid sqsMessageId=s1 error="bad body"'),
        (
            logging.WARNING,
            "event=send.failed sqsMessageId=s1 messageId=m recipient=b@x.com attempt=2",
        ),
        (logging.ERROR, "event=mark_sent.failed sqsMessageId=s1 messageId=m recipient=a@x.com"),
    ]
    assert log.bound == {"sqsMessageId": "s1", "messageId": None}  # bind() copies


def test_disabled_levels_format_nothing(caplog):
    class Loud:
        def __str__(self):
            raise AssertionError("formatted although the level is off")

    logger = logging.getLogger("tests.events.quiet")
    with caplog.at_level(logging.WARNING, logger="tests.events.quiet"):
        EventLog(logger).info("e", value=Loud())
    assert caplog.records == []
