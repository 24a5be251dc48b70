"""Render limits: the constants, one render's budget, and the size checks.

A template can ask for unbounded work in a few characters (``{{ '%0999999999d' % 1 }}``, a macro that
calls itself, a list that holds itself twice, nested 40 deep). ``emailops.core.sandbox`` calls into
this module from its hooks; this module knows nothing of Jinja2's code generation.

The budget is kept in a context variable (no threads, no signals: renders run on worker threads)
and counts steps, loop iterations, call depth, output and CPU time. The size checks need no budget,
so they hold at compile time too, where Jinja2 folds constant output: a filter call that fails a
check there is left for run time, where it fails again.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import Undefined
from jinja2.utils import Namespace

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
# A macro call runs Jinja's own machinery (~20 us, a dozen cheap steps' worth): it counts as this
# many steps, so a macro fanning out is stopped by the count, well inside the CPU deadline.
MACRO_CALL_STEPS = 10
MAX_RENDER_SECONDS = 1.0  # CPU time; real emails render in milliseconds
MAX_POWER_BITS = 4096  # `n ** e` and `n * m` results beyond this many bits are refused
MAX_REPEAT = 100_000  # `'x' * n` / `[x] * n` results beyond this length are refused


class RenderLimitExceeded(SecurityError):
    """A template went over one of the limits; the message says which, in plain words."""


@dataclass(frozen=True)
class Limits:
    output: int = MAX_OUTPUT
    iterations: int = MAX_LOOP_ITERATIONS
    depth: int = MAX_CALL_DEPTH
    operations: int = MAX_OPERATIONS
    seconds: float = MAX_RENDER_SECONDS
    # CPU time of the rendering thread, not wall time: a permanent failure must not depend on how
    # busy the machine (or the GIL) is. A parameter so that tests can drive the deadline.
    clock: Callable[[], float] = field(default=time.thread_time, compare=False, repr=False)


def _mb(chars: int) -> str:
    return f"{chars / 1_000_000:g} MB"


class _Budget:
    __slots__ = ("clock", "deadline", "depth", "iterations", "limits", "operations", "output")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.clock = limits.clock
        self.deadline = self.clock() + limits.seconds
        self.iterations = 0
        self.operations = 0
        self.output = 0
        self.depth = 0

    def tick(self, *, clock: bool = False, steps: int = 1) -> None:
        # The count stops call-heavy templates (a macro calling itself twice, 30 deep) early and
        # the same way on every machine; the deadline stops anything slow that the count misses.
        self.operations += steps
        if self.operations > self.limits.operations:
            raise RenderLimitExceeded(
                f"the template took more than {self.limits.operations:,} steps"
                " (calls, lookups, operators, loop iterations)"
            )
        # Reading a thread's CPU clock is a system call (~1 us): look at every filter and call
        # (the steps that can take milliseconds) and at every 8th cheap step.
        if (clock or not self.operations & 7) and self.clock() > self.deadline:
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


_active: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "render_budget", default=None
)


@contextlib.contextmanager
def budget(limits: Limits) -> Iterator[None]:
    """``with budget(limits): template.render(...)`` -- one render's limits, starting now."""
    token = _active.set(_Budget(limits))
    try:
        yield
    finally:
        _active.reset(token)


def active_budget() -> _Budget | None:
    """The budget of the render running in this context (None outside renders, e.g. compiling)."""
    return _active.get()


def tick(*, clock: bool = False) -> None:
    current = _active.get()
    if current is not None:
        current.tick(clock=clock)


# --- size checks (no budget needed: these hold at compile time too) ------------------------------

CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_width(value: Any, what: str = "width") -> None:
    if is_int(value) and abs(value) > MAX_WIDTH:
        raise RenderLimitExceeded(f"{what} {value} is too large (at most {MAX_WIDTH:,})")


def check_string(length: int) -> None:
    if length > MAX_STRING:
        raise RenderLimitExceeded(f"the template built a string longer than {_mb(MAX_STRING)}")


def too_many_items() -> RenderLimitExceeded:
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
            raise too_many_items()
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
        elif is_int(item):
            chars += item.bit_length() // 3 + 2
        elif is_code(item):
            raise code_printed(item)
        else:
            chars += 8
        if chars > MAX_STRING:
            check_string(chars)
    return Size(chars=chars, nodes=nodes_seen, depth=deepest)


def is_code(value: Any) -> bool:
    """A function, method, class or macro: what it prints is its memory address (which helps
    whoever probes the process), never something an email should say."""
    return callable(value) and not isinstance(value, Undefined)


def code_printed(value: Any) -> SecurityError:
    return SecurityError(f"a template cannot print a function or class ({type(value).__name__})")


def check_measured(value: Any) -> None:
    """Containers must be small enough to walk (compare, hash, print)."""
    if isinstance(value, CONTAINERS):
        printed_size(value)


def check_printable(value: Any) -> None:
    """About to be turned into text: small enough, and no function anywhere in it."""
    if isinstance(value, CONTAINERS):
        printed_size(value)
    elif is_code(value):
        raise code_printed(value)


def check_result(value: Any) -> Any:
    """Cheap check on anything a call or filter returned."""
    if isinstance(value, str | bytes):
        check_string(len(value))
    elif isinstance(value, list | tuple | dict | set | frozenset) and len(value) > MAX_ITEMS:
        raise too_many_items()
    return value


def holds_containers(items: Iterable[Any]) -> bool:
    # The distinct types, collected in C: `ns.rows + [row]` in a loop stays cheap.
    return any(issubclass(kind, CONTAINERS) for kind in set(map(type, items)))


def check_built(value: Any) -> Any:
    """A list, tuple or dict literal: if it holds containers, its printed size must be bounded
    (each doubling of a shared structure is a new literal)."""
    items = value.values() if isinstance(value, dict) else value
    if holds_containers(items):
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


def check_percent(value: Any, args: Any) -> None:
    if isinstance(value, str):
        check_percent_format(value)
        check_printable(args)


def check_replace(text: str, old: Any, new: Any, count: Any = None) -> None:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return
    times = len(text) + 1 if old == "" else text.count(old)
    if is_int(count) and count >= 0:
        times = min(times, count)
    check_string(len(text) + times * (len(new) - len(old)))


def check_join(items: list[Any], separator: Any) -> None:
    if len(items) > MAX_ITEMS:
        raise too_many_items()
    size = len(str(separator)) * max(len(items) - 1, 0)
    for item in items:
        size += printed_size(item).chars if isinstance(item, CONTAINERS) else len(str(item))
        check_string(size)


def bounded_iter(iterable: Any) -> Iterator[Any]:
    """Consume at most MAX_ITEMS items (a filter that materializes an iterator)."""
    for index, item in enumerate(iterable):
        if index >= MAX_ITEMS:
            raise too_many_items()
        yield item


def check_multiply(left: Any, right: Any) -> None:
    if is_int(left) and is_int(right):
        if left.bit_length() + right.bit_length() > MAX_POWER_BITS:
            raise RenderLimitExceeded(
                f"the template built a number larger than {MAX_POWER_BITS} bits"
            )
        return
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and is_int(times):
            if len(seq) * times > MAX_REPEAT:
                raise SecurityError("repeating a sequence that often is not allowed")
            if isinstance(seq, list | tuple) and times > 1:  # the result shares the items
                size = printed_size(seq)
                if (size.nodes - 1) * times > MAX_ITEMS:
                    raise too_many_items()
                check_string(size.chars * times)


def check_add(left: Any, right: Any) -> None:
    if isinstance(left, str) and isinstance(right, str):
        check_string(len(left) + len(right))
    elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if len(left) + len(right) > MAX_ITEMS:
            raise too_many_items()
        if holds_containers(left) or holds_containers(right):
            printed_size((left, right))
