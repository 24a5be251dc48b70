"""Translate the Go ``text/template`` actions our existing templates use into Jinja2.

Templates and subjects in the bucket were written for the Go consumer. Rather than run two engines,
each Go action is rewritten in place into its Jinja2 equivalent; everything else is left alone, so a
template may mix both syntaxes. Newlines are never added or removed, so Jinja2's line numbers in
error messages still point at the author's line.

Supported: ``{{.}}``, ``{{.a.b}}``, ``{{$}}``, ``{{$.a}}``, ``{{if P}}``, ``{{else if P}}``,
``{{else}}``, ``{{end}}``, ``{{range P}}`` (maps iterate their values in key order, as in Go),
``{{with P}}``, ``{{/* comments */}}``, ``{{-``/``-}}`` trimming, and in pipelines the functions
``not and or eq ne lt le gt ge len index html urlquery print`` with ``(...)`` and ``|``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emailops.core.errors import TemplateError

__all__ = ["translate"]

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
