"""Render email bodies (HTML, autoescaped) and subjects (plain text) in a Jinja2 sandbox.

One ``Renderer`` is shared by the consumer's threads and the console: environments and the compiled
template cache are thread-safe, and the names of missing variables are collected per render through a
context variable. Every render runs within the limits of ``emailops.core.render_limits`` (output size,
loop iterations, call depth, time, string and list sizes); going over one is a TemplateError.
"""

from __future__ import annotations

import contextvars
import functools
import math
import re
import traceback
from dataclasses import dataclass, replace
from typing import Any

from jinja2 import ChainableUndefined, TemplateSyntaxError, nodes
from jinja2.exceptions import SecurityError
from jinja2.exceptions import TemplateError as JinjaTemplateError
from markupsafe import Markup

from emailops.core.errors import TemplateError
from emailops.core.gotemplate import translate, unclosed_action_error
from emailops.core.header_text import control_problem
from emailops.core.render_limits import (
    MAX_SUBJECT_OUTPUT,
    MAX_SUBJECT_SOURCE,
    MAX_TEMPLATE_SOURCE,
    Limits,
    RenderLimitExceeded,
    budget,
    check_printable,
)
from emailops.core.sandbox import BoundedSandbox
from emailops.core.template_variables import guarded_variables, read_variables

__all__ = [
    "ONE_LINE_REASON",
    "Rendered",
    "Renderer",
    "control_reason",
    "go_format",
    "is_control_reason",
]

ONE_LINE_REASON = "the subject must be one line"
_CONTROL_TAIL = " (a subject must be one line of text)"


def control_reason(problem: str) -> str:
    """A subject refused for a control character: ``context.subject: control character U+000B
    (...)``."""
    return problem + _CONTROL_TAIL


def is_control_reason(reason: str) -> bool:
    return reason.endswith(_CONTROL_TAIL)


_missing: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("missing", default=None)


class _RecordingUndefined(ChainableUndefined):
    """Renders empty (as the Go consumer did) and remembers the missing name for the log."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = _missing.get()
        # The name is an int for a missing list index (`{{index .xs 5}}`); the report is text.
        name = "" if self._undefined_name is None else str(self._undefined_name)
        if names is not None and name and name not in names:
            names.append(name)


def go_format(value: Any) -> Any:
    """Print JSON values the way the Go templates showed them (``true``, ``[a b]``, ``map[k:v]``).

    Integral numbers print as integers (Go would print a large one as ``1e+06``; nobody wants that).
    """
    if isinstance(value, ChainableUndefined | Markup | str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    check_printable(value)  # a list holding itself twice, 40 levels deep, must not print
    if isinstance(value, list | tuple):
        return "[" + " ".join(str(go_format(v)) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    return value


def _go_range(value: Any) -> Any:
    """Go's range over a map yields its values in key order; Jinja's would yield the keys."""
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return value


def _environment(*, autoescape: bool) -> BoundedSandbox:
    env = BoundedSandbox(
        autoescape=autoescape,
        undefined=_RecordingUndefined,
        finalize=go_format,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.add_filter("go_range", _go_range)
    return env


@dataclass(frozen=True)
class Rendered:
    text: str
    missing: tuple[str, ...] = ()  # context variables the template used but the context lacked


class Renderer:
    """Compile (cached) and render templates; every failure is a TemplateError with a line."""

    def __init__(self, *, cache_size: int = 256, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        # A subject is one short line: a much smaller output budget.
        self._subject_limits = replace(
            self.limits, output=min(self.limits.output, MAX_SUBJECT_OUTPUT)
        )
        self._html = _environment(autoescape=True)
        self._text = _environment(autoescape=False)
        self._compile = functools.lru_cache(maxsize=cache_size)(self._compile_uncached)

    def _compile_uncached(self, source: str, html: bool, name: str):
        env = self._html if html else self._text
        return _translated(env, env.from_string, source, html=html, name=name)

    def check(self, source: str, *, html: bool = True, name: str = "template") -> None:
        """Raise TemplateError if ``source`` does not compile."""
        self._compile(source, html, name)

    def variables(self, source: str, *, name: str = "template") -> set[str]:
        """Top-level context variables the template reads (for the preview's variable report)."""
        return read_variables(self._parse(source, name))

    def optional_variables(self, source: str, *, name: str = "template") -> set[str]:
        """The variables it reads only under a test of themselves (``{{if .x}}``, ``{{with .x}}``):
        a context without them renders as the author meant, so they are not "missing"."""
        return guarded_variables(self._parse(source, name))

    def _parse(self, source: str, name: str) -> nodes.Template:
        return _translated(self._html, self._html.parse, source, html=True, name=name)

    def render_body(self, source: str, context: dict[str, Any], *, name: str = "body") -> Rendered:
        return self._render(source, context, html=True, name=name, limits=self.limits)

    def render_subject(
        self,
        source: str,
        context: dict[str, Any],
        *,
        name: str = "subject",
        field: str = "subject",
    ) -> Rendered:
        """``field``: where the subject template came from, for the reason of a refusal
        (``context.subject`` when the request's override is rendered)."""
        rendered = self._render(source, context, html=False, name=name, limits=self._subject_limits)
        text = rendered.text.strip()
        if "\n" in text or "\r" in text:
            raise TemplateError("render subject", key=name, reason=ONE_LINE_REASON)
        # SES writes the subject into the header as it is (an ASCII one unencoded): a VT or NUL
        # there is a line break or worse to the reader's parser.
        if problem := control_problem(field, text):
            raise TemplateError("render subject", key=name, reason=control_reason(problem))
        return Rendered(text=text, missing=rendered.missing)

    def _render(
        self, source: str, context: dict[str, Any], *, html: bool, name: str, limits: Limits
    ) -> Rendered:
        template = self._compile(source, html, name)
        names: list[str] = []
        token = _missing.set(names)
        try:
            with budget(limits):
                text = template.render({**context, "_root": context})
        except RenderLimitExceeded as exc:
            raise TemplateError(
                "render template", key=name, reason=str(exc), line=_line(exc)
            ) from None
        except RecursionError:  # the call-depth limit should come first; this is the backstop
            raise TemplateError(
                "render template", key=name, reason="the template recursed too deeply"
            ) from None
        except MemoryError:
            raise TemplateError(
                "render template", key=name, reason="the template ran out of memory"
            ) from None
        except SecurityError as exc:
            raise TemplateError(
                "render template",
                key=name,
                reason=f"blocked by the sandbox: {exc}",
                line=_line(exc),
            ) from None
        except (JinjaTemplateError, ArithmeticError, LookupError, TypeError, ValueError) as exc:
            raise TemplateError(
                "render template", key=name, reason=str(exc), line=_line(exc)
            ) from None
        finally:
            _missing.reset(token)
        return Rendered(text=text, missing=tuple(names))


def _translated(env, build, source: str, *, html: bool, name: str):
    """``build`` (compile or parse) of the source translated from Go syntax; every failure a
    TemplateError with the author's line."""
    _check_source_size(source, html=html, name=name)
    translated = ""
    try:
        translated = translate(source, name=name)
        return build(translated)
    except TemplateSyntaxError as exc:
        raise _syntax_error(exc, env, source, translated, name=name) from None
    except RecursionError:
        raise TemplateError(
            "compile template", key=name, reason="the template is nested too deeply"
        ) from None
    except (ValueError, MemoryError) as exc:  # e.g. a number literal thousands of digits long
        raise TemplateError("compile template", key=name, reason=str(exc)) from None


def _check_source_size(source: str, *, html: bool, name: str) -> None:
    """Compiling is not under the render budget (it is cached, and takes ~15 us a character of
    dense tags): a request's ``context.subject`` must not make each message cost seconds."""
    limit = MAX_TEMPLATE_SOURCE if html else MAX_SUBJECT_SOURCE
    if len(source) > limit:
        what = "template" if html else "subject template"
        raise TemplateError(
            "compile template", key=name, reason=f"the {what} is longer than {limit:,} characters"
        )


# Jinja tags that open a block closed by `end<tag>` (`set` only without `=`: `{% set x %}`).
_BLOCK_TAGS = frozenset(
    ("if", "for", "with", "macro", "call", "filter", "block", "autoescape", "trans", "set")
)
_UNCLOSED = re.compile(
    r"^Unexpected end of template\..*innermost block that needs to be closed is '(\w+)'"
)


def _syntax_error(
    exc: TemplateSyntaxError, env: BoundedSandbox, source: str, translated: str, *, name: str
) -> TemplateError:
    """Jinja's syntax error as ours. An action opened with ``{{`` and never closed comes first
    (Jinja would only say "unexpected '.'" about what follows it); a block still open at the end
    of the template is reported on the line that opened it (Jinja says where the template ended).
    """
    unclosed_action = unclosed_action_error(source, name=name)
    if unclosed_action is not None:
        return unclosed_action
    reason, line = exc.message or str(exc), exc.lineno
    unclosed = _UNCLOSED.match(reason)
    opened = _innermost_open_block(env, translated) if unclosed else None
    if unclosed and opened is not None and opened[0] == unclosed[1]:
        tag, line = opened
        reason = f"{{% {tag} %}} opened on line {line} is never closed with {{% end{tag} %}}"
    return TemplateError("compile template", key=name, reason=reason, line=line)


def _innermost_open_block(env: BoundedSandbox, source: str) -> tuple[str, int] | None:
    """The tag and line of the innermost block left open at the end of ``source`` (Jinja
    syntax, the Go actions translated already), or None when the tags cannot be followed."""
    stack: list[tuple[str, int]] = []
    tag: list[tuple[str, str]] | None = None  # the tokens of the block tag being read
    begun = 0  # the line of its `{%`
    try:
        for lineno, kind, value in env.lex(source):
            if kind == "block_begin":
                tag, begun = [], lineno
            elif kind == "block_end" and tag is not None:
                word = tag[0][1] if tag and tag[0][0] == "name" else ""
                assigns = ("operator", "=") in tag
                if word in _BLOCK_TAGS and not (word == "set" and assigns):
                    stack.append((word, begun))
                elif word.startswith("end") and word[3:] in _BLOCK_TAGS:
                    if not stack or stack[-1][0] != word[3:]:
                        return None  # a nesting mistake: Jinja reports that itself
                    stack.pop()
                tag = None
            elif tag is not None and kind != "whitespace":
                tag.append((kind, value))
    except TemplateSyntaxError:
        return None
    return stack[-1] if stack else None


def _line(exc: BaseException) -> int | None:
    """The template line Jinja2 put in the traceback (it rewrites frames to '<template>')."""
    lines = [
        f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<template>"
    ]
    return lines[-1] if lines else None
