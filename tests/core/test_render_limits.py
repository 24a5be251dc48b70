"""Bounded rendering (issue 8 point 1): no template, however small, may use unbounded CPU, memory or
time. Every probe fails as a plain TemplateError, within 1 s of CPU and with RSS growth under 50 MB
(measured in a subprocess, so one probe's memory cannot hide behind another test's)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from emailops.core import render_limits
from emailops.core.errors import PermanentError, TemplateError
from emailops.core.render_limits import Limits
from emailops.core.rendering import Renderer

ROOT = Path(__file__).resolve().parents[2]
NS = "{% set ns = namespace(s='a', l=[1], t=(1,), x=3) %}"
DOUBLE = "{% for i in range(60) %}"

# name -> (template, words the error must contain)
PROBES: dict[str, tuple[str, str]] = {
    # formatting
    "percent width": ("{{ '%0999999999d' % 1 }}", "format width 999999999 is too large"),
    "percent %s width": ("{{ '%999999999s' % 'x' }}", "format width"),
    "percent precision": ("{{ '%.999999999f' % 1.5 }}", "format width"),
    "percent star width": ("{{ '%*d' % (999999999, 1) }}", "'*' widths"),
    "percent mapping key": ("{{ '%(a)999999999s' % {'a': 1} }}", "format width"),
    "format filter": ("{{ '%0999999999d'|format(1) }}", "format width"),
    "str.format width": ("{{ '{:>999999999}'.format(1) }}", "format width"),
    "str.format nested width": ("{{ '{:>{w}}'.format(1, w=999999999) }}", "format width"),
    "str.format_map": ("{{ '{x:>999999999}'.format_map({'x': 1}) }}", "format width"),
    "format via attr": ("{{ ('{:>999999999}'|attr('format'))(1) }}", "format width"),
    "Markup.format": ("{{ ('{:>999999999}'|safe).format(1) }}", "format width"),
    # padding, wrapping
    "center filter": ("{{ 'a'|center(1000000000) }}", "width 1000000000 is too large"),
    "center of a power": ("{{ 'a'|center(10**9) }}", "too large"),
    "str.center": ("{{ 'a'.center(1000000000) }}", "center() 1000000000 is too large"),
    "str.ljust": ("{{ 'a'.ljust(1000000000) }}", "too large"),
    "str.zfill": ("{{ '1'.zfill(1000000000) }}", "too large"),
    "int.to_bytes": ("{{ (1).to_bytes(1000000000, 'big') }}", "too large"),
    "str.expandtabs": ("{{ ('\\t' * 100000).expandtabs(10000) }}", "longer than 1 MB"),
    "indent width": ("{{ ('a\\n' * 1000)|indent(100000000) }}", "indent 100000000"),
    "indent by a long string": ("{{ ('a\\n' * 50000)|indent('x' * 50000) }}", "longer than 1 MB"),
    "wordwrap width": ("{{ 'a b'|wordwrap(1000000000) }}", "too large"),
    "wordwrap wrapstring": (
        "{{ ('a ' * 50000)|wordwrap(1, wrapstring='x' * 50000) }}",
        "longer than 1 MB",
    ),
    "map to center": ("{{ ['a']|map('center', 1000000000)|list }}", "too large"),
    # growth in a loop
    "~ doubling": (NS + DOUBLE + "{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "longer than 1 MB"),
    "+ doubling": (NS + DOUBLE + "{% set ns.s = ns.s + ns.s %}{% endfor %}", "longer than 1 MB"),
    "list + doubling": (NS + DOUBLE + "{% set ns.l = ns.l + ns.l %}{% endfor %}", "100,000 items"),
    "replace growth": (
        NS + DOUBLE + "{% set ns.s = ns.s|replace('a', 'aaaa') %}{% endfor %}",
        "longer than 1 MB",
    ),
    "str.replace growth": (
        NS + DOUBLE + "{% set ns.s = ns.s.replace('a', 'aaaa') %}{% endfor %}",
        "longer than 1 MB",
    ),
    "squaring a number": (
        NS + DOUBLE + "{% set ns.x = ns.x * ns.x %}{% endfor %}",
        "larger than 4096 bits",
    ),
    "power": ("{{ 2 ** 100000000 }}", "too large"),
    "repeat": ("{{ 'x' * 1000000000 }}", "repeating"),
    # structures that share themselves: tiny in memory, astronomically large when printed
    "nested list printed": (
        NS + DOUBLE + "{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}",
        "100,000 items",
    ),
    "nested tuples hashed": (
        NS + DOUBLE + "{% set ns.t = (ns.t, ns.t) %}{% endfor %}{{ [ns.t]|unique|list }}",
        "100,000 items",
    ),
    "shared list repeated": ("{% set big = [range(1000)|list] %}{{ big * 100000 }}", "items"),
    "shared list joined by +": (
        NS + "{% set ns.l = [range(1000)|list] %}" + DOUBLE + "{% set ns.l = ns.l + ns.l %}"
        "{% endfor %}{{ ns.l }}",
        "100,000 items",
    ),
    "nested list as JSON": (
        NS + DOUBLE + "{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|tojson }}",
        "100,000 items",
    ),
    "namespace holding itself": (NS + "{% set ns.me = ns %}{{ ns }}", "100,000 items"),
    "list of big strings as a string": (
        "{% set big = ['x' * 100000] * 50000 %}{{ big|string }}",
        "longer than 1 MB",
    ),
    "JSON indent": ("{{ range(50000)|list|tojson(indent=10000) }}", "longer than 1 MB"),
    # joining
    "join filter": ("{{ range(100000)|join('x' * 100000) }}", "longer than 1 MB"),
    "str.join": ("{{ ('x' * 100000).join(range(100000)|map('string')) }}", "longer than 1 MB"),
    "str.translate": ("{{ 'a'.translate({97: 'xx'}) }}", "translate() is not allowed"),
    "join by attribute": (
        "{% set rows = [{'x': 'y' * 100000}] * 20000 %}{{ rows|join(',', attribute='x') }}",
        "longer than 1 MB",
    ),
    # comparing and hashing a list of 20,000 references to one 100 KB string: 2 GB to compare
    "sort of shared big strings": (
        "{% set big = ['y' * 100000] * 20000 %}{{ (big + ['z'])|sort|first }}",
        "longer than 1 MB",
    ),
    "list.count": (
        "{% set big = ['y' * 100000] * 20000 %}{{ big.count('y' * 99999 ~ 'y') }}",
        "longer than 1 MB",
    ),
    "is in test": (
        "{% set big = ['y' * 100000] * 20000 %}{{ ('y' * 99999 ~ 'y') is in big }}",
        "longer than 1 MB",
    ),
    "in operator": (
        "{% set big = ['y' * 100000] * 20000 %}{{ ('y' * 99999 ~ 'y') in big }}",
        "longer than 1 MB",
    ),
    "str.format !r": (
        "{% set big = ['y' * 100000] * 20000 %}{{ '{0!r}'.format(big) }}",
        "longer than 1 MB",
    ),
    "sum of lists": ("{{ ([[1, 2]] * 50001)|sum(start=[])|length }}", "100,000 items"),
    "%s of a list": ("{% set big = ['y' * 100000] * 20000 %}{{ '%s' % (big,) }}", "1 MB"),
    # sizes
    "range": ("{{ range(1000000000)|list|length }}", "Range too big"),
    "batch fill": ("{{ [1]|batch(1000000000, 'x')|list|length }}", "100,000 items"),
    "slice count": ("{{ [1]|slice(1000000000)|list|length }}", "100,000 items"),
    # loops, recursion, output
    "three nested loops": (
        "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}"
        "{% endfor %}{% endfor %}{% endfor %}",
        "more than 100,000 iterations",
    ),
    "recursive loop": (
        "{% for x in [[1]] recursive %}{{ loop([x, x]) }}{% endfor %}",
        "nested more than 50 deep",
    ),
    "macro recursion": (
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "nested more than 50 deep",
    ),
    "macro fan-out": (
        "{% macro f(n) %}{% if n < 30 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}"
        "{{ f(0) }}",
        "more than 200,000 steps",
    ),
    "big output": (
        "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
        "output exceeds 2 MB",
    ),
    "big output from template text": (
        "{% for i in range(100000) %}" + "y" * 1000 + "{% endfor %}",
        "output exceeds 2 MB",
    ),
    "big output kept in a block": (
        "{% set x %}{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}{% endset %}",
        "output exceeds 2 MB",
    ),
    "big output in a macro": (
        "{% macro m() %}{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}{% endmacro %}"
        "{% for i in range(20) %}{{ m() }}{% endfor %}",
        "output exceeds 2 MB",
    ),
    # compile time
    "source nested too deeply": ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too"),
    "number literal too long": ("{{ 1" + "0" * 5000 + " }}", "digits"),
}

# Caught only by the CPU-time deadline (each step is slow but allowed). The subprocess runs them
# with a 0.5 s deadline; test_the_default_deadline_stops_a_slow_render checks the default.
SLOW_PROBES: dict[str, tuple[str, str]] = {
    "sorting over and over": (
        "{% for i in range(100000) %}{{ (range(100000)|list|sort)[0] }}{% endfor %}",
        "render took longer than 0.5 s",
    ),
}


def render_error(source: str, renderer: Renderer | None = None) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        (renderer or Renderer()).render_body(source, {})
    assert isinstance(info.value, PermanentError)
    return info.value


CHEAP = [name for name in PROBES if name not in {"macro fan-out"}]


@pytest.mark.parametrize("name", CHEAP)
def test_each_probe_fails_with_a_plain_message(name):
    source, words = PROBES[name]
    assert words in render_error(source).reason


# The subprocess: render each probe, measure CPU time and peak RSS; one JSON line per probe.
_MEASURE = textwrap.dedent(
    """
    import json, resource, sys, time
    from emailops.core.errors import TemplateError
    from emailops.core.rendering import Renderer
    from emailops.core.render_limits import Limits

    probes, seconds = json.load(sys.stdin)
    renderer = Renderer(limits=Limits(seconds=seconds)) if seconds else Renderer()
    renderer.render_body("<p>{{ .x }}</p>{% for i in range(3) %}{{ i }}{% endfor %}", {"x": 1})
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # A regression must fail this test, not swap the machine: cap the address space.
    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))
    for name, source in probes:
        started = time.process_time()
        try:
            renderer.render_body(source, {})
            error = None
        except TemplateError as exc:
            error = exc.reason
        except BaseException as exc:
            error = "UNEXPECTED " + repr(exc)[:200]
        cpu = time.process_time() - started
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline
        print(json.dumps({"name": name, "error": error, "cpu": cpu, "rss_mb": grown / 1024}))
        sys.stdout.flush()
    """
)


def measure(probes: dict[str, tuple[str, str]], *, seconds: float = 0.0) -> list[dict]:
    payload = json.dumps([[[name, source] for name, (source, _) in probes.items()], seconds])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        input=payload,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_probe_is_stopped_by_its_own_limit_within_50_mb():
    """The deadline is off here (CPU time varies with the machine's load): each probe must be
    stopped by the count or check meant for it, the same way on every machine. What each costs in
    CPU time under the default deadline is a figure of bench/render_limits.py."""
    results = measure(PROBES, seconds=math.inf)

    assert [r["name"] for r in results] == list(PROBES)
    # ru_maxrss is a peak: growth above the baseline bounds every probe before it as well.
    problems = [
        f"{r['name']}: {r['error']!r}, +{r['rss_mb']:.0f} MB"
        for r in results
        if r["error"] is None
        or r["error"].startswith("UNEXPECTED")
        or PROBES[r["name"]][1] not in r["error"]
        or r["rss_mb"] >= 50
    ]
    assert not problems, "\n".join(problems)


def test_a_slow_probe_is_stopped_by_the_deadline_within_50_mb():
    results = measure(SLOW_PROBES, seconds=0.5)

    assert [r["name"] for r in results] == list(SLOW_PROBES)
    for r in results:
        assert SLOW_PROBES[r["name"]][1] in (r["error"] or ""), r
        assert r["cpu"] >= 0.5 and r["rss_mb"] < 50, r


class SteppedClock:
    """A CPU clock that moves 125 ms each time it is read (exact in binary: no rounding)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += 0.125
        return self.now


def test_the_deadline_stops_a_render_at_the_first_look_past_it():
    clock = SteppedClock()
    error = render_error(
        SLOW_PROBES["sorting over and over"][0], Renderer(limits=Limits(clock=clock))
    )
    assert error.reason == "render took longer than 1 s (of CPU time)", error.reason
    # The first read sets the deadline at 0.125 + 1 s; the 10th (1.25 s) is the first past it.
    assert (clock.reads, clock.now) == (10, 1.25)


def test_the_default_deadline_counts_this_threads_cpu_time():
    # Other threads of the test run must not count: the render's own CPU time reaches 1 s first.
    started = time.thread_time()
    error = render_error(SLOW_PROBES["sorting over and over"][0])
    assert error.reason == "render took longer than 1 s (of CPU time)", error.reason
    assert time.thread_time() - started >= 1.0


# --- no folding at compile time --------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ '%0999999999d' % 1 }}",
        "{{ 'a'|center(1000000000) }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{{ 'x' * 100000 ~ 'y' * 100000 }}",
    ],
)
def test_compiling_evaluates_nothing(source):
    """Jinja2 folds constant expressions while compiling: a 27-character subject used to become a
    1 GB constant before any render limit could apply."""
    started = time.process_time()
    Renderer().check(source, html=False)
    assert time.process_time() - started < 0.2


# --- limits are per render, and real templates stay well inside them --------------------------


def test_budgets_are_per_render_not_per_thread_or_process():
    """60,000 iterations each: together over the loop limit, each one within it."""
    renderer = Renderer()
    source = "{% for i in range(60000) %}{% endfor %}{{ n }}"
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = list(pool.map(lambda n: renderer.render_body(source, {"n": n}).text, range(8)))
    assert texts == [str(n) for n in range(8)]
    assert renderer.render_body(source, {"n": 1}).text == "1"  # and again, on this thread


def test_smaller_limits_can_be_given():
    renderer = Renderer(limits=Limits(output=100, iterations=10, depth=3))
    assert "output exceeds 0.0001 MB" in render_error("{{ 'x' * 101 }}", renderer).reason
    loop = "{% for i in range(11) %}{% endfor %}"
    assert "more than 10 iterations" in render_error(loop, renderer).reason
    macro = "{% macro f(n) %}{{ f(n) if n else '' }}{% endmacro %}{{ f(1) }}"
    assert "nested more than 3 deep" in render_error(macro, renderer).reason


def test_a_macro_call_counts_as_several_steps():
    """A macro call costs ~20 us of Jinja's machinery: counted as one step, a macro fanning out
    reached the 1 s deadline before the step count on a busy machine."""
    renderer = Renderer(limits=Limits(operations=100))
    calls = "{% macro m() %}{% endmacro %}" + "{{ m() }}" * 10
    assert "more than 100 steps" in render_error(calls, renderer).reason
    assert renderer.render_body("{{ f() }}" * 10, {"f": lambda: "x"}).text == "x" * 10


def test_a_subject_has_a_much_smaller_output_limit():
    with pytest.raises(TemplateError, match=r"output exceeds 0\.01 MB"):
        Renderer().render_subject("{{ 'x' * 10001 }}", {})
    assert len(Renderer().render_subject("{{ 'x' * 9000 }}", {}).text) == 9000


def test_widths_and_formats_real_emails_use_still_work():
    source = (
        "{{ '%05.2f%%' % 12.345 }} {{ '100%% %5d' % 7 }} {{ '{:>8}|{:^6}'.format('a', 'b') }}"
        " {{ '{0!r}'.format('q') }} {{ 'x'|center(9) }} {{ 'ab'.rjust(4, '.') }}"
        " {{ '%% 99999999' % () }}"
    )
    assert Renderer().render_subject(source, {}).text == (
        "12.35% 100%     7        a|  b    'q'     x     ..ab % 99999999"
    )


def test_summing_lists_is_linear_not_quadratic():
    """Python's sum() copies the running list at every item, inside one call no deadline can
    interrupt; 50,000 one-item lists took seconds."""
    started = time.thread_time()
    text = Renderer().render_body("{{ ([[1]] * 50000)|sum(start=[])|length }}", {}).text
    assert text == "50000"
    assert time.thread_time() - started < 0.5
    assert (
        Renderer()
        .render_body("{{ [1, 2.5]|sum }} {{ xs|sum(attribute='a') }}", {"xs": [{"a": 2}, {"a": 3}]})
        .text
        == "3.5 5"
    )


def test_wrapping_a_long_text_is_allowed():
    source = "{% set ns = namespace(s='word ') %}{% for i in range(17) %}"
    source += "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|wordwrap(70)|length }}"
    assert Renderer().render_body(source, {}).text == "655359"


def test_a_long_subject_template_is_refused_before_it_is_compiled():
    """Compiling is not under the budget: 36,000 `{{ x }}` in `context.subject` took 3 s."""
    started = time.thread_time()
    with pytest.raises(TemplateError, match="subject template is longer than 2,000 characters"):
        Renderer().render_subject("{{ x }}" * 36000, {"x": 1})
    with pytest.raises(TemplateError, match="template is longer than 500,000 characters"):
        Renderer().render_body("{{ x }}" * 80000, {"x": 1})
    assert time.thread_time() - started < 0.2
    assert Renderer().render_subject("{{ x }}" * 285, {"x": 1}).text == "1" * 285


def test_the_limit_error_names_the_line():
    error = render_error("<p>\n{{ 'a'|center(1000000000) }}\n</p>")
    assert error.line == 2


REAL = """\
{% macro row(item, depth) -%}
<tr><td>{{ '%05.2f' % item.price }}</td><td>{{ '{:>8}'.format(item.name) }}</td>
<td>{{ item.name|center(20) }}</td><td>{{ item.note|wordwrap(60)|indent(4) }}</td></tr>
{%- if item.children and depth < 10 %}{% for c in item.children %}{{ row(c, depth + 1) }}{% endfor %}{% endif %}
{%- endmacro %}
{% set ns = namespace(rows=[], total=0) -%}
{% for item in items %}{% set ns.rows = ns.rows + [item.name] %}{% set ns.total = ns.total + item.price %}{% endfor -%}
<table>{% for item in items %}{{ row(item, 0) }}{% endfor %}</table>
<p>{{ ns.rows|join(', ')|truncate(80) }} = {{ ns.total }}</p>
{% for key, value in meta|dictsort %}{{ key }}={{ value }} {% endfor %}
{% if ns.rows == ns.rows and [1, 2] != [2, 1] and 'item' in ns.rows[0] %}same{% endif %}
{{ range(2)|list|length > 0 }} {{ (items|map(attribute='name')|list)[:2]|tojson }}
{% for x in tree recursive %}[{{ x.name }}{{ loop(x.children) if x.children }}]{% endfor %}
"""


def test_a_realistic_template_is_untouched_by_the_limits():
    leaf = {"name": "leaf", "price": 1.5, "note": "n " * 50, "children": []}
    items = [
        {"name": f"item{i}", "price": i, "note": "word " * 40, "children": [leaf]}
        for i in range(500)
    ]
    tree = [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}]
    context = {"items": items, "meta": {"b": 2, "a": 1}, "tree": tree}
    started = time.process_time()
    text = Renderer().render_body(REAL, context).text
    assert time.process_time() - started < 0.5
    assert "item0, item1" in text and "a=1 b=2" in text and "same" in text
    assert "[a[b[c]]]" in text and '["item0", "item1"]' in text
    assert "00.00" in text and "   item0" in text


def test_limit_constants_are_sane_for_emails():
    assert 1_000_000 <= render_limits.MAX_OUTPUT <= 2_000_000
    assert render_limits.MAX_LOOP_ITERATIONS == 100_000
    assert render_limits.MAX_CALL_DEPTH == 50
    assert render_limits.MAX_RENDER_SECONDS <= 2
    assert render_limits.MAX_SUBJECT_OUTPUT < render_limits.MAX_OUTPUT
