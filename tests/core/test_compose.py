"""Compose: messageId → mapping → branded or default template → subject and body."""

from __future__ import annotations

import pytest

from emailops.core.compose import Composer, html_to_text
from emailops.core.errors import (
    TemplateError,
    TemplateNotFound,
    TransientError,
    UnknownMessageId,
)
from emailops.core.ports import TemplateMapping
from emailops.core.rendering import Renderer
from tests.fakes import DictMappings, DictTemplates, EtagTemplates

MAPPING = TemplateMapping("welcome", "welcome.html", "Welcome, {{.name}} & co")


@pytest.fixture
def templates() -> DictTemplates:
    return DictTemplates(
        {
            "default/welcome.html": "<p>Hello {{.name}}</p>",
            "custom/O367/welcome.html": "<p>Branded hello {{.name}}</p>",
        }
    )


@pytest.fixture
def composer(templates) -> Composer:
    return Composer(mappings=DictMappings(MAPPING), templates=templates, renderer=Renderer())


def test_unknown_message_id(composer, templates):
    with pytest.raises(UnknownMessageId) as info:
        composer.compose("nope", {}, None)
    assert info.value.key == "nope"
    assert info.value.permanent
    assert templates.reads == []


def test_default_template_without_organization(composer, templates):
    composed = composer.compose("welcome", {"name": "Ann"}, None)
    assert composed.template_key == "default/welcome.html"
    assert composed.html == "<p>Hello Ann</p>"
    assert composed.mapping == MAPPING
    assert templates.reads == ["default/welcome.html"]


def test_branded_template_when_the_organization_has_one(composer, templates):
    composed = composer.compose("welcome", {"name": "Ann"}, "367")
    assert composed.template_key == "custom/O367/welcome.html"
    assert composed.html == "<p>Branded hello Ann</p>"
    assert templates.reads == ["custom/O367/welcome.html"]


def test_default_template_when_the_organization_has_none(composer, templates):
    composed = composer.compose("welcome", {"name": "Ann"}, "12")
    assert composed.template_key == "default/welcome.html"
    assert templates.reads == ["custom/O12/welcome.html", "default/welcome.html"]


def test_organization_id_is_used_verbatim_in_the_key(composer, templates):
    composer.compose("welcome", {}, "0367")
    assert templates.reads[0] == "custom/O0367/welcome.html"


def test_missing_default_template(templates):
    del templates.templates["default/welcome.html"]
    composer = Composer(mappings=DictMappings(MAPPING), templates=templates, renderer=Renderer())
    with pytest.raises(TemplateNotFound) as info:
        composer.compose("welcome", {}, None)
    assert info.value.key == "default/welcome.html"
    assert info.value.permanent
    # ...but the branded one still serves its organization.
    assert composer.compose("welcome", {}, "367").template_key == "custom/O367/welcome.html"


def test_default_subject_is_a_plain_text_template(composer):
    composed = composer.compose("welcome", {"name": "<Ann>"}, None)
    assert composed.subject == "Welcome, <Ann> & co"
    assert composed.html == "<p>Hello &lt;Ann&gt;</p>"


def test_context_subject_overrides_and_is_itself_a_template(composer):
    composed = composer.compose(
        "welcome", {"name": "Ann", "subject": "Hi {{.name}} & {{ name }}"}, None
    )
    assert composed.subject == "Hi Ann & Ann"


@pytest.mark.parametrize("subject", ["", None, 5, ["x"], {"a": 1}])
def test_only_a_non_empty_string_subject_overrides(composer, subject):
    assert composer.compose("welcome", {"name": "A", "subject": subject}, None).subject == (
        "Welcome, A & co"
    )


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"name": "A\x0bBcc: eve@example.com"}, "subject"),  # the mapping's, rendered
        ({"name": "A", "subject": "Hi\x00there"}, "context.subject"),
        ({"name": "A", "subject": "Hi {{.x}}", "x": "\u2028Bcc: eve"}, "context.subject"),
    ],
)
def test_a_control_character_in_the_subject_is_refused_naming_its_source(composer, context, field):
    with pytest.raises(TemplateError) as info:
        composer.compose("welcome", context, None)
    assert info.value.key == "subject of welcome"
    assert info.value.reason.startswith(f"{field}: control character U+")


def test_missing_variables_from_subject_and_body_are_merged_once(templates):
    templates.templates["default/welcome.html"] = "{{.a}}{{.b}}{{.name}}"
    mapping = TemplateMapping("welcome", "welcome.html", "{{.b}}{{.c}}")
    composer = Composer(mappings=DictMappings(mapping), templates=templates, renderer=Renderer())
    assert composer.compose("welcome", {"name": "x"}, None).missing == ("b", "c", "a")


def test_a_broken_subject_or_body_is_a_template_error(templates):
    templates.templates["default/welcome.html"] = "ok\n{{if .x}}"
    composer = Composer(mappings=DictMappings(MAPPING), templates=templates, renderer=Renderer())
    with pytest.raises(TemplateError) as info:
        composer.compose("welcome", {}, None)
    assert info.value.key == "default/welcome.html"
    assert info.value.line == 2

    with pytest.raises(TemplateError) as info:
        composer.compose("welcome", {"subject": "{{ ''.__class__ }}"}, "367")
    assert "subject" in info.value.key


def test_store_errors_pass_through_with_their_kind(templates):
    mappings = DictMappings(MAPPING)
    composer = Composer(mappings=mappings, templates=templates, renderer=Renderer())
    mappings.error = TransientError("look up template mapping", reason="throttled")
    with pytest.raises(TransientError):
        composer.compose("welcome", {}, None)
    mappings.error = None
    templates.error = TransientError("fetch template", reason="503")
    with pytest.raises(TransientError):
        composer.compose("welcome", {}, None)


def test_text_part_is_readable(composer):
    composed = composer.compose("welcome", {"name": "Ann"}, None)
    assert composed.text == "Hello Ann\n"


def test_html_to_text():
    html = (
        "<html><head><style>p {color: red}</style><title>T</title></head><body>"
        "<h1>Title</h1><p>First &amp; <b>bold</b></p>"
        '<p>See <a href="https://app.pennsieve.io/x">the dataset</a>.</p>'
        "<ul><li>one</li><li>two</li></ul></body></html>"
    )
    text = html_to_text(html)
    assert "<" not in text
    assert "color: red" not in text
    assert "First & bold" in text
    assert "the dataset" in text and "https://app.pennsieve.io/x" in text
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[0] == "Title"
    assert lines.index("First & bold") < len(lines) - 1
    assert any("one" in line for line in lines) and any("two" in line for line in lines)
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_html_to_text_of_empty_html():
    assert html_to_text("") == "\n"


def test_the_composed_email_names_the_template_version_it_rendered():
    templates = EtagTemplates(
        {"default/welcome.html": "<p>Hi</p>", "custom/O367/welcome.html": "<p>Brand</p>"}
    )
    composer = Composer(mappings=DictMappings(MAPPING), templates=templates, renderer=Renderer())

    branded = composer.compose("welcome", {"name": "A"}, "367")
    default = composer.compose("welcome", {"name": "A"}, "999")

    assert branded.template_version == EtagTemplates.etag("<p>Brand</p>").strip('"')
    assert default.template_version == EtagTemplates.etag("<p>Hi</p>").strip('"')
    # A store that does not tell versions still composes, with no version.
    plain = Composer(
        mappings=DictMappings(MAPPING),
        templates=DictTemplates(templates.templates),
        renderer=Renderer(),
    )
    assert plain.compose("welcome", {}, None).template_version == ""
