"""The publish gate's rules (emailops.core.template_gate) on small renders: the CSS each rule sees
is the cascade's (``<style>`` and inline, specificity, ``!important``), contrast as WCAG computes
it, MJML and CSS inlining leave template syntax untouched."""

from __future__ import annotations

import re

import pytest

from emailops.core.rendering import Renderer
from emailops.core.template_a11y import contrast_ratio
from emailops.core.template_check import check_render
from emailops.core.template_gate import GateOptions
from emailops.core.template_source import (
    TemplateSourceError,
    compile_mjml,
    directives,
    inline_css,
    publishable,
)
from emailops.core.template_support import load_support

DOC = '<html lang="en"><head><title>T</title>{head}</head><body>{body}</body></html>'


def findings(body: str, *, head: str = "", key: str = "default/t.html", source: str | None = None):
    found = check_render(
        renderer=Renderer(),
        key=key,
        source=source if source is not None else DOC.format(head=head, body=body),
        subject_source=None,
        contexts=[{"name": "Ada", "url": "https://x.test/a"}],
        gate=GateOptions(),
    )
    return [f for f in found if f.severity != "note"]


def rules(found) -> list[str]:
    return [f.rule for f in found]


def test_contrast_ratio_is_wcags():
    assert contrast_ratio((0, 0, 0), (1, 1, 1)) == pytest.approx(21)
    grey = 0x77 / 255
    assert contrast_ratio((grey,) * 3, (1, 1, 1)) == pytest.approx(4.48, abs=0.01)


def test_contrast_reads_the_cascade_from_style_blocks_and_inline_styles():
    head = "<style>.muted { color: #aaaaaa } #fine { color: #333 !important }</style>"
    [low] = findings('<p class="muted">faint</p><p class="muted" id="fine">ok</p>', head=head)
    assert (low.rule, low.element) == ("contrast", '<p class="muted">')
    assert "2.32:1" in low.message and "#aaaaaa on #ffffff" in low.message
    # inline beats a class; the background comes from the nearest ancestor that sets one
    assert findings('<p class="muted" style="color:#111">dark</p>', head=head) == []
    [on_dark] = findings('<td bgcolor="#222222"><p style="color:#555555">x</p></td>')
    assert "#555555 on #222222" in on_dark.message


def test_hidden_text_is_not_judged():
    preheader = '<div style="display:none;max-height:0;color:#ffffff">Preview text</div><p>Hi</p>'
    assert "contrast" not in rules(findings(preheader))
    assert "contrast" not in rules(
        findings('<div style="font-size:0"><p style="color:#eee">x</p></div>')
    )


def test_large_text_needs_3_to_1_only():
    assert findings('<p style="color:#888888;font-size:24px">big</p>') == []
    assert rules(findings('<p style="color:#888888;font-size:16px">small</p>')) == ["contrast"]


def test_structure_rules():
    found = findings(
        "<h1>A</h1><h3>skipped</h3><table><tr><td>layout</td></tr></table>"
        '<a href="https://x.test/">https://x.test/</a><a href="https://x.test/b">here</a>'
        '<a href="https://x.test/c"><img src="https://x.test/i.jpg" alt="Open the report"></a>'
    )
    assert rules(found) == ["heading-order", "layout-table", "link-text", "link-text"]
    assert findings('<table role="presentation"><tr><td>x</td></tr></table>') == []
    assert findings("<table><tr><th>Name</th></tr><tr><td>x</td></tr></table>") == []


def test_lang_and_title_of_a_document_but_not_of_a_fragment():
    source = "<html><head></head><body><p>Hi</p></body></html>"
    assert rules(findings("", source=source)) == ["lang", "title"]
    assert rules(findings("", source=source.replace("<html>", '<html lang="und">'))) == [
        "lang",
        "title",
    ]
    assert findings("", source="<p>Hi {{ name }}</p>") == []


def test_decorative_images_may_have_an_empty_alt():
    assert findings('<p>Hi</p><img src="https://x.test/spacer.jpg" alt="">') == []
    assert rules(findings('<p>Hi</p><img src="https://x.test/a.jpg">')) == ["img-alt"]


def test_dark_mode_is_trusted_to_a_template_that_styles_it():
    logo = '<p>Hi</p><img src="https://x.test/logo.png" alt="Acme">'
    assert rules(findings(logo)) == ["dark-mode"]
    head = "<style>@media (prefers-color-scheme: dark) { .logo { display: none } }</style>"
    assert "dark-mode" not in rules(findings(logo, head=head))


def test_client_support_uses_the_counted_clients_newest_version():
    support = load_support()
    flex = support.verdicts("css-display-flex", ["outlook.windows", "apple-mail.macos"])
    assert [(v.client, v.status) for v in flex] == [("Outlook Windows", "n")]
    assert support.updated.startswith("20")


def test_mjml_compiles_with_template_syntax_untouched():
    source = (
        '<mjml lang="en"><mj-head><mj-title>{{.subject}}</mj-title></mj-head><mj-body>'
        "{{if .x}}<mj-section><mj-column><mj-text>Hi {{ .name }} {% if a %}!{% endif %}"
        '</mj-text><mj-button href="https://{{.host}}/d?a={{.id}}">Open the dataset</mj-button>'
        "</mj-column></mj-section>{{end}}</mj-body></mjml>"
    )
    html = compile_mjml(source)
    for kept in (
        "{{if .x}}",
        "Hi {{ .name }} {% if a %}!{% endif %}",
        "https://{{.host}}/d?a={{.id}}",
        "{{end}}",
    ):
        assert kept in html
    assert publishable("default/t.mjml", source) == html


@pytest.mark.parametrize(
    ("source", "line", "says"),
    [
        ("<mjml>\n<mj-body>\n<mj-sectio>\n</mj-sectio>\n</mj-body></mjml>", 3, "mj-section"),
        ("<mjml>\n<mj-body>\n<mj-section>\n</mj-body></mjml>", 4, "closes <mj-section>"),
        ("<mjml>\n<mj-body>\n<mj-section>\n<mj-column>\n</mj-column>\n</mj-section>\n", 2, "never"),
    ],
)
def test_an_mjml_error_has_its_line(source, line, says):
    with pytest.raises(TemplateSourceError) as raised:
        compile_mjml(source)
    assert raised.value.line == line and says in raised.value.message
    [error] = findings("", key="default/t.mjml", source=source)
    assert (error.severity, error.rule, error.line) == ("error", "mjml", line)


def test_inlining_keeps_template_syntax_where_it_was():
    html = (
        "<html><head><title>{{.subject}}</title><style>p { color: #222 } @media (max-width: 600px)"
        " { p { color: #000 } }</style></head><body><table>{{range .items}}<tr><td><p>{{.name}}"
        '</p><a href="https://x.test/?a={{.a}}">open</a></td></tr>{{end}}</table></body></html>'
    )
    out = inline_css(html)
    assert '<p style="color: #222;">{{.name}}</p>' in out
    assert out.index("{{range .items}}") > out.index("<table>") and "{{end}}" in out
    assert "<title>{{.subject}}</title>" in out and "@media (max-width: 600px)" in out
    assert 'href="https://x.test/?a={{.a}}"' in out


def test_directives():
    found = directives("<!-- emailops: inline-css; off=contrast,link-text -->")
    assert found.inline_css and found.off == {"contrast", "link-text"}
    assert directives("<p>no directive</p>").off == frozenset()


REPORT = """8.7/5.0
Spam detection software, running on the system "vm",

Content analysis details:   (8.7 points, 5.0 required)

 pts rule name              description
---- ---------------------- --------------------------------------------------
 2.9 MONEY_BACK             BODY: Money back guarantee
-0.0 NO_RELAYS              Informational: message was not relayed via SMTP
 1.4 HTML_IMAGE_ONLY_12     BODY: HTML: images with 800-1200 bytes of
                            words
"""


def test_spamc_report_is_read_into_the_score_and_its_rules():
    from emailops.core.template_spam import spam_findings
    from emailops.spamd import parse_report

    score = parse_report(REPORT)
    assert score.score == 8.7
    assert score.rules[2] == (
        1.4,
        "HTML_IMAGE_ONLY_12",
        "BODY: HTML: images with 800-1200 bytes of words",
    )
    [warning] = spam_findings(score, key="default/t.html", organization=None)
    assert warning.severity == "warning" and warning.message.index(
        "MONEY_BACK"
    ) < warning.message.index("HTML_IMAGE")
    [note] = spam_findings(score, key="default/t.html", organization=None, threshold=9)
    assert note.severity == "note"
    assert parse_report("") is None


def test_the_scored_message_is_the_full_mime_message():
    from email import message_from_bytes

    from emailops.core.template_spam import full_message

    message = message_from_bytes(
        full_message(subject="Hi", html="<p>x</p>", text="x", sender="P <support@pennsieve.io>")
    )
    assert (
        message["Subject"] == "Hi" and message["Date"] and "@pennsieve.io>" in message["Message-ID"]
    )
    assert [p.get_content_type() for p in message.get_payload()] == ["text/plain", "text/html"]


def test_the_same_render_is_scored_once():
    from emailops.core.template_spam import SpamScore, full_message
    from emailops.spamd import SpamdScorer

    scorer = SpamdScorer("127.0.0.1:9")
    one = full_message(subject="Hi", html="<p>x</p>", text="x", sender="a@b.test")
    scorer._cache[__import__("emailops.spamd").spamd._digest(one)] = SpamScore(1.0, ())
    again = re.sub(rb"Date: [^\n]*", b"Date: Wed, 09 Dec 2026 10:00:00 GMT", one)
    assert again != one and scorer.score(again) == SpamScore(1.0, ())
    other = full_message(subject="Hi", html="<p>y</p>", text="y", sender="a@b.test")
    assert scorer.score(other) == "spamd not reachable at 127.0.0.1:9"


def test_the_dark_previews():
    from emailops.core.template_dark_preview import forced_inversion, prefers_dark

    html = (
        "<html><head><style>@media (prefers-color-scheme: dark) { p { color: #fff } }</style>"
        "</head><body><p>x</p></body></html>"
    )
    dark = prefers_dark(html)
    assert "@media all { p { color: #fff } }" in dark and "color-scheme:dark" in dark
    inverted = forced_inversion(html)
    assert inverted.index("filter:invert(1)") < inverted.index("<body>")
    assert "img,picture" in inverted  # images inverted back: kept as they are
    assert forced_inversion("<!DOCTYPE html>\n<html><body>x</body></html>").startswith(
        "<!DOCTYPE html>\n<html><style>"
    )  # never before the doctype: no quirks mode
