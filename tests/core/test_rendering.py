"""Rendering in the Jinja2 sandbox: Go templates render as Go would, Jinja2 works alongside, the
sandbox holds, and every failure is a TemplateError that points at the author's line."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from emailops.core.errors import PermanentError, TemplateError
from emailops.core.rendering import Rendered, Renderer, go_format

CONTEXT = {
    "name": "Ann <b>&",
    "yes": True,
    "no": False,
    "zero": 0,
    "xs": ["a", "b", "c"],
    "nums": [1, 0],
    "empty": [],
    "m": {"b": 2, "a": 1, "c": 3},
    "emptymap": {},
    "user": {"first": "Ann", "last": "Lee", "tags": ["x", "y"]},
    "count": 367.0,
    "none": None,
    "title": "Top",
}


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return Renderer()


def body(renderer: Renderer, source: str, context: dict | None = None) -> str:
    return renderer.render_body(source, CONTEXT if context is None else context).text


# --- Go syntax renders as Go would -------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{.title}}", "Top"),
        ("{{ .title }}", "Top"),
        ("{{.user.first}} {{.user.last}}", "Ann Lee"),
        ("{{if .yes}}Y{{end}}", "Y"),
        ("{{if .no}}Y{{end}}", ""),
        ("{{if .yes}}Y{{else}}N{{end}}", "Y"),
        ("{{if .no}}Y{{else}}N{{end}}", "N"),
        ("{{if .zero}}a{{else if .no}}b{{else if .yes}}c{{else}}d{{end}}", "c"),
        ("{{if .zero}}a{{else if .no}}b{{else}}d{{end}}", "d"),
        ("{{if .empty}}a{{else}}b{{end}}", "b"),
        ("{{if .emptymap}}a{{else}}b{{end}}", "b"),
        ("{{if .missing}}a{{else}}b{{end}}", "b"),
        ("{{range .xs}}[{{.}}]{{end}}", "[a][b][c]"),
        ("{{range .m}}{{.}}{{end}}", "123"),  # a map yields its values in key order
        ("{{range .empty}}x{{else}}none{{end}}", "none"),
        ("{{range .emptymap}}x{{else}}none{{end}}", "none"),
        ("{{range .missing}}x{{else}}none{{end}}", "none"),
        ("{{range .xs}}{{$.title}}{{end}}", "TopTopTop"),
        ("{{range .xs}}{{range $.nums}}{{.}}{{end}};{{end}}", "10;10;10;"),
        ("{{with .user}}{{.first}}{{else}}nobody{{end}}", "Ann"),
        ("{{with .missing}}{{.}}{{else}}nobody {{.title}}{{end}}", "nobody Top"),
        ("{{with .user}}{{range .tags}}{{.}}{{$.title}}{{end}}{{.last}}{{end}}", "xTopyTopLee"),
        ("{{if .yes}}{{with .user}}{{range .tags}}<{{.}}>{{end}}{{end}}{{end}}", "<x><y>"),
        ("a  {{- .title -}}  b", "aTopb"),
        ("a\n\n  {{- .title}}", "aTop"),
        ("{{.title -}}\n\n  b", "Topb"),
        ("a {{/* a comment */}}b", "a b"),
        ("a {{- /* trimmed comment */ -}} b", "ab"),
        ("{{$.title}}", "Top"),
        ("{{not .yes}} {{not .no}}", "false true"),
        ("{{and .yes .zero}} {{and .yes .title}}", "0 Top"),
        ("{{or .zero .title}} {{or .no .zero}}", "Top 0"),
        ('{{eq .title "Top"}} {{eq .zero 0}} {{ne .zero 0}}', "true true false"),
        ("{{if and .yes (not .zero)}}ok{{end}}", "ok"),
        ("{{if eq (len .xs) 3}}three{{end}}", "three"),
        ("{{len .xs}} {{len .m}} {{len .title}}", "3 3 3"),
        ('{{index .xs 1}} {{index .m "c"}} {{index .user "tags" 0}}', "b 3 x"),
        ("{{lt .zero 1}} {{ge .zero 1}}", "true false"),
        ("{{.count}}", "367"),
    ],
)
def test_go_syntax(renderer, source, expected):
    assert body(renderer, source) == expected


def test_go_and_jinja_mixed_in_one_template(renderer):
    source = (
        "{% for t in user.tags %}{{ t|upper }}{% endfor %}|{{range .user.tags}}{{.}}{{end}}|"
        "{{ title|lower }}{{if .yes}}!{{end}}{% if yes %}?{% endif %}"
    )
    assert body(renderer, source) == "XY|xy|top!?"


def test_body_is_autoescaped_html(renderer):
    assert body(renderer, "<p>{{.name}}</p>") == "<p>Ann &lt;b&gt;&amp;</p>"
    assert body(renderer, "<p>{{ name }}</p>") == "<p>Ann &lt;b&gt;&amp;</p>"
    # `html` escapes once, not twice.
    assert (
        body(renderer, "{{.name | html}}|{{html .name}}") == "Ann &lt;b&gt;&amp;|Ann &lt;b&gt;&amp;"
    )


def test_subject_is_plain_text(renderer):
    rendered = renderer.render_subject("  {{.name}} & {{ title }} ", CONTEXT)
    assert rendered == Rendered(text="Ann <b>& & Top", missing=())


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\r\nb"])
def test_a_subject_must_be_one_line(renderer, value):
    with pytest.raises(TemplateError) as info:
        renderer.render_subject("Hi {{.x}}", {"x": value})
    assert "one line" in info.value.reason


@pytest.mark.parametrize(
    "control", ["\x00", "\t", "\x0b", "\x0c", "\x1c", "\x7f", "\x85", "\x9f", "\u2028", "\u2029"]
)
def test_a_subject_holds_no_control_character(renderer, control):
    with pytest.raises(TemplateError) as info:
        renderer.render_subject("Hi {{.x}}!", {"x": f"a{control}b"}, field="context.subject")
    assert info.value.reason.startswith(f"context.subject: control character U+{ord(control):04X}")


def test_a_subject_keeps_printable_text_of_any_script(renderer):
    assert renderer.render_subject("Zoë — 李 {{.x}}", {"x": "ünï\u00a0"}).text == "Zoë — 李 ünï"


def test_subject_surrounding_newlines_are_trimmed(renderer):
    assert renderer.render_subject("\n{{.x}}\n", {"x": "Hi"}).text == "Hi"


def test_same_source_as_body_and_subject_is_compiled_separately(renderer):
    source = "{{.x}}"
    assert renderer.render_body(source, {"x": "<&>"}).text == "&lt;&amp;&gt;"
    assert renderer.render_subject(source, {"x": "<&>"}).text == "<&>"
    assert renderer.render_body(source, {"x": "<&>"}).text == "&lt;&amp;&gt;"


# --- missing variables ---------------------------------------------------------------------------


def test_missing_variables_render_empty_and_are_reported(renderer):
    rendered = renderer.render_body(
        "[{{.gone}}][{{ also_gone }}][{{.user.nick}}][{{.title}}]", CONTEXT
    )
    assert rendered.text == "[][][][Top]"
    assert rendered.missing == ("gone", "also_gone", "nick")


def test_a_present_null_is_not_missing(renderer):
    assert renderer.render_body("[{{.none}}]", CONTEXT) == Rendered(text="[]", missing=())


def test_missing_names_are_reported_once(renderer):
    assert renderer.render_body("{{.a}}{{.a}}{{ a }}", {}).missing == ("a",)


def test_a_missing_list_index_is_reported_as_text(renderer):
    """`{{index .xs 5}}` on a short list: the report must be strings (the pipeline joins them)."""
    rendered = renderer.render_body("[{{index .xs 5}}][{{ xs[0] }}]", {"xs": []})
    assert rendered.text == "[][]"
    assert rendered.missing == ("5", "0")
    assert all(isinstance(name, str) for name in rendered.missing)


def test_missing_is_per_render_even_across_threads(renderer):
    def render(i: int) -> tuple[str, ...]:
        return renderer.render_body(f"{{{{.v{i % 5}}}}}{{{{.shared}}}}", {"shared": 1}).missing

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(render, range(200)))
    assert results == [(f"v{i % 5}",) for i in range(200)]


# --- the sandbox ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ joiner.__init__.__globals__.os }}",
        "{{ namespace.__init__.__globals__['os'] }}",
        "{{ range.__globals__ }}",
        "{{ self.__init__ }}",
        "{{ xs|attr('__class__') }}",
        "{{ missing.__class__ }}",
        "{{ title.__len__() }}",
        "{{ .xs.__class__ }}",
    ],
)
def test_reaching_python_internals_is_a_template_error(renderer, source):
    with pytest.raises(TemplateError) as info:
        renderer.render_body(source, {"xs": [1], "title": "t"})
    assert "sandbox" in info.value.reason
    assert isinstance(info.value, PermanentError)


@pytest.mark.parametrize(
    "source",
    [
        "{{ xs.append(4) }}",
        "{% do xs.append(4) %}",
        "{{ xs.pop() }}",
        "{{ (xs|attr('append'))(4) }}",
        "{{ d.update({'k': 'hacked'}) }}",
        "{{ d.clear() }}",
        "{{ .xs.append }}",
    ],
)
def test_mutating_the_context_is_refused_and_never_happens(renderer, source):
    xs, d = [1, 2, 3], {"k": "v"}
    with pytest.raises(TemplateError):
        renderer.render_body(source, {"xs": xs, "d": d})
    assert xs == [1, 2, 3]
    assert d == {"k": "v"}


@pytest.mark.parametrize(
    "source",
    [
        "{{ range(10**9)|list|length }}",
        "{% for i in range(100000000) %}{% endfor %}",
    ],
)
def test_huge_ranges_are_refused(renderer, source):
    with pytest.raises(TemplateError):
        renderer.render_body(source, {})


# --- errors carry the template line -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("line 1\n{% if %}\n", 2),
        ("a\nb\n{{ foo( }}", 3),
        ("a\n{% for x in xs %}\n", 2),
        ("{% endif %}", 1),
        ("a\n{{if .x}}\nb\n", 2),  # Go: unclosed {{if}}
        ("a\nb\n{{end}}", 3),  # Go: stray {{end}}
        ("a\n{{else}}", 2),  # Go: stray {{else}}
        ("a\n{{if .x}}{{end}}\n\n{% endfor %}", 4),
    ],
)
def test_syntax_errors_carry_the_line(renderer, source, line):
    with pytest.raises(TemplateError) as info:
        renderer.check(source, name="default/t.html")
    assert info.value.line == line
    assert info.value.key == "default/t.html"
    assert info.value.what == "compile template"
    with pytest.raises(TemplateError):  # a failed compile is not cached as a success
        renderer.render_body(source, {}, name="default/t.html")


# Line 5 opens a block that is never closed; line 6 has an action (or text) of its own.
def unclosed_on_line_5(opener: str) -> str:
    return f"<p>a</p>\n<p>b</p>\n<p>c</p>\n<p>d</p>\n{opener}\n<p>{{{{ .y }}}}</p>\n<p>f</p>\n"


@pytest.mark.parametrize(
    ("opener", "words"),
    [
        ("{{if .x}}", "{{if}} opened on line 5 is never closed with {{end}}"),
        ("{{range .xs}}", "{{range}} opened on line 5 is never closed with {{end}}"),
        ("{{with .x}}", "{{with}} opened on line 5 is never closed with {{end}}"),
        ("{% if x %}", "{% if %} opened on line 5 is never closed with {% endif %}"),
        ("{% for x in xs %}", "{% for %} opened on line 5 is never closed with {% endfor %}"),
        ("{% with a = 1 %}", "{% with %} opened on line 5 is never closed with {% endwith %}"),
        ("{%- if x -%}", "{% if %} opened on line 5 is never closed with {% endif %}"),
    ],
)
def test_an_unclosed_block_names_the_line_it_was_opened_on(renderer, opener, words):
    with pytest.raises(TemplateError) as info:
        renderer.check(unclosed_on_line_5(opener), name="default/t.html")
    assert (info.value.line, info.value.reason) == (5, words)


def test_an_unclosed_jinja_block_among_closed_ones_is_the_one_named(renderer):
    source = (
        "{% if a %}\n{% for x in xs %}{{ x }}{% endfor %}\n{% set t = 1 %}"
        "{% set block %}b{% endset %}\n{% if b %}\n{% with c = 1 %}{% endwith %}\n{% endif %}\n"
    )
    with pytest.raises(TemplateError) as info:
        renderer.check(source)
    assert info.value.line == 1 and info.value.reason.startswith("{% if %} opened on line 1 ")


def test_variables_names_the_line_an_unclosed_block_was_opened_on(renderer):
    with pytest.raises(TemplateError) as info:
        renderer.variables(unclosed_on_line_5("{% if x %}"))
    assert info.value.line == 5 and "opened on line 5" in info.value.reason


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("<p>\n{{ .teamName </p>\nmore\n", 2),  # nothing closes it: Jinja said "unexpected '.'"
        ("<p>\n{{ .teamName </p>\nmore {{ .x }}\n", 2),  # the next action's }} swallowed it
        ("{{if .x}}\n{{ .teamName </p>\n{{end}}\n", 2),  # ... and the {{end}} with it
        ("{{ teamName </p>\n", 1),  # Jinja syntax
        ("{{if .x}}\n{{ teamName </p>\n{{end}}\n", 2),  # not "{{if}} never closed"
        ('{{ "}}" }} it\'s\n{{ .b </p>', 2),  # a }} in a string closes nothing
        ("{% raw %}{{{% endraw %}\n{# {{ #}\n{{/* {{ */}}\n{{ .b </p>\n", 4),
    ],
)
def test_an_action_never_closed_names_its_line(renderer, source, line):
    with pytest.raises(TemplateError) as info:
        renderer.check(source, name="default/t.html")
    assert info.value.line == line
    assert info.value.reason.startswith(f"{{{{ on line {line} has no matching }}}}")
    assert info.value.what == "compile template" and info.value.key == "default/t.html"


def test_an_unclosed_action_is_named_by_variables_too(renderer):
    with pytest.raises(TemplateError) as info:
        renderer.variables("<p>\n{{ .teamName </p>\n")
    assert info.value.line == 2 and "has no matching }}" in info.value.reason


@pytest.mark.parametrize(
    "source",
    [
        "{% raw %}{{ x{% endraw %} {{ y }}",
        "{# {{ #}{{ y }}",
        '{{ "{{" }}',
        "{{/* {{ */}}{{ .y }}",
        '{{ "}}" }} {{ .y }}',
    ],
)
def test_a_brace_pair_that_opens_no_action_compiles(renderer, source):
    renderer.check(source)


def test_check_accepts_good_templates(renderer):
    renderer.check("{{.a}}{% if b %}{{ b }}{% endif %}")
    renderer.check("Subject {{.a}}", html=False)


@pytest.mark.parametrize(
    ("source", "context", "line"),
    [
        ("line 1\n{{ 1 / zero }}\nline 3", {"zero": 0}, 2),
        ("a\n\n{{ name + 1 }}", {"name": "n"}, 3),
        ("{% for n in nums %}\n{{ 10 // n }}{% endfor %}", {"nums": [1, 0]}, 2),
        ("{{range .nums}}\n{{.}}{{end}}{{ 1 % 0 }}", {"nums": [1]}, 2),
        ("x\n{{ 'a'|int + none_value }}", {"none_value": None}, 2),
    ],
)
def test_runtime_errors_carry_the_line(renderer, source, context, line):
    with pytest.raises(TemplateError) as info:
        renderer.render_body(source, context)
    assert info.value.line == line
    assert info.value.what == "render template"


def test_sandbox_errors_carry_the_line(renderer):
    with pytest.raises(TemplateError) as info:
        renderer.render_body("ok\nok\n{{ ''.__class__ }}", {})
    assert info.value.line == 3


# --- variables() ------------------------------------------------------------------------------


def test_variables_lists_top_level_names_in_both_syntaxes(renderer):
    source = (
        "{{.a}} {{ b }} {{$.c}} {{range .xs}}{{.inner}}{{$.d}}{{end}} "
        "{% for i in items %}{{ i.name }}{{ loop.index }}{% endfor %} "
        "{{with .w}}{{.v}}{{end}} {{.if}} {{ e.f.g }} {% set t = 1 %}{{ t }} "
        '{{if eq .k "x"}}{{end}}{{index .m "key"}}{{ range(2)|list }}'
    )
    assert renderer.variables(source) == {
        "a", "b", "c", "d", "xs", "items", "w", "if", "e", "k", "m",
    }  # fmt: skip


def test_variables_of_a_broken_template_is_a_template_error(renderer):
    with pytest.raises(TemplateError) as info:
        renderer.variables("a\n{{if .x}}")
    assert info.value.line == 2
    with pytest.raises(TemplateError) as info:
        renderer.variables("a\n\n{% if %}")
    assert info.value.line == 3


# --- go_format ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "true"),
        (False, "false"),
        (None, ""),
        (367.0, "367"),
        (-2.0, "-2"),
        (2.5, "2.5"),
        (367, 367),
        ("s", "s"),
        ([], "[]"),
        (["a", "b"], "[a b]"),
        ([1.0, True, "x"], "[1 true x]"),
        ({"b": 2, "a": "x"}, "map[a:x b:2]"),
        ({"k": [1, {"z": False}]}, "map[k:[1 map[z:false]]]"),
        ({}, "map[]"),
    ],
)
def test_go_format(value, expected):
    assert go_format(value) == expected


def test_go_format_in_templates(renderer):
    context = {"t": True, "n": None, "f": 367.0, "l": ["a", 1.0], "m": {"b": True, "a": [1]}}
    assert body(renderer, "{{.t}}|{{.n}}|{{.f}}|{{.l}}|{{.m}}", context) == (
        "true||367|[a 1]|map[a:[1] b:true]"
    )
    assert body(renderer, "{{ t }}|{{ n }}|{{ f }}", context) == "true||367"


@pytest.mark.parametrize(
    "source",
    [
        "{{ n ** 3000000 }}",
        "{{ ('x' * 10**9)|length }}",
        "{{ [1] * 1000000 }}",
        "{{ 3 * 'ab' * 60000 }}",
    ],
)
def test_templates_cannot_burn_cpu_or_memory(source):
    with pytest.raises(TemplateError, match="blocked by the sandbox"):
        Renderer().render_body(source, {"n": 7})


def test_ordinary_arithmetic_and_repetition_still_work():
    out = Renderer().render_body("{{ 2 ** 10 }} {{ 'ab' * 3 }} {{ 3 * 4 }} {{ 1.5 ** 2 }}", {})
    assert out.text == "1024 ababab 12 2.25"


def test_go_keywords_may_be_followed_by_any_whitespace():
    source = "{{if\t.x}}a{{else if\n.y}}b{{end}}|{{range\t.xs}}{{.}}{{end}}"
    assert Renderer().render_body(source, {"y": 1, "xs": [1, 2]}).text == "b|12"


# --- nothing a template prints is a function ---------------------------------------------------


@pytest.mark.parametrize("name", ["lipsum", "cycler", "joiner"])
def test_the_function_globals_are_gone(renderer, name):
    """The finding: `{{ lipsum|string }}` in a context.subject put a function's memory address
    in the subject line. lipsum, cycler and joiner are of no use in an email."""
    for source in (f"{{{{ {name}|string }}}}", f"{{{{ {name} }}}}", f"{{{{ {name} ~ '' }}}}"):
        assert renderer.render_subject(source, {}).text == ""


@pytest.mark.parametrize(
    "source",
    [
        "{{ range|string }}",
        "{{ range }}",
        "{{ range ~ '' }}",
        "{{ [range] }}",
        "{{ [range]|join(',') }}",
        "{{ 'x'.upper }}",
        "{{ 'x'.upper|string }}",
        "{{ '%s'|format(range) }}",
        "{{ '%s' % range }}",
        "{{ '{}'.format(range) }}",
        "{{ {'a': range}|string }}",
        "{{ dict|string }}",
        "{% macro m() %}{% endmacro %}{{ m|string }}",
        "{% for x in [1] %}{{ loop.cycle|string }}{% endfor %}",
        "{{ (range|default(1))|pprint }}",
    ],
)
def test_a_function_or_method_never_prints(renderer, source):
    with pytest.raises(TemplateError) as info:
        renderer.render_subject(source, {})
    assert "function" in info.value.reason
    assert "0x" not in info.value.reason


def test_functions_still_work_where_they_are_called(renderer):
    source = "{% for i in range(3) %}{{ i }}{% endfor %} {{ 'x'.upper() }} {{ range is defined }}"
    assert renderer.render_subject(source, {}).text == "012 X true"


@pytest.mark.parametrize(
    ("source", "context", "expected"),
    [
        ("{{.range}}", {"range": "R"}, "R"),
        ("{{.lipsum}}", {"lipsum": "L"}, "L"),
        ("{{.cycler}}|{{.namespace}}|{{.dict}}", {"dict": "D"}, "||D"),
        ("{{.range}}", {}, ""),  # missing: empty, as any missing field, never the global
        ("{{if .range}}yes{{else}}no{{end}}", {}, "no"),
        ("{{.range.x}}", {"range": {"x": 1}}, "1"),
        ("{{len .range}}", {"range": [1, 2]}, "2"),
    ],
)
def test_a_go_field_always_reads_the_context(renderer, source, context, expected):
    assert renderer.render_subject(source, context).text == expected
