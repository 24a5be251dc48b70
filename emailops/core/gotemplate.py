"""Translate the Go ``text/template`` actions our existing templates use into Jinja2.

Templates and subjects in the bucket were written for the Go consumer. Rather than run two engines,
each Go action is rewritten in place into its Jinja2 equivalent; everything else is left alone, so a
template may mix both syntaxes. Newlines are never added or removed, so Jinja2's line numbers in
error messages still point at the author's line.

Supported: ``{{.}}``, ``{{.a.b}}``, ``{{$}}``, ``{{$.a}}``, ``{{if P}}``, ``{{else if P}}``,
``{{else}}``, ``{{end}}``, ``{{range P}}`` (maps iterate their values in key order, as in Go),
``{{with P}}``, ``{{/* comments */}}``, ``{{-``/``-}}`` trimming, and in pipelines the functions
``not and or eq ne lt le gt ge len index html urlquery print`` with ``(...)`` and ``|``.

An action opened with ``{{`` and never closed runs into the next action's ``}}`` or the end of the
text; ``unclosed_action_error`` finds it, so a failed compile names that ``{{`` and its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emailops.core.errors import TemplateError

__all__ = ["translate", "unclosed_action_error"]

# `{{- ` and ` -}}` trim in Go only with a space beside the dash.
_ACTION = re.compile(r"\{\{(-(?=\s))?\s*(.*?)\s*((?<=\s)-)?\}\}", re.DOTALL)
_FIELD_CHAIN = r"(?:\.[^\W\d]\w*)+"
_GO_TOKEN = re.compile(
    rf"""\s*(?:
      (?P<field>\$?{_FIELD_CHAIN}|\$|\.)
    | (?P<string>"(?:[^"\\]|\\.)*"|`[^`]*`)
    | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | (?P<ident>[^\W\d]\w*)
    | (?P<punct>[()|])
    )""",
    re.VERBOSE,
)
# A Go pipeline mentions a field as `.name`/`$` after a space or at the start; Jinja never does.
_LOOKS_GO = re.compile(r"(?:^|[\s(])(?:\$|\.(?:[^\W\d]|\s|$|\)))")
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@dataclass
class _Block:
    kind: str  # "if", "range" or "with"
    dot: str  # the Jinja expression `.` stood for when the block opened
    line: int  # where the block opened: an unclosed block is reported there, not at the last action
    in_else: bool = False


class _Translator:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stack: list[_Block] = []
        self.dot = ""  # "" means the root context
        self.counter = 0
        self.line = 1

    def error(self, reason: str) -> TemplateError:
        return TemplateError("compile template", key=self.name, reason=reason, line=self.line)

    # --- pipelines -------------------------------------------------------------------------

    def field(self, token: str) -> str:
        if token.startswith("$"):
            base, chain = "_root", token[1:]
        else:
            base, chain = self.dot, token
        parts = [p for p in chain.split(".") if p]
        if not base:
            if not parts:
                return "_root"
            # Always through the root: as a bare name, `.range` or `.lipsum` missing from the
            # context would resolve to Jinja's global of that name.
            head, parts = parts[0], parts[1:]
            base = f"_root[{head!r}]"
        return base + "".join(f"[{p!r}]" for p in parts)

    def pipeline(self, text: str) -> str:
        tokens = self.tokenize(text)
        expr, rest = self.parse_pipeline(tokens)
        if rest:
            raise self.error(f"unexpected {rest[0][1]!r} in {{{{{text}}}}}")
        return expr

    def tokenize(self, text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        text = text.rstrip()
        while pos < len(text):
            match = _GO_TOKEN.match(text, pos)
            if not match or match.end() == pos:
                raise self.error(f"cannot read Go template action {{{{{text}}}}}")
            kind = match.lastgroup or ""
            tokens.append((kind, match.group(kind)))
            pos = match.end()
        return tokens

    def parse_pipeline(self, tokens: list[tuple[str, str]]) -> tuple[str, list]:
        expr, tokens = self.parse_command(tokens, piped=None)
        while tokens and tokens[0] == ("punct", "|"):
            expr, tokens = self.parse_command(tokens[1:], piped=expr)
        return expr, tokens

    def parse_command(self, tokens: list, piped: str | None) -> tuple[str, list]:
        if not tokens:
            raise self.error("empty command in a Go template action")
        kind, value = tokens[0]
        if kind == "ident" and value not in ("true", "false", "nil"):
            args, tokens = [], tokens[1:]
            while tokens and tokens[0] not in (("punct", "|"), ("punct", ")")):
                arg, tokens = self.parse_operand(tokens)
                args.append(arg)
            if piped is not None:
                args.append(piped)
            return self.call(value, args), tokens
        if piped is not None:
            raise self.error(f"cannot pipe into {value!r}")
        return self.parse_operand(tokens)

    def parse_operand(self, tokens: list) -> tuple[str, list]:
        kind, value = tokens[0]
        if kind == "punct" and value == "(":
            expr, rest = self.parse_pipeline(tokens[1:])
            if not rest or rest[0] != ("punct", ")"):
                raise self.error("unclosed '(' in a Go template action")
            return f"({expr})", rest[1:]
        if kind == "field":
            return self.field(value), tokens[1:]
        if kind == "string":
            return (repr(value[1:-1]) if value.startswith("`") else value), tokens[1:]
        if kind == "number":
            return value, tokens[1:]
        if kind == "ident" and value in ("true", "false", "nil"):
            return {"true": "true", "false": "false", "nil": "none"}[value], tokens[1:]
        if kind == "ident":
            return self.call(value, []), tokens[1:]
        raise self.error(f"unexpected {value!r} in a Go template action")

    def call(self, func: str, args: list[str]) -> str:
        if func == "not" and len(args) == 1:
            return f"(not {args[0]})"
        if func in ("and", "or") and args:
            return "(" + f" {func} ".join(args) + ")"
        if func in _COMPARE and len(args) == 2:
            return f"({args[0]} {_COMPARE[func]} {args[1]})"
        if func == "len" and len(args) == 1:
            return f"({args[0]}|length)"
        if func == "index" and args:
            return args[0] + "".join(f"[{a}]" for a in args[1:])
        if func == "html" and len(args) == 1:
            return f"({args[0]}|e)"
        if func == "urlquery" and len(args) == 1:
            return f"({args[0]}|urlencode)"
        if func == "print" and args:
            return "(" + " ~ ".join(args) + ")"
        raise self.error(
            f"Go template function {func!r} with {len(args)} argument(s) is not supported"
        )

    # --- actions ---------------------------------------------------------------------------

    def action(self, body: str) -> str | None:
        """The Jinja2 tag for one Go action body, or None when the body is not Go syntax."""
        if body.startswith("/*") and body.endswith("*/"):
            return "comment"
        keyword, rest = [*re.split(r"\s+", body, maxsplit=1), ""][:2]
        rest = rest.strip()
        if body in ("else", "end") and self.stack:
            return self.close_or_else(body)
        if body in ("else", "end"):
            raise self.error("{{" + body + "}} without an open {{if}}, {{range}} or {{with}}")
        if keyword == "else" and re.match(r"if\s", rest) and self.stack:
            if self.stack[-1].kind != "if" or self.stack[-1].in_else:
                raise self.error("{{else if}} outside an {{if}}")
            return f"{{% elif {self.pipeline(rest[3:])} %}}"
        if keyword in ("if", "range", "with") and rest and _LOOKS_GO.search(rest):
            return self.open_block(keyword, self.pipeline(rest))
        if _LOOKS_GO.search(body):
            try:
                return f"{{{{ {self.pipeline(body)} }}}}"
            except TemplateError:
                if body.startswith((".", "$")):
                    raise
                return None  # e.g. `{{ "a $" ~ b }}`: Jinja2 that merely looks like Go
        return None

    def open_block(self, kind: str, expr: str) -> str:
        self.stack.append(_Block(kind=kind, dot=self.dot, line=self.line))
        if kind == "if":
            return f"{{% if {expr} %}}"
        self.counter += 1
        var = f"_dot{self.counter}"
        self.dot = var
        if kind == "range":
            return f"{{% for {var} in ({expr})|go_range %}}"
        return f"{{% with {var} = {expr} %}}{{% if {var} %}}"

    def close_or_else(self, body: str) -> str:
        block = self.stack[-1]
        self.dot = block.dot  # an else branch and what follows `end` see the outer dot
        if body == "else":
            if block.in_else:
                raise self.error("a second {{else}} in one block")
            block.in_else = True
            return "{% else %}"
        self.stack.pop()
        return {"if": "{% endif %}", "range": "{% endfor %}", "with": "{% endif %}{% endwith %}"}[
            block.kind
        ]


def translate(source: str, *, name: str = "template") -> str:
    """Rewrite the Go actions in ``source`` as Jinja2; leave everything else as it is."""
    try:
        return _translate(source, name)
    except TemplateError:
        # An action never closed runs into the next action's `}}` (or into nothing): whatever
        # failed after it, the `{{` without its `}}` is what the author has to fix.
        unclosed = unclosed_action_error(source, name=name)
        if unclosed is None:
            raise
        raise unclosed from None


def _translate(source: str, name: str) -> str:
    translator = _Translator(name)
    out: list[str] = []
    pos = 0
    for match in _ACTION.finditer(source):
        translator.line = source.count("\n", 0, match.start()) + 1
        tag = translator.action(match.group(2))
        if tag is None:
            continue
        out.append(source[pos : match.start()])
        if tag == "comment":
            tag = "{##}"
        trim_left, trim_right = bool(match.group(1)), bool(match.group(3))
        if trim_left:
            tag = tag[:2] + "-" + tag[2:]
        if trim_right:
            tag = tag[:-2] + "-" + tag[-2:]
        # Keep the author's line numbers: a multi-line action keeps its newlines as a comment.
        newlines = match.group(0).count("\n")
        out.append(tag + ("{#" + "\n" * newlines + "#}" if newlines else ""))
        pos = match.end()
    if translator.stack:
        # Jinja names the innermost open block; so do we, on the line that opened it.
        block = translator.stack[-1]
        translator.line = block.line
        raise translator.error(
            f"{{{{{block.kind}}}}} opened on line {block.line} is never closed with {{{{end}}}}"
        )
    out.append(source[pos:])
    return "".join(out)


# --- actions never closed ------------------------------------------------------------------------

_OPENING = re.compile(r"\{\{|\{%|\{#")
_RAW = re.compile(r"\{%-?\s*raw\s*-?%\}")
_ENDRAW = re.compile(r"\{%-?\s*endraw\s*-?%\}")
_GO_COMMENT_OPEN = re.compile(r"\{\{-?\s*/\*")
_GO_COMMENT_CLOSE = re.compile(r"\*/\s*-?\}\}")
_QUOTES = "\"'`"


class _ActionScanner:
    """Finds the first ``{{`` that has no ``}}`` before the next ``{{`` or the end of the text,
    outside Jinja comments, raw blocks, Go comments and quoted strings. Linear in the text: a
    broken template of 500,000 characters must not make its error cost minutes."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_end = -1  # the end of the line being scanned (cached: finding it is O(line))
        # Where the next Go comment close found starts and ends (cached; end -1: there is none).
        self.close_at = (-1, -1)

    def first_unclosed(self) -> int | None:
        source, pos = self.source, 0
        while match := _OPENING.search(source, pos):
            start, opening = match.start(), match.group()
            if opening == "{#":
                end = source.find("#}", start + 2)
                if end < 0:
                    return None  # an unclosed comment: Jinja says so itself
                pos = end + 2
            elif opening == "{%":
                raw = _RAW.match(source, start)
                if raw:
                    endraw = _ENDRAW.search(source, raw.end())
                    if endraw is None:
                        return None
                    pos = endraw.end()
                else:
                    end = self.tag_end(start + 2, "%}")
                    if end is None:
                        return None
                    pos = end
            elif (comment_end := self.go_comment_end(start)) is not None:
                pos = comment_end
            else:
                end = self.tag_end(start + 2, "}}")
                if end is None:
                    return start
                pos = end
        return None

    def go_comment_end(self, start: int) -> int | None:
        """Where the Go comment ``{{/* ... */}}`` opened at ``start`` ends, if it is one."""
        opened = _GO_COMMENT_OPEN.match(self.source, start)
        if not opened:
            return None
        if self.close_at[0] < opened.end():
            close = _GO_COMMENT_CLOSE.search(self.source, opened.end())
            self.close_at = (close.start(), close.end()) if close else (len(self.source), -1)
        return self.close_at[1] if self.close_at[1] >= 0 else None

    def tag_end(self, pos: int, closer: str) -> int | None:
        """Where the tag whose body starts at ``pos`` ends (after ``closer``); None when another
        ``{{`` (for an action) or the end of the text comes first."""
        source, i = self.source, pos
        while i < len(source):
            if source.startswith(closer, i):
                return i + 2
            if closer == "}}" and source.startswith("{{", i):
                return None
            char = source[i]
            if char in _QUOTES:
                # A quote is a string only if it closes on its line ("It's" in text is not).
                if self.line_end < i:
                    self.line_end = source.find("\n", i)
                    if self.line_end < 0:
                        self.line_end = len(source)
                end = source.find(char, i + 1, self.line_end)
                if end >= 0:
                    i = end + 1
                    continue
            i += 1
        return None


def unclosed_action_error(source: str, *, name: str = "template") -> TemplateError | None:
    """The compile error for the first action of ``source`` opened with ``{{`` and never closed
    with ``}}``, on the line of its ``{{``; None when there is none. Asked only once the template
    failed to compile: the error it gives names a cause the author can see."""
    at = _ActionScanner(source).first_unclosed()
    if at is None:
        return None
    line = source.count("\n", 0, at) + 1
    action = source[at:].split("\n", 1)[0].rstrip()
    if len(action) > 60:
        action = action[:57] + "..."
    return TemplateError(
        "compile template",
        key=name,
        reason=f"{{{{ on line {line} has no matching }}}}: the action {action} is never closed",
        line=line,
    )
