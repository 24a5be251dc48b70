"""The bounded Jinja2 sandbox: no template may use unbounded CPU, memory or time.

Anyone who can send a request (``context.subject`` is a template) or edit a template can run code
here, on the consumer's worker threads and in the console. The limits and the per-render budget
live in ``emailops.core.render_limits``; this module checks them in the sandbox's hooks (the
checks on filters, tests, methods and ``str.format`` are in ``emailops.core.sandbox_checks``):

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
import string
from collections.abc import Callable, Iterable
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, operators
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from emailops.core.render_limits import (
    MACRO_CALL_STEPS,
    MAX_ITEMS,
    MAX_POWER_BITS,
    RenderLimitExceeded,
    active_budget,
    check_add,
    check_built,
    check_measured,
    check_multiply,
    check_percent,
    check_printable,
    check_result,
    check_string,
    is_int,
    tick,
    too_many_items,
)
from emailops.core.sandbox_checks import (
    BoundedEscapeFormatter,
    BoundedFormatter,
    bounded_filter,
    bounded_sum,
    bounded_test,
    check_method,
)

__all__ = ["BoundedSandbox"]


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
        self.filters["sum"] = bounded_sum
        self.filters = {
            name: func if name == _LOOP_FILTER else bounded_filter(name, func)
            for name, func in self.filters.items()
        }
        self.tests = {name: bounded_test(func) for name, func in self.tests.items()}

    def add_filter(self, name: str, func: Callable[..., Any]) -> None:
        self.filters[name] = bounded_filter(name, func)

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
            args = check_method(obj, args, kwargs)
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
            formatter = BoundedEscapeFormatter(self, escape=owner.escape)
        else:
            formatter = BoundedFormatter(self)
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
