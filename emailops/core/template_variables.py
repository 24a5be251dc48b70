"""Which context variables a parsed template reads, and which of them it reads only where it has
tested them first (``{{if .x}}…{{end}}``, ``{{with .x}}…{{end}}``, Jinja's ``{% if x %}``): those
are optional, so a send without them is not "missing" anything."""

from __future__ import annotations

from collections.abc import Iterator

from jinja2 import meta, nodes

__all__ = ["guarded_variables", "read_variables"]

ROOT = "_root"  # Go's `$` and `.x` at the top: emailops.core.gotemplate reads fields through it


def read_variables(ast: nodes.Template) -> set[str]:
    """Top-level context variables the template reads (``{{$.x}}`` counts as x)."""
    found = set(meta.find_undeclared_variables(ast)) - {ROOT}
    for node in ast.find_all(nodes.Getitem):
        if (name := _root_field(node)) is not None:
            found.add(name)
    return found


def guarded_variables(ast: nodes.Template) -> set[str]:
    """The variables of ``read_variables`` whose every read is in the test, or the body, of a
    block that tests that variable."""
    context = read_variables(ast)
    unguarded: set[str] = set()
    _walk(ast, frozenset(), context, unguarded)
    return context - unguarded


def _root_field(node: nodes.Node) -> str | None:
    if (
        isinstance(node, nodes.Getitem)
        and isinstance(node.node, nodes.Name)
        and node.node.name == ROOT
        and isinstance(node.arg, nodes.Const)
        and isinstance(node.arg.value, str)
    ):
        return node.arg.value
    return None


def _reads(node: nodes.Node, context: set[str]) -> Iterator[str]:
    """Context variables read anywhere in an expression."""
    for child in [node, *node.find_all((nodes.Name, nodes.Getitem))]:
        if (field := _root_field(child)) is not None:
            yield field
        elif isinstance(child, nodes.Name) and child.ctx == "load" and child.name in context:
            yield child.name


def _walk(node: nodes.Node, guards: frozenset[str], context: set[str], unguarded: set) -> None:
    if isinstance(node, nodes.If):
        tested = frozenset(_reads(node.test, context))  # a test reads what it tests: guarded
        for child in node.body:
            _walk(child, guards | tested, context, unguarded)
        for child in (*node.elif_, *node.else_):
            _walk(child, guards, context, unguarded)
        return
    if isinstance(node, nodes.With) and _is_go_with(node):
        # Go's {{with .x}} is `{% with _dotN = x %}{% if _dotN %}…`: x is tested through _dotN.
        tested = frozenset(r for value in node.values for r in _reads(value, context))
        for child in node.body:
            _walk(child, guards | tested, context, unguarded)
        return
    if isinstance(node, nodes.Name | nodes.Getitem):
        unguarded.update(set(_reads(node, context)) - guards)
        return
    for child in node.iter_child_nodes():
        _walk(child, guards, context, unguarded)


def _is_go_with(node: nodes.With) -> bool:
    body = node.body
    return (
        len(body) == 1
        and isinstance(body[0], nodes.If)
        and isinstance(body[0].test, nodes.Name)
        and [t.name for t in node.targets if isinstance(t, nodes.Name)] == [body[0].test.name]
    )
