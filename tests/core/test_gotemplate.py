"""Go text/template actions translated to Jinja2: the translation itself, its errors and lines.

How the translated templates *render* is tested in test_rendering.py."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emailops.core.errors import TemplateError
from emailops.core.gotemplate import translate, unclosed_action_error


@pytest.mark.parametrize(
    ("go", "jinja"),
    [
        ("{{.name}}", "{{ _root['name'] }}"),
        ("{{ .name }}", "{{ _root['name'] }}"),
        ("{{.a.b.c}}", "{{ _root['a']['b']['c'] }}"),
        ("{{.}}", "{{ _root }}"),
        ("{{$}}", "{{ _root }}"),
        ("{{$.x}}", "{{ _root['x'] }}"),
        ("{{.if}}", "{{ _root['if'] }}"),  # a Jinja keyword as a field name
        ("{{.loop}}", "{{ _root['loop'] }}"),
        ("{{if .x}}a{{end}}", "{% if _root['x'] %}a{% endif %}"),
        ("{{if .x}}a{{else}}b{{end}}", "{% if _root['x'] %}a{% else %}b{% endif %}"),
        (
            "{{if .x}}a{{else if .y}}b{{end}}",
            "{% if _root['x'] %}a{% elif _root['y'] %}b{% endif %}",
        ),
        (
            "{{range .xs}}{{.}}{{end}}",
            "{% for _dot1 in (_root['xs'])|go_range %}{{ _dot1 }}{% endfor %}",
        ),
        (
            "{{with .u}}{{.n}}{{end}}",
            "{% with _dot1 = _root['u'] %}{% if _dot1 %}{{ _dot1['n'] }}{% endif %}{% endwith %}",
        ),
        ("{{not .x}}", "{{ (not _root['x']) }}"),
        ("{{and .x .y .z}}", "{{ (_root['x'] and _root['y'] and _root['z']) }}"),
        ("{{or .x .y}}", "{{ (_root['x'] or _root['y']) }}"),
        ('{{eq .x "a"}}', "{{ (_root['x'] == \"a\") }}"),
        ("{{ne .x 1}}", "{{ (_root['x'] != 1) }}"),
        ("{{lt .x 1.5}}", "{{ (_root['x'] < 1.5) }}"),
        ("{{le .x 1}}", "{{ (_root['x'] <= 1) }}"),
        ("{{gt .x 1}}", "{{ (_root['x'] > 1) }}"),
        ("{{ge .x -1}}", "{{ (_root['x'] >= -1) }}"),
        ("{{len .xs}}", "{{ (_root['xs']|length) }}"),
        ('{{index .m "k" 0}}', "{{ _root['m'][\"k\"][0] }}"),
        ("{{html .x}}", "{{ (_root['x']|e) }}"),
        ("{{.x | html}}", "{{ (_root['x']|e) }}"),
        ("{{.x | urlquery}}", "{{ (_root['x']|urlencode) }}"),
        ("{{print .a .b}}", "{{ (_root['a'] ~ _root['b']) }}"),
        ("{{.x | printf_free | html}}", None),  # unsupported function: see the errors below
        (
            "{{if and .x (not .y)}}a{{end}}",
            "{% if (_root['x'] and ((not _root['y']))) %}a{% endif %}",
        ),
        ("{{eq .x `raw`}}", "{{ (_root['x'] == 'raw') }}"),
        ("{{eq .x nil}}", "{{ (_root['x'] == none) }}"),
        ("{{if eq .x true}}t{{end}}", "{% if (_root['x'] == true) %}t{% endif %}"),
        ("a{{/* note */}}b", "a{##}b"),
        ("a {{- .x -}} b", "a {{- _root['x'] -}} b"),
        ("a {{- if .x -}} b {{- end -}} c", "a {%- if _root['x'] -%} b {%- endif -%} c"),
        ("{{-.x}}", "{{-.x}}"),  # Go needs a space after `{{-`: not a trim marker, and not Go
    ],
)
def test_translations(go, jinja):
    if jinja is None:
        with pytest.raises(TemplateError):
            translate(go)
        return
    assert translate(go) == jinja


def test_nested_blocks_restore_dot_after_end_and_in_else():
    source = "{{range .xs}}{{.a}}{{with .b}}{{.c}}{{else}}{{.d}}{{end}}{{.e}}{{end}}{{.f}}"
    assert translate(source) == (
        "{% for _dot1 in (_root['xs'])|go_range %}{{ _dot1['a'] }}"
        "{% with _dot2 = _dot1['b'] %}{% if _dot2 %}{{ _dot2['c'] }}"
        "{% else %}{{ _dot1['d'] }}{% endif %}{% endwith %}"
        "{{ _dot1['e'] }}{% endfor %}{{ _root['f'] }}"
    )


def test_dollar_is_the_root_inside_any_block():
    assert translate("{{range .xs}}{{$.title}}{{$}}{{end}}") == (
        "{% for _dot1 in (_root['xs'])|go_range %}{{ _root['title'] }}{{ _root }}{% endfor %}"
    )


@pytest.mark.parametrize(
    "jinja",
    [
        "{{ name }}",
        "{{ user.name }}",
        "{{ items|join(', ') }}",
        "{% if x %}{{ x }}{% endif %}",
        "{{ 'a' if x else 'b' }}",
        "{{ 1.5 }}",
        "{{ {'a': 1}['a'] }}",
        '{{ "a $" ~ name }}',
        "{# a comment #}",
        "plain text with { braces } and }} and {{",
        "{{ loop.index }}",
    ],
)
def test_jinja_is_left_alone(jinja):
    assert translate(jinja) == jinja


def test_go_and_jinja_mix():
    source = "{% if a %}{{ a }}{% endif %} {{.b}} {{ c.d }} {{if .e}}{{ f }}{{end}}"
    assert translate(source) == (
        "{% if a %}{{ a }}{% endif %} {{ _root['b'] }} {{ c.d }} {% if _root['e'] %}{{ f }}{% endif %}"
    )


def test_multi_line_actions_keep_their_newlines():
    source = "a\n{{if and .x\n  .y}}b{{end}}\n{{/* one\ntwo */}}c"
    out = translate(source)
    assert out.count("\n") == source.count("\n")
    assert out == "a\n{% if (_root['x'] and _root['y']) %}{#\n#}b{% endif %}\n{##}{#\n#}c"


@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["{{.a}}", "{{if .b}}", "{{else}}", "{{end}}", "x\n", "\n", "{{ c }}", "{{/* c\n */}}"]
        ),
        max_size=12,
    )
)
def test_line_count_is_always_preserved(parts):
    source = "".join(parts)
    try:
        out = translate(source)
    except TemplateError:
        return
    assert out.count("\n") == source.count("\n")


# --- errors, with the author's line ------------------------------------------------------------


# A 6-line file whose line 5 opens a block that is never closed; line 6 has an action of its own.
UNCLOSED_ON_LINE_5 = "<p>a</p>\n<p>b</p>\n<p>c</p>\n<p>d</p>\n{{%s .x}}\n<p>{{ .y }}</p>\n"


@pytest.mark.parametrize("kind", ["if", "range", "with"])
def test_an_unclosed_block_names_the_line_it_was_opened_on(kind):
    with pytest.raises(TemplateError) as info:
        translate(UNCLOSED_ON_LINE_5 % kind)
    assert info.value.line == 5
    assert info.value.reason == f"{{{{{kind}}}}} opened on line 5 is never closed with {{{{end}}}}"


def test_the_innermost_unclosed_block_is_named():
    with pytest.raises(TemplateError) as info:
        translate("{{if .a}}\n{{range .xs}}\n{{.}}\n{{if .b}}{{end}}\n")
    assert info.value.line == 2 and "{{range}} opened on line 2" in info.value.reason


def test_an_action_never_closed_is_named_not_the_action_it_ran_into():
    with pytest.raises(TemplateError) as info:
        translate("<p>\n{{ .teamName </p>\n<p>{{ .x }}</p>\n")
    assert info.value.line == 2
    assert info.value.reason.startswith("{{ on line 2 has no matching }}")
    assert "{{ .teamName </p>" in info.value.reason


@pytest.mark.parametrize(
    "source",
    [
        "{{/* }}" * 70_000,  # comments never closed: was minutes, searching for */ at each one
        "{{ ' }}" * 70_000,  # quotes on one long line
        "{{ x }}" * 70_000 + "{{ .y",
    ],
)
def test_looking_for_an_unclosed_action_is_linear(source):
    started = time.perf_counter()
    unclosed_action_error(source)
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    ("source", "line", "words"),
    [
        ("a\n{{if .x}}\nb\n", 2, "never closed"),
        ("{{range .xs}}\n{{with .y}}\n{{end}}\n", 1, "{{range}} opened on line 1 is never closed"),
        ("a\nb\n{{end}}", 3, "{{end}} without"),
        ("{{if .x}}{{end}}\n{{end}}", 2, "{{end}} without"),
        ("\n{{else}}", 2, "{{else}} without"),
        ("{{if .x}}\n{{else}}\n{{else}}{{end}}", 3, "second {{else}}"),
        ("{{range .xs}}\n{{else if .y}}{{end}}", 2, "{{else if}} outside"),
        ("{{if .x}}{{else}}\n{{else if .y}}{{end}}", 2, "{{else if}} outside"),
        ("\n\n{{.x.}}", 3, "unexpected"),
        ("{{ .x ) }}", 1, "unexpected ')'"),
        ("{{.x | .y}}", 1, "cannot pipe"),
        ("{{if (eq .x 1}}{{end}}", 1, "unclosed '('"),
        ("{{.x | frobnicate}}", 1, "'frobnicate'"),
        ("{{if eq .x}}{{end}}", 1, "'eq' with 1 argument"),
        ("{{ .x @ }}", 1, "cannot read"),
    ],
)
def test_go_errors_name_the_line(source, line, words):
    with pytest.raises(TemplateError) as info:
        translate(source, name="default/t.html")
    assert info.value.line == line
    assert words in info.value.reason
    assert info.value.key == "default/t.html"
    assert info.value.permanent
