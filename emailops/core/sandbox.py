"""The bounded Jinja2 sandbox: no template may use unbounded CPU, memory or time.

Anyone who can send a request (``context.subject`` is a template) or edit a template can run code
here, on the consumer's worker threads and in the console. So, per render, a budget kept in a
context variable (no threads, no signals: renders run on worker threads) is checked in the
sandbox's hooks:

- every call, attribute lookup, intercepted operator, filter and loop iteration checks the deadline;
- loops count iterations (every ``for`` iterates through a counting wrapper), calls count depth;
- every piece of output, including macro and block buffers, is counted against the output limit;
- operations that can grow a value (``%``, ``format``, ``+``, ``~``, ``*``, padding and wrapping
  filters, ``join``, ``replace``...) are checked *before* they run, from their arguments, so a
  27-character template cannot allocate a gigabyte first and fail afterwards.

Checks that need no budget (sizes, widths) also hold at compile time, where Jinja2 folds constant
expressions: a filter call that fails a check there is simply left for run time, where it fails
again with the budget's message.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import re
import string
import time
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes, pass_context, pass_environment
from jinja2.compiler import CodeGenerator, operators
from jinja2.exceptions import SecurityError
from jinja2.filters import make_attrgetter
from jinja2.runtime import LoopContext
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
)
from jinja2.utils import Namespace, generate_lorem_ipsum
from markupsafe import Markup

__all__ = [
    "MAX_CALL_DEPTH",
    "MAX_ITEMS",
    "MAX_LOOP_ITERATIONS",
    "MAX_OPERATIONS",
    "MAX_OUTPUT",
    "MAX_RENDER_SECONDS",
    "MAX_STRING",
    "MAX_SUBJECT_OUTPUT",
    "MAX_SUBJECT_SOURCE",
    "MAX_TEMPLATE_SOURCE",
    "MAX_WIDTH",
    "BoundedSandbox",
    "Limits",
    "RenderLimitExceeded",
    "budget",
]

# Limits sized for real emails (a large newsletter is ~100 KB of HTML) with a wide margin.
MAX_OUTPUT = 2_000_000  # characters one render may write, macro and block buffers included
MAX_SUBJECT_OUTPUT = 10_000  # a subject is one line; SES refuses far shorter ones anyway
MAX_TEMPLATE_SOURCE = 500_000  # characters of a body template (real ones are a few KB)
MAX_SUBJECT_SOURCE = 2_000  # characters of a subject template, including `context.subject`
MAX_STRING = 1_000_000  # characters in any one string a template builds
MAX_ITEMS = 100_000  # items in any list or mapping a template builds or prints (= Jinja's range)
MAX_WIDTH = 10_000  # padding and format widths, indent and wrap widths, numeric method arguments
MAX_LOOP_ITERATIONS = 100_000  # all loops of one render together
MAX_CALL_DEPTH = 50  # macros calling macros (a recursive macro stops here)
MAX_OPERATIONS = 200_000  # calls, lookups, operators, filters, loop steps, outputs of one render
MAX_RENDER_SECONDS = 1.0  # CPU time; real emails render in milliseconds
MAX_POWER_BITS = 4096  # `n ** e` and `n * m` results beyond this many bits are refused
MAX_REPEAT = 100_000  # `'x' * n` / `[x] * n` results beyond this length are refused
MAX_LIPSUM_PARAGRAPHS = 20
MAX_LIPSUM_WORDS = 100


class RenderLimitExceeded(SecurityError):
    """A template went over one of the limits; the message says which, in plain words."""


@dataclass(frozen=True)
class Limits:
    output: int = MAX_OUTPUT
    iterations: int = MAX_LOOP_ITERATIONS
    depth: int = MAX_CALL_DEPTH
    operations: int = MAX_OPERATIONS
    seconds: float = MAX_RENDER_SECONDS


def _mb(chars: int) -> str:
    return f"{chars / 1_000_000:g} MB"


class _Budget:
    __slots__ = ("deadline", "depth", "iterations", "limits", "operations", "output")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # CPU time of this thread, not wall time: a permanent failure must not depend on how busy
        # the machine (or the GIL) is.
        self.deadline = time.thread_time() + limits.seconds
        self.iterations = 0
        self.operations = 0
        self.output = 0
        self.depth = 0

    def tick(self, *, clock: bool = False) -> None:
        # The count stops call-heavy templates (a macro calling itself twice, 30 deep) early and
        # the same way on every machine; the deadline stops anything slow that the count misses.
        self.operations += 1
        if self.operations > self.limits.operations:
            raise RenderLimitExceeded(
                f"the template took more than {self.limits.operations:,} steps"
                " (calls, lookups, operators, loop iterations)"
            )
        # Reading a thread's CPU clock is a system call (~1 us): look at every filter and call
        # (the steps that can take milliseconds) and at every 8th cheap step.
        if (clock or not self.operations & 7) and time.thread_time() > self.deadline:
            raise RenderLimitExceeded(
                f"render took longer than {self.limits.seconds:g} s (of CPU time)"
            )

    def count(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.iterations += 1
            if self.iterations > self.limits.iterations:
                raise RenderLimitExceeded(
                    f"loops ran more than {self.limits.iterations:,} iterations"
                )
            self.tick()
            yield item

    def emit(self, text: str) -> str:
        self.output += len(text)
        if self.output > self.limits.output:
            raise RenderLimitExceeded(f"template output exceeds {_mb(self.limits.output)}")
        self.tick()
        return text


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "render_budget", default=None
)


@contextlib.contextmanager
def budget(limits: Limits) -> Iterator[None]:
    """``with budget(limits): template.render(...)`` -- one render's limits, starting now."""
    token = _budget.set(_Budget(limits))
    try:
        yield
    finally:
        _budget.reset(token)


def _tick(*, clock: bool = False) -> None:
    current = _budget.get()
    if current is not None:
        current.tick(clock=clock)


# --- size checks (no budget needed: these hold at compile time too) ------------------------------

_CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_width(value: Any, what: str = "width") -> None:
    if _is_int(value) and abs(value) > MAX_WIDTH:
        raise RenderLimitExceeded(f"{what} {value} is too large (at most {MAX_WIDTH:,})")


def check_string(length: int) -> None:
    if length > MAX_STRING:
        raise RenderLimitExceeded(f"the template built a string longer than {_mb(MAX_STRING)}")


def _too_many_items() -> RenderLimitExceeded:
    return RenderLimitExceeded(
        f"the template built a list or mapping of more than {MAX_ITEMS:,} items"
    )


@dataclass(frozen=True)
class Size:
    chars: int  # printed length, give or take
    nodes: int  # values visited (shared ones each time they occur)
    depth: int  # nesting


def printed_size(value: Any) -> Size:
    """How large a value would print, give or take; refuses values whose
    printed form is too large. The walk visits shared items each time they occur, as printing
    and comparing would, and stops after MAX_ITEMS nodes: a list that holds itself twice, nested
    40 deep, must fail here quickly rather than print for hours."""
    chars, nodes_seen, deepest = 0, 0, 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        nodes_seen += 1
        # What is stacked will be visited too; the outermost container is not an item.
        if nodes_seen + len(stack) > MAX_ITEMS + 1:
            raise _too_many_items()
        if isinstance(item, str):
            chars += len(item) + 2
        elif isinstance(item, dict):
            deepest = max(deepest, depth + 1)
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, Namespace):
            stack.append((item._Namespace__attrs, depth + 1))  # type: ignore[attr-defined]
        elif isinstance(item, list | tuple | set | frozenset):
            deepest = max(deepest, depth + 1)
            stack.extend((v, depth + 1) for v in item)
        elif _is_int(item):
            chars += item.bit_length() // 3 + 2
        else:
            chars += 8
        if chars > MAX_STRING:
            check_string(chars)
    return Size(chars=chars, nodes=nodes_seen, depth=deepest)


def check_printable(value: Any) -> None:
    if isinstance(value, _CONTAINERS):
        printed_size(value)


def check_result(value: Any) -> Any:
    """Cheap check on anything a call or filter returned."""
    if isinstance(value, str | bytes):
        check_string(len(value))
    elif isinstance(value, list | tuple | dict | set | frozenset) and len(value) > MAX_ITEMS:
        raise _too_many_items()
    return value


def _holds_containers(items: Iterable[Any]) -> bool:
    # The distinct types, collected in C: `ns.rows + [row]` in a loop stays cheap.
    return any(issubclass(kind, _CONTAINERS) for kind in set(map(type, items)))


def check_built(value: Any) -> Any:
    """A list, tuple or dict literal: if it holds containers, its printed size must be bounded
    (each doubling of a shared structure is a new literal)."""
    items = value.values() if isinstance(value, dict) else value
    if _holds_containers(items):
        printed_size(value)
    return value


# Width and precision of %-conversions: `%(key)-0999d`, `%.*f`...
_PERCENT = re.compile(r"%%|%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def check_percent_format(template: str) -> None:
    for match in _PERCENT.finditer(template):
        for number in match.groups():
            if number == "*":
                raise RenderLimitExceeded("'*' widths in %-formatting are not allowed")
            if number is not None:
                check_width(_digits(number), "format width")


def _digits(text: str) -> int:
    return int(text) if len(text) <= 9 else 10**9


def check_format_spec(spec: str) -> None:
    for number in re.findall(r"\d+", spec):
        check_width(_digits(number), "format width")


def _percent(value: Any, args: Any) -> None:
    if isinstance(value, str):
        check_percent_format(value)
        check_printable(args)


# --- str.format with bounded fields --------------------------------------------------------------


class _BoundedFormatterMixin:
    def convert_field(self, value: Any, conversion: str | None) -> Any:
        check_printable(value)  # `{0!r}` prints the value before format_field sees it
        return super().convert_field(value, conversion)  # type: ignore[misc]

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_format_spec(format_spec)
        check_printable(value)
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _BoundedFormatter(_BoundedFormatterMixin, SandboxedFormatter):
    """Formats plain strings."""


class _BoundedEscapeFormatter(_BoundedFormatterMixin, SandboxedEscapeFormatter):
    """Formats Markup (fields are escaped)."""


# --- filters -------------------------------------------------------------------------------------

# Filters that neither print nor compare nor hash the items of their input (so a huge but shared
# structure costs them nothing); every other filter measures its container arguments first.
_ITEM_BLIND = frozenset(
    {
        "abs",
        "attr",
        "batch",
        "count",
        "d",
        "default",
        "first",
        "float",
        "int",
        "items",
        "last",
        "length",
        "list",
        "random",
        "reverse",
        "round",
        "slice",
    }
)


def _replace_size(text: str, old: Any, new: Any, count: Any = None) -> None:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return
    times = len(text) + 1 if old == "" else text.count(old)
    if _is_int(count) and count >= 0:
        times = min(times, count)
    check_string(len(text) + times * (len(new) - len(old)))


def _join_size(items: list[Any], separator: Any) -> None:
    if len(items) > MAX_ITEMS:
        raise _too_many_items()
    size = len(str(separator)) * max(len(items) - 1, 0)
    for item in items:
        size += printed_size(item).chars if isinstance(item, _CONTAINERS) else len(str(item))
        check_string(size)


def _prechecks(name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Arguments that would make a filter build something huge (``args[0]`` is the value)."""
    value = args[0] if args else None

    def arg(index: int, key: str, default: Any = None) -> Any:
        return args[index] if len(args) > index else kwargs.get(key, default)

    if name == "center":
        check_width(arg(1, "width"))
    elif name == "indent":
        width = arg(1, "width", 4)
        check_width(width, "indent")
        if isinstance(value, str):
            prefix = len(width) if isinstance(width, str) else width if _is_int(width) else 0
            check_string(len(value) + (value.count("\n") + 1) * max(prefix, 0))
    elif name == "wordwrap":
        width = arg(1, "width", 79)
        check_width(width)
        wrap = arg(3, "wrapstring") or "\n"
        if isinstance(value, str) and isinstance(wrap, str) and _is_int(width):
            # Greedy wrapping: two lines in a row hold more than `width` characters together.
            breaks = 2 * len(value) // max(width, 1) + value.count("\n") + 1
            check_string(len(value) + breaks * len(wrap))
    elif name == "format":
        _percent(value, args[1:] or kwargs)
    elif name == "replace":
        _replace_size(value, arg(1, "old"), arg(2, "new"), arg(3, "count"))
    elif name in ("batch", "slice"):
        count = arg(1, "linecount" if name == "batch" else "slices")
        if _is_int(count) and count > MAX_ITEMS:
            raise _too_many_items()
    elif name == "tojson":
        indent = arg(1, "indent")
        check_width(indent, "indent")
        size = printed_size(value)
        if _is_int(indent):  # each value goes on its own line, indented by its depth
            check_string(size.chars + size.nodes * (indent * size.depth + 2))
    elif name == "truncate":
        check_printable(arg(3, "end"))
    if name not in _ITEM_BLIND:
        for item in (*args, *kwargs.values()):
            check_printable(item)


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)  # keeps jinja_pass_arg (pass_context, pass_eval_context...)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _tick(clock=True)
        args_list = list(args[skip:])
        if name == "join" and args_list:
            args_list, kwargs = _measured_join(args[0] if skip else None, args_list, kwargs)
            args = (*args[:skip], *args_list)
        _prechecks(name, args_list, kwargs)
        return check_result(func(*args, **kwargs))

    return bounded


def _bounded_test(func: Callable[..., Any]) -> Callable[..., Any]:
    """Tests compare (``is in``, ``is eq``...): measure container arguments first."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _tick(clock=True)
        for item in (*args[skip:], *kwargs.values()):
            check_printable(item)
        return func(*args, **kwargs)

    return bounded


def _measured_join(
    eval_ctx: Any, args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """``join``: take the items once (a generator cannot be measured twice), look up the
    attribute if one is given, and measure the result before anything is joined."""
    items = list(_bounded_iter(args[0]))
    separator = args[1] if len(args) > 1 else kwargs.get("d", "")
    attribute = args[2] if len(args) > 2 else kwargs.get("attribute")
    if attribute is not None and eval_ctx is not None:
        items = list(map(make_attrgetter(eval_ctx.environment, attribute), items))
    _join_size(items, separator)
    return [items, separator], {}


def _bounded_iter(iterable: Any) -> Iterator[Any]:
    """Consume at most MAX_ITEMS items (a filter that materializes an iterator)."""
    for index, item in enumerate(iterable):
        if index >= MAX_ITEMS:
            raise _too_many_items()
        yield item


@pass_environment
def _sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """Jinja2's ``sum``, but lists and tuples are joined in one pass: Python's ``sum`` copies
    the running total at every item, which is quadratic inside one uninterruptible call."""
    items = list(_bounded_iter(iterable))
    if attribute is not None:
        items = list(map(make_attrgetter(environment, attribute), items))
    if isinstance(start, list | tuple):
        if any(type(item) is not type(start) for item in items):
            raise TypeError(f"sum of a {type(start).__name__} needs {type(start).__name__}s")
        if len(start) + sum(map(len, items)) > MAX_ITEMS:
            raise _too_many_items()
        return type(start)(itertools.chain(start, *items))
    return sum(items, start)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    if _is_int(n) and n > MAX_LIPSUM_PARAGRAPHS:
        raise RenderLimitExceeded(f"lipsum gives at most {MAX_LIPSUM_PARAGRAPHS} paragraphs")
    if _is_int(max) and max > MAX_LIPSUM_WORDS:
        raise RenderLimitExceeded(f"lipsum gives at most {MAX_LIPSUM_WORDS} words a paragraph")
    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


# --- methods called from templates -------------------------------------------------------------

_REFUSED_METHODS = frozenset({"translate", "maketrans"})  # output size depends on a table


def _check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Builtin methods of strings and numbers: numeric arguments are widths or counts, so bound
    them; ``replace``, ``join`` and ``expandtabs`` are measured first."""
    if not isinstance(obj, types.BuiltinMethodType | types.MethodType):
        return args
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, _CONTAINERS):  # `xs.count(x)`, `d.get(k)` compare and hash
        for value in (owner, *args, *kwargs.values()):
            check_printable(value)
        return args
    if not isinstance(owner, str | bytes | int | float) or isinstance(owner, bool):
        return args
    name = obj.__name__
    if name in _REFUSED_METHODS:
        raise RenderLimitExceeded(f"{name}() is not allowed in templates")
    for value in (*args, *kwargs.values()):
        check_width(value, f"the number given to {name}()")
    if name == "replace" and len(args) >= 2:
        _replace_size(owner, args[0], args[1], args[2] if len(args) > 2 else None)
    elif name == "join" and args:
        items = list(_bounded_iter(args[0]))
        _join_size(items, owner)
        args = (items, *args[1:])
    elif name == "expandtabs" and isinstance(owner, str):
        size = args[0] if args and _is_int(args[0]) else kwargs.get("tabsize", 8)
        check_string(len(owner) + owner.count("\t") * (size if _is_int(size) else 8))
    return args


# --- code generation -----------------------------------------------------------------------------

_LOOP_FILTER = "emailops_counted_loop"


class _BoundedCodeGenerator(CodeGenerator):
    """Routes output, ``~``, comparisons and container literals through the environment's
    checks, and makes every ``for`` iterate through the counting wrapper."""

    def visit_Template(self, node: nodes.Template, frame: Any = None) -> None:
        for loop in list(node.find_all(nodes.For)):
            loop.iter = nodes.Filter(loop.iter, _LOOP_FILTER, [], [], None, None)
            loop.iter.set_lineno(loop.lineno)
        super().visit_Template(node, frame)

    def _output_child_pre(self, node: nodes.Expr, frame: Any, finalize: Any) -> None:
        self.write("environment.emit(")
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: nodes.Expr, frame: Any, finalize: Any) -> None:
        super()._output_child_post(node, frame, finalize)
        self.write(")")

    def _output_const_repr(self, group: Iterable[Any]) -> str:
        return f"environment.emit({super()._output_const_repr(group)})"

    def visit_Concat(self, node: nodes.Concat, frame: Any) -> None:
        # As Jinja2's, but the parts are measured before they are joined.
        if frame.eval_ctx.volatile:
            join = "(markup_join if context.eval_ctx.volatile else str_join)"
        elif frame.eval_ctx.autoescape:
            join = "markup_join"
        else:
            join = "str_join"
        self.write(f"environment.concat_checked({join}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def _checked(self, visit: Callable[..., None], node: nodes.Node, frame: Any) -> None:
        self.write("environment.built(")
        visit(node, frame)
        self.write(")")

    def visit_List(self, node: nodes.List, frame: Any) -> None:
        self._checked(super().visit_List, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Any) -> None:
        if node.ctx != "load":  # an assignment target: `{% for a, b in ... %}`
            super().visit_Tuple(node, frame)
        else:
            self._checked(super().visit_Tuple, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Any) -> None:
        self._checked(super().visit_Dict, node, frame)

    # Comparing (or hashing, for `in`) containers walks them; a shared, deeply nested structure
    # makes that exponential, so container operands are measured first.
    def visit_Compare(self, node: nodes.Compare, frame: Any) -> None:
        self.write("(environment.compared(")
        self.visit(node.expr, frame)
        self.write(")")
        for op in node.ops:
            self.visit(op, frame)
        self.write(")")

    def visit_Operand(self, node: nodes.Operand, frame: Any) -> None:
        self.write(f" {operators[node.op]} environment.compared(")
        self.visit(node.expr, frame)
        self.write(")")


# --- the environment -----------------------------------------------------------------------------


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with every limit above, and stricter in one more way: reaching for
    an unsafe attribute raises at once (the stock sandbox returns an Undefined that raises when
    printed, but a lenient Undefined -- ours renders missing values empty -- would swallow it)."""

    code_generator_class = _BoundedCodeGenerator
    # Intercepting an operator also stops Jinja2 from folding it at compile time.
    intercepted_binops = frozenset({"**", "*", "%", "+"})

    def __init__(self, **options: Any) -> None:
        options.setdefault("optimized", False)  # nothing is evaluated at compile time
        super().__init__(**options)
        self.globals["lipsum"] = _lipsum
        self.filters[_LOOP_FILTER] = _counted_loop
        self.filters["sum"] = _sum
        self.filters = {
            name: func if name == _LOOP_FILTER else _bounded_filter(name, func)
            for name, func in self.filters.items()
        }
        self.tests = {name: _bounded_test(func) for name, func in self.tests.items()}

    def add_filter(self, name: str, func: Callable[..., Any]) -> None:
        self.filters[name] = _bounded_filter(name, func)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
        raise SecurityError(
            f"access to attribute {attribute!r} of a {type(obj).__name__} is not allowed"
        )

    # Hooks the generated code calls.

    def getattr(self, obj: Any, attribute: str) -> Any:
        _tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _tick()
        return super().getitem(obj, argument)

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        current = _budget.get()
        if current is not None:
            current.tick(clock=True)
            if isinstance(obj, LoopContext) and args:  # `loop(children)` in a recursive loop
                args = (current.count(args[0]), *args[1:])
            current.depth += 1
            if current.depth > current.limits.depth:
                raise RenderLimitExceeded(
                    f"calls nested more than {current.limits.depth} deep (a macro calling itself?)"
                )
        try:
            args = _check_method(obj, args, kwargs)
            return check_result(super().call(context, obj, *args, **kwargs))
        finally:
            if current is not None:
                current.depth -= 1

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        if operator == "**":
            if (
                _is_int(left)
                and _is_int(right)
                and abs(left) > 1
                and right * abs(left).bit_length() > MAX_POWER_BITS
            ):
                raise SecurityError(f"{left} ** {right} is too large for a template")
        elif operator == "*":
            _check_multiply(left, right)
        elif operator == "%":
            _percent(left, right)
        elif operator == "+":
            _check_add(left, right)
        return check_result(super().call_binop(context, operator, left, right))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` / ``format_map`` (however reached), with widths and fields bounded."""
        if super().wrap_str_format(value) is None:
            return None
        owner: str = value.__self__
        formatter: string.Formatter
        if isinstance(owner, Markup):
            formatter = _BoundedEscapeFormatter(self, escape=owner.escape)
        else:
            formatter = _BoundedFormatter(self)
        is_format_map = value.__name__ == "format_map"

        def bounded_format(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one mapping")
                args, kwargs = (), args[0]
            return check_result(type(owner)(formatter.vformat(owner, args, kwargs)))

        return functools.update_wrapper(bounded_format, value)

    # Helpers the generated code calls (see _BoundedCodeGenerator).

    def emit(self, text: str) -> str:
        current = _budget.get()
        return text if current is None else current.emit(text)

    def concat_checked(self, join: Callable[[Any], str], parts: tuple[Any, ...]) -> str:
        _tick()
        size = 0
        for part in parts:
            check_printable(part)
            size += len(part) if isinstance(part, str) else 0
        check_string(size)
        return check_result(join(parts))

    def built(self, value: Any) -> Any:
        _tick()
        if len(value) > MAX_ITEMS:
            raise _too_many_items()
        return check_built(value)

    def compared(self, value: Any) -> Any:
        check_printable(value)
        return value


@pass_context  # a pass_context filter is never evaluated at compile time
def _counted_loop(context: Any, iterable: Any) -> Any:
    current = _budget.get()
    return iterable if current is None else current.count(iterable)


def _check_multiply(left: Any, right: Any) -> None:
    if _is_int(left) and _is_int(right):
        if left.bit_length() + right.bit_length() > MAX_POWER_BITS:
            raise RenderLimitExceeded(
                f"the template built a number larger than {MAX_POWER_BITS} bits"
            )
        return
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and _is_int(times):
            if len(seq) * times > MAX_REPEAT:
                raise SecurityError("repeating a sequence that often is not allowed")
            if isinstance(seq, list | tuple) and times > 1:  # the result shares the items
                size = printed_size(seq)
                if (size.nodes - 1) * times > MAX_ITEMS:
                    raise _too_many_items()
                check_string(size.chars * times)


def _check_add(left: Any, right: Any) -> None:
    if isinstance(left, str) and isinstance(right, str):
        check_string(len(left) + len(right))
    elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if len(left) + len(right) > MAX_ITEMS:
            raise _too_many_items()
        if _holds_containers(left) or _holds_containers(right):
            printed_size((left, right))
