"""The bounded Jinja2 sandbox: no template may use unbounded CPU, memory or time.

Anyone who can send a request (``context.subject`` is a template) or edit a template can run code
here, on the consumer's worker threads and in the console. The limits and the per-render budget
live in ``emailops.core.render_limits``; this module checks them in the sandbox's hooks:

- every call, attribute lookup, intercepted operator, filter, test, loop iteration and piece of
  output is a step, and steps check the deadline;
- every ``for`` iterates through a counting wrapper; calls count their depth;
- every piece of output, macro and block buffers included, counts against the output limit;
- operations that can grow a value (``%``, ``format``, ``+``, ``~``, ``*``, padding and wrapping
  filters, ``join``, ``replace``, ``sum``...) are checked *before* they run, from their arguments,
  so a 27-character template cannot allocate a gigabyte first and fail afterwards; whatever
  compares, hashes or prints a container measures it first (shared structures are tiny in memory
  and astronomically large when walked).
"""

from __future__ import annotations

import functools
import itertools
import string
import types
from collections.abc import Callable, Iterable
from typing import Any

from jinja2 import nodes, pass_context, pass_environment
from jinja2.compiler import CodeGenerator, operators
from jinja2.exceptions import SecurityError
from jinja2.filters import make_attrgetter
from jinja2.runtime import LoopContext, Macro
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
)
from markupsafe import Markup

from emailops.core.render_limits import (
    CONTAINERS,
    MACRO_CALL_STEPS,
    MAX_ITEMS,
    MAX_POWER_BITS,
    RenderLimitExceeded,
    active_budget,
    bounded_iter,
    check_add,
    check_built,
    check_format_spec,
    check_join,
    check_measured,
    check_multiply,
    check_percent,
    check_printable,
    check_replace,
    check_result,
    check_string,
    check_width,
    is_int,
    printed_size,
    tick,
    too_many_items,
)

__all__ = ["BoundedSandbox"]


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
            prefix = len(width) if isinstance(width, str) else width if is_int(width) else 0
            check_string(len(value) + (value.count("\n") + 1) * max(prefix, 0))
    elif name == "wordwrap":
        width = arg(1, "width", 79)
        check_width(width)
        wrap = arg(3, "wrapstring") or "\n"
        if isinstance(value, str) and isinstance(wrap, str) and is_int(width):
            # Greedy wrapping: two lines in a row hold more than `width` characters together.
            breaks = 2 * len(value) // max(width, 1) + value.count("\n") + 1
            check_string(len(value) + breaks * len(wrap))
    elif name == "format":
        check_percent(value, args[1:] or kwargs)
    elif name == "replace":
        check_replace(value, arg(1, "old"), arg(2, "new"), arg(3, "count"))
    elif name in ("batch", "slice"):
        count = arg(1, "linecount" if name == "batch" else "slices")
        if is_int(count) and count > MAX_ITEMS:
            raise too_many_items()
    elif name == "tojson":
        indent = arg(1, "indent")
        check_width(indent, "indent")
        size = printed_size(value)
        if is_int(indent):  # each value goes on its own line, indented by its depth
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
        tick(clock=True)
        args_list = list(args[skip:])
        if name == "join" and args_list:
            args_list, kwargs = _measured_join(args[0] if skip else None, args_list, kwargs)
            args = (*args[:skip], *args_list)
        _prechecks(name, args_list, kwargs)
        return check_result(func(*args, **kwargs))

    return bounded


def _bounded_test(func: Callable[..., Any]) -> Callable[..., Any]:
    """Tests compare (``is in``, ``is eq``...): measure container arguments first. They print
    nothing, so ``range is defined`` may look at a function."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        tick(clock=True)
        for item in (*args[skip:], *kwargs.values()):
            check_measured(item)
        return func(*args, **kwargs)

    return bounded


def _measured_join(
    eval_ctx: Any, args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """``join``: take the items once (a generator cannot be measured twice), look up the
    attribute if one is given, and measure the result before anything is joined."""
    items = list(bounded_iter(args[0]))
    separator = args[1] if len(args) > 1 else kwargs.get("d", "")
    attribute = args[2] if len(args) > 2 else kwargs.get("attribute")
    if attribute is not None and eval_ctx is not None:
        items = list(map(make_attrgetter(eval_ctx.environment, attribute), items))
    check_join(items, separator)
    return [items, separator], {}


@pass_environment
def _sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """Jinja2's ``sum``, but lists and tuples are joined in one pass: Python's ``sum`` copies
    the running total at every item, which is quadratic inside one uninterruptible call."""
    items = list(bounded_iter(iterable))
    if attribute is not None:
        items = list(map(make_attrgetter(environment, attribute), items))
    if isinstance(start, list | tuple):
        if any(type(item) is not type(start) for item in items):
            raise TypeError(f"sum of a {type(start).__name__} needs {type(start).__name__}s")
        if len(start) + sum(map(len, items)) > MAX_ITEMS:
            raise too_many_items()
        return type(start)(itertools.chain(start, *items))
    return sum(items, start)


# --- methods called from templates -------------------------------------------------------------

_REFUSED_METHODS = frozenset({"translate", "maketrans"})  # output size depends on a table


def _check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Builtin methods of strings and numbers: numeric arguments are widths or counts, so bound
    them; ``replace``, ``join`` and ``expandtabs`` are measured first."""
    if not isinstance(obj, types.BuiltinMethodType | types.MethodType):
        return args
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, CONTAINERS):  # `xs.count(x)`, `d.get(k)` compare and hash
        for value in (owner, *args, *kwargs.values()):
            check_measured(value)
        return args
    if not isinstance(owner, str | bytes | int | float) or isinstance(owner, bool):
        return args
    name = obj.__name__
    if name in _REFUSED_METHODS:
        raise RenderLimitExceeded(f"{name}() is not allowed in templates")
    for value in (*args, *kwargs.values()):
        check_width(value, f"the number given to {name}()")
    if name == "replace" and len(args) >= 2:
        check_replace(owner, args[0], args[1], args[2] if len(args) > 2 else None)
    elif name == "join" and args:
        items = list(bounded_iter(args[0]))
        check_join(items, owner)
        args = (items, *args[1:])
    elif name == "expandtabs" and isinstance(owner, str):
        size = args[0] if args and is_int(args[0]) else kwargs.get("tabsize", 8)
        check_string(len(owner) + owner.count("\t") * (size if is_int(size) else 8))
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
        # No constant folding. (Constant output is still folded while compiling; its filters
        # carry the same size checks, and a check that fails there leaves it to run time.)
        options.setdefault("optimized", False)
        super().__init__(**options)
        # Functions an email never needs; printed, each showed its memory address.
        for name in ("lipsum", "cycler", "joiner"):
            del self.globals[name]
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
        tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        tick()
        return super().getitem(obj, argument)

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        current = active_budget()
        if current is not None:
            current.tick(clock=True, steps=MACRO_CALL_STEPS if isinstance(obj, Macro) else 1)
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
        tick()
        if operator == "**":
            if (
                is_int(left)
                and is_int(right)
                and abs(left) > 1
                and right * abs(left).bit_length() > MAX_POWER_BITS
            ):
                raise SecurityError(f"{left} ** {right} is too large for a template")
        elif operator == "*":
            check_multiply(left, right)
        elif operator == "%":
            check_percent(left, right)
        elif operator == "+":
            check_add(left, right)
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
        current = active_budget()
        return text if current is None else current.emit(text)

    def concat_checked(self, join: Callable[[Any], str], parts: tuple[Any, ...]) -> str:
        tick()
        size = 0
        for part in parts:
            check_printable(part)
            size += len(part) if isinstance(part, str) else 0
        check_string(size)
        return check_result(join(parts))

    def built(self, value: Any) -> Any:
        tick()
        if len(value) > MAX_ITEMS:
            raise too_many_items()
        return check_built(value)

    def compared(self, value: Any) -> Any:
        check_measured(value)
        return value


@pass_context  # a pass_context filter is never evaluated at compile time
def _counted_loop(context: Any, iterable: Any) -> Any:
    current = active_budget()
    return iterable if current is None else current.count(iterable)
