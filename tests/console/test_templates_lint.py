"""``manage.py templates lint``: the fixture set of tests/gate_templates/, one known defect each,
named by its rule and element in the JSON a pipeline reads; the clean templates pass; errors exit
non-zero. No AWS: lint reads local files and the manifest only. The spam score is SpamAssassin's
own, from the spamd at 127.0.0.1:783 (.ci/run starts it)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from emailops.spamd import SpamdScorer
from tests.conftest import skip_or_fail

FIXTURES = Path(__file__).resolve().parent.parent / "gate_templates"


def lint(*args: str) -> tuple[list[dict], bool]:
    out = StringIO()
    failed = False
    try:
        call_command("templates", "lint", "--json", *args, stdout=out)
    except CommandError as exc:
        assert exc.returncode == 1
        failed = True
    return json.loads(out.getvalue()), failed


def blocking(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["severity"] in ("error", "warning")]


@pytest.mark.parametrize(
    ("fixture", "severity", "rule", "element", "line"),
    [
        ("flexbox.html", "warning", "client-support", '<div style="display: flex', 13),
        ("img-no-alt.html", "warning", "img-alt", '<img src="https://cdn.example.com/banner', 11),
        ("click-here.html", "warning", "link-text", "<a href=", 14),
        ("grey-on-white.html", "warning", "contrast", '<p style="color: #aaaaaa;">', 13),
        ("dark-logo.html", "warning", "dark-mode", "logo-dark.png", 11),
        ("broken.mjml", "error", "mjml", "<mj-colum>", 5),
        ("large.html", "error", "size", "", None),
    ],
)
def test_each_defect_is_named_by_its_rule_and_element(fixture, severity, rule, element, line):
    findings, failed = lint(str(FIXTURES / fixture))
    found = blocking(findings)
    assert {f["rule"] for f in found} == {rule}, found
    first = found[0]
    assert (first["severity"], first["line"]) == (severity, line)
    assert element in first["element"]
    assert first["path"].endswith(fixture) and first["message"]
    assert first["fix"] or rule == "size"
    assert failed is (severity == "error")


def test_flexbox_names_the_clients_that_lack_it():
    findings, _ = lint(str(FIXTURES / "flexbox.html"))
    [flex] = [f for f in findings if "display:flex" in f["message"]]
    assert "not supported in Outlook Windows" in flex["message"]
    assert "caniemail.com/features/css-display-flex" in flex["message"]


@pytest.mark.parametrize("fixture", ["clean.html", "clean.mjml"])
def test_a_clean_template_passes(fixture):
    findings, failed = lint(str(FIXTURES / fixture))
    assert blocking(findings) == [] and not failed
    # Partial support is listed as notes, never to confirm (no spam score: SPAMD_ADDRESS empty).
    assert {f["rule"] for f in findings} <= {"client-support"}


def test_a_directory_a_branded_copy_and_the_text_output(tmp_path):
    (tmp_path / "a.html").write_text((FIXTURES / "click-here.html").read_text())
    findings, failed = lint(str(tmp_path), "--org", "367")
    assert not failed
    assert [(f["rule"], f["organization"], f["file"]) for f in blocking(findings)] == [
        ("link-text", "367", "custom/O367/a.html")
    ]
    out = StringIO()
    call_command("templates", "lint", str(tmp_path), stdout=out)
    text = out.getvalue()
    assert 'link-text: link text "click here"' in text and "fix: say where it goes" in text


def test_a_rule_turned_off_in_the_template_is_not_reported(tmp_path):
    source = (FIXTURES / "grey-on-white.html").read_text()
    path = tmp_path / "grey.html"
    path.write_text(source.replace("<head>", "<head>\n<!-- emailops: off=contrast -->"))
    findings, _ = lint(str(path))
    assert blocking(findings) == []


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("templates", "lint", str(tmp_path / "nope.html"), stdout=StringIO())


SPAMD = "127.0.0.1:783"


@pytest.fixture
def spamd(settings):
    if not SpamdScorer(SPAMD)._reachable():
        skip_or_fail(f"spamd not reachable at {SPAMD} (apt-get install spamassassin spamc)")
    settings.SPAMD_ADDRESS = SPAMD


def test_free_money_act_now_scores_as_spam(spamd):
    findings, failed = lint(str(FIXTURES / "spam.html"), "--subject", "FREE $$$ ACT NOW!!!")
    [spam] = blocking(findings)
    assert (spam["severity"], spam["rule"]) == ("warning", "spam-score") and not failed
    assert "SpamAssassin scores" in spam["message"] and "DEAR_FRIEND" in spam["message"]


def test_the_clean_template_scores_below_the_threshold(spamd):
    findings, _ = lint(str(FIXTURES / "clean.html"), "--subject", "Welcome to Pennsieve")
    [score] = [f for f in findings if f["rule"] == "spam-score"]
    assert score["severity"] == "note" and "SpamAssassin scores" in score["message"]


def test_an_unreachable_spamd_says_so(settings):
    settings.SPAMD_ADDRESS = "127.0.0.1:9"  # discard: nothing listens
    findings, _ = lint(str(FIXTURES / "clean.html"))
    [score] = [f for f in findings if f["rule"] == "spam-score"]
    assert score["message"] == "not scored: spamd not reachable at 127.0.0.1:9"


def test_an_email_over_gmails_limit_is_not_scored(spamd):
    findings, failed = lint(str(FIXTURES / "large.html"))
    assert failed and [f for f in findings if f["rule"] == "spam-score"] == []
