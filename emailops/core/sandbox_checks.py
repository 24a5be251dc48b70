"""The bounded sandbox's checks on values: ``str.format`` fields, filters, tests and the methods
a template may call, each checked against ``emailops.core.render_limits`` *before* it runs (the
why is in ``emailops.core.sandbox``, which installs them)."""

from __future__ import annotations

import functools
import itertools
import types
from collections.abc import Callable
from typing import Any

from jinja2 import pass_environment
from jinja2.filters import make_attrgetter
from jinja2.sandbox import SandboxedEscapeFormatter, SandboxedFormatter

from emailops.core.render_limits import (
    CONTAINERS,
    MAX_ITEMS,
    RenderLimitExceeded,
    bounded_iter,
    check_format_spec,
    check_join,
    check_measured,
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

__all__ = [
    "BoundedEscapeFormatter",
    "BoundedFormatter",
    "bounded_filter",
    "bounded_sum",
    "bounded_test",
    "check_method",
]

# --- str.format with bounded fields --------------------------------------------------------------


class _BoundedFormatterMixin:
    def convert_field(self, value: Any, conversion: str | None) -> Any:
        check_printable(value)  # `{0!r}` prints the value before format_field sees it
        return super().convert_field(value, conversion)  # type: ignore[misc]

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_format_spec(format_spec)
        check_printable(value)
        return super().format_field(value, format_spec)  # type: ignore[misc]


class BoundedFormatter(_BoundedFormatterMixin, SandboxedFormatter):
    """Formats plain strings."""


class BoundedEscapeFormatter(_BoundedFormatterMixin, SandboxedEscapeFormatter):
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


def bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
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


def bounded_test(func: Callable[..., Any]) -> Callable[..., Any]:
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
def bounded_sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
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


def check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
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
