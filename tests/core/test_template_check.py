"""The template check engine: each error and warning the issue lists, with file, organization and
line, and the Gmail size limit measured on the MIME-encoded message."""

from __future__ import annotations

import pytest

from emailops.core.rendering import Renderer
from emailops.core.template_check import (
    DEFAULT_GATE,
    GMAIL_CLIP_BYTES,
    SIZE_WARNING_BYTES,
    check_render,
    mime_size,
    missing_in_contexts,
)
from emailops.core.template_findings import organization_of_key

KEY = "custom/O367/welcome.html"


def run(source: str, *, subject: str | None = "Hello {{ name }}", contexts=None, gate=None):
    """The check's own rules; the publish gate's (``gate``) are tests/core/test_template_gate.py's."""
    return check_render(
        renderer=Renderer(),
        key=KEY,
        source=source,
        subject_source=subject,
        contexts=contexts or [{"name": "Ada"}],
        organization="367",
        gate=gate,
    )


def codes(findings) -> set[tuple[str, str]]:
    return {(f.severity, f.code) for f in findings}


def padded(size: int) -> str:
    """A readable HTML body of about ``size`` characters (words, so the text part is as big)."""
    words = "lorem ipsum dolor sit amet " * (size // 27 + 1)
    return f"<p>{words[:size]}</p>"


def test_a_clean_template_has_no_findings():
    assert (
        run(
            '<p>Hi {{ name }}, <a href="https://x.test/">go</a> <img src="https://x.test/l.png" alt="logo"></p>'
        )
        == []
    )


def test_a_120_kb_draft_fails_naming_its_size_and_gmails_limit():
    findings = run(padded(120 * 1024))
    [size] = [f for f in findings if f.code == "size"]
    assert size.severity == "error"
    assert "KB" in size.message and "Gmail clips messages at 102 KB" in size.message
    measured = int(size.message.split("(")[1].split(" bytes")[0].replace(",", ""))
    assert measured >= 120 * 1024  # HTML and text together, encoded
    assert (size.file, size.organization) == (KEY, "367")


def test_between_90_and_102_kb_is_a_warning_and_below_is_nothing():
    # The HTML and its text part both count: ~47 KB of words makes a ~95 KB email.
    warning = [f for f in run(padded(47 * 1024)) if f.code == "size"]
    assert [f.severity for f in warning] == ["warning"]
    assert [f for f in run(padded(30 * 1024)) if f.code == "size"] == []


def test_mime_size_counts_the_encoding():
    ascii_size = mime_size(subject="s", html="a" * 10_000, text="")
    accented = mime_size(subject="s", html="é" * 10_000, text="")
    assert accented > 2.5 * ascii_size  # quoted-printable turns é into =C3=A9
    assert SIZE_WARNING_BYTES < GMAIL_CLIP_BYTES == 102 * 1024


def test_compile_errors_in_go_and_jinja_syntax_name_the_line():
    [go] = run("<p>\n{{if .x}}\n<b>no end</b>\n")
    assert (go.severity, go.code, go.file, go.organization) == ("error", "compile", KEY, "367")
    [jinja] = run("<p>\n\n{% if %}</p>")
    assert jinja.code == "compile" and jinja.line == 3


def test_an_unclosed_block_is_reported_on_the_line_that_opened_it():
    for opener, closer in (("{{if .x}}", "{{end}}"), ("{% if x %}", "{% endif %}")):
        [finding] = run(
            f"<p>a</p>\n<p>b</p>\n<p>c</p>\n<p>d</p>\n{opener}\n<p>{{{{ name }}}}</p>\n"
        )
        assert (finding.code, finding.line) == ("compile", 5)
        assert "opened on line 5 is never closed with " + closer in finding.message


def test_a_render_error_under_the_bounded_renderer():
    [finding] = run("<p>\n{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}</p>")
    assert (finding.severity, finding.code) == ("error", "render")
    assert "deep" in finding.message


def test_javascript_links_are_errors_with_their_line():
    findings = run('<p>ok</p>\n<a href=" JaVa\tScript:alert(1)">x</a>')
    [js] = [f for f in findings if f.code == "javascript-link"]
    assert js.severity == "error" and js.line == 2


def test_javascript_from_a_variable_is_found_in_the_render():
    findings = run('<a href="{{ url }}">x</a>', contexts=[{"url": "javascript:evil()", "name": ""}])
    assert ("error", "javascript-link") in codes(findings)


def test_http_links_images_and_missing_alt_are_warnings():
    source = '<p>text</p>\n<a href="http://x.test/">a</a>\n<img src="http://x.test/i.png">'
    found = {f.code: f for f in run(source, gate=DEFAULT_GATE)}
    assert found["http-link"].severity == found["http-image"].severity == "warning"
    assert found["http-link"].line == 2 and found["img-alt"].line == 3


def test_an_empty_text_part_is_a_warning():
    assert ("warning", "empty-text") in codes(run('<img src="https://x.test/i.png" alt="">'))


@pytest.mark.parametrize(
    ("subject", "code"),
    [
        ("x" * 999, "subject-length"),
        ("Hello {{ name }}", None),
        ("Hello\n{{ name }}", "subject-newline"),
        ("Hi {{ nl }}", "subject-newline"),
        ("Hi {{ vt }}", "subject-control"),
        ("Hi\x0cthere", "subject-control"),
        ("{% if %}", "subject-compile"),
    ],
)
def test_subject_rules(subject, code):
    findings = run(
        "<p>hi</p>", subject=subject, contexts=[{"name": "A", "nl": "a\nb", "vt": "a\x0bb"}]
    )
    assert {f.code for f in findings if f.severity == "error"} == ({code} if code else set())


def test_findings_are_deduplicated_across_contexts():
    findings = run('<a href="http://x.test/">a</a>', contexts=[{"name": "a"}, {"name": "b"}])
    assert [f.code for f in findings] == ["http-link"]


def test_missing_in_contexts_counts_absences():
    contexts = [{"a": 1, "b": 2}, {"a": 1}, {}]
    assert missing_in_contexts({"a", "b", "c"}, contexts) == {"a": 1, "b": 2, "c": 3}
    assert missing_in_contexts({"a"}, contexts, ignore={"a"}) == {}


def test_organization_of_key():
    assert organization_of_key("custom/O367/welcome.html") == "367"
    assert organization_of_key("default/welcome.html") is None
