"""Storage stays in the adapter: above ``emailops/aws`` a journal row is a JournalRow
(emailops/core/journal_row.py), built by emailops/aws/journal_codec.py, and its stored attributes
are a typed value (emailops/core/stored_attributes.py). So no console, API, worker, preferences or
core module imports the codec or knows an attribute by name: none reads one (``["X"]``,
``.get("X")``), compares with one (``== "X"``, ``in ("X", ...)``), keeps one in a module
constant, or spreads a row or item (``**row``, ``dict(item)``, ``row.attributes``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from emailops.aws.journal_codec import ATTRIBUTE_ORDER

ROOT = Path(__file__).resolve().parent.parent
AREAS = ("templates_admin", "api", "worker", "preferences", "emailops")
ADAPTERS = ("emailops/aws/",)  # where attribute names and the codec belong
# Every attribute the codec knows (ATTRIBUTE_ORDER), and those it reads that a page never lists.
NAMES = frozenset(
    (
        *ATTRIBUTE_ORDER,
        "ContextTrimmed",
        "Producer",
        "DedupeId",
        "LoggedOnly",
        "LoggedOnlyReason",
        "LoggedOnlyDetail",
        "ExtraSends",
        "DeliveryOrder",
        "DeliveryEventCount",
    )
)
# Also a value SES gives (a bounce type): compared with and kept in constants as that.
ALSO_VALUES = frozenset({"Permanent"})
CODEC = "emailops.aws.journal_codec"
# Modules whose PascalCase keys are another format's, not the journal's: the name rules skip them
# (the codec import and spread rules still apply).
OTHER_FORMATS = {
    "worker/management/commands/load_template_mappings.py": "a mappings file's lines",
    "templates_admin/journal/csv_export.py": "the CSV's column headings",
    "emailops/client/sender.py": "SQS SendMessage(Batch) responses",
    "emailops/core/delivery_events.py": "SES event notifications",
    "emailops/core/template_check.py": "a MIME message's headers",
}
# What a spread of a journal row or item is named: row, rows, item, stored_row, raw_item...
_ROWISH = re.compile(r"(^|_)(row|rows|item|items)$")


def _name(node: ast.AST) -> str:
    """The last name of an expression: ``row`` of ``row``, ``attributes`` of ``entry.row.attributes``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _is_attribute_name(node: ast.AST, *, read: bool = True) -> bool:
    """A string constant naming an attribute (``read``: as a key; else compared or kept)."""
    return (
        isinstance(node, ast.Constant)
        and node.value in NAMES
        and (read or node.value not in ALSO_VALUES)
    )


def _names_in(node: ast.AST) -> bool:
    """An attribute name, or a tuple/list/set holding one (``in ("Status", ...)``)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_attribute_name(e, read=False) for e in node.elts)
    return _is_attribute_name(node, read=False)


def _spreads_a_row(node: ast.AST) -> bool:
    """``**row``, ``dict(item)``: a journal row or item taken whole, its attribute names with it."""
    return bool(_ROWISH.search(_name(node))) or _raw_bag(node)


def _raw_bag(node: ast.AST) -> bool:
    """``row.attributes``: the raw attribute bag a JournalRow no longer carries."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "attributes"
        and bool(_ROWISH.search(_name(node.value)))
    )


def _reads(node: ast.AST) -> bool:
    """``row["X"]``, ``row.get("X")`` (or ``pop``, ``setdefault``)."""
    if isinstance(node, ast.Subscript):
        return _is_attribute_name(node.slice)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "pop", "setdefault")
        and bool(node.args)
        and _is_attribute_name(node.args[0])
    )


def _spreads(node: ast.AST) -> bool:
    """``{**row}``, ``f(**item)``, ``dict(row)``."""
    if isinstance(node, ast.Dict):
        return any(
            k is None and _spreads_a_row(v) for k, v in zip(node.keys, node.values, strict=True)
        )
    if isinstance(node, ast.Call):
        return any(k.arg is None and _spreads_a_row(k.value) for k in node.keywords) or (
            _name(node.func) == "dict" and bool(node.args) and _spreads_a_row(node.args[0])
        )
    return False


def _module_constants(tree: ast.Module) -> Iterator[ast.Assign | ast.AnnAssign]:
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                yield statement


def _name_rules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Attribute names read, compared with or kept in a module constant."""
    for statement in _module_constants(tree):
        if any(_is_attribute_name(n, read=False) for n in ast.walk(statement.value)):
            yield statement.lineno, "constant holding an attribute name"
    for node in ast.walk(tree):
        if _reads(node):
            yield node.lineno, "reads an attribute"
        elif isinstance(node, ast.Compare) and any(
            _names_in(n) for n in (node.left, *node.comparators)
        ):
            yield node.lineno, "compares with an attribute name"


def _storage_rules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """The codec imported, a row or item spread, the raw attribute bag read."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {f"{node.module}.{alias.name}" for alias in node.names}
            if node.module == CODEC or CODEC in names:
                yield node.lineno, "imports the codec"
        elif isinstance(node, ast.Import) and any(a.name == CODEC for a in node.names):
            yield node.lineno, "imports the codec"
        elif _spreads(node):
            yield node.lineno, "spreads a row"
        elif _raw_bag(node):
            yield node.lineno, "reads the raw attribute bag"


def findings(root: Path) -> list[str]:
    found = []
    for area in AREAS:
        for path in sorted((root / area).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if "/migrations/" in relative or relative.startswith(ADAPTERS):
                continue
            source = path.read_text()
            lines = source.splitlines()
            tree = ast.parse(source)
            rules = [_storage_rules(tree)]
            if relative not in OTHER_FORMATS:
                rules.append(_name_rules(tree))
            for number, what in sorted({v for rule in rules for v in rule}):
                found.append(f"{relative}:{number}: {what}: {lines[number - 1].strip()}")
    return found


def test_nothing_above_the_adapters_knows_the_journals_storage():
    found = findings(ROOT)
    assert not found, "journal storage known above emailops/aws:\n" + "\n".join(found)


CAUGHT = {
    "templates_admin/reads.py": 'def f(row):\n    return row["ExpiresAt"], row.get("Status")\n',
    "api/compares.py": (
        "def f(name, value):\n"
        '    if name == "ExpiresAt":\n'
        "        return value\n"
        '    return name in ("Status", "Error")\n'
    ),
    "worker/constants.py": 'EPOCHS = (\n    "Timestamp",\n    "ClaimExpiresAt",\n)\n',
    "preferences/spreads.py": (
        "def f(row, item, stored_row):\n"
        "    a = {**row}\n"
        "    b = dict(item)\n"
        "    c = g(**stored_row)\n"
        "    return a, b, c, row.attributes\n"
    ),
    "emailops/core/imports.py": (
        "from emailops.aws.journal_codec import row_from_item\n"
        "from emailops.aws import journal_codec\n"
    ),
}
ALLOWED = {
    "emailops/aws/journal_codec.py": 'ORDER = ("Timestamp",)\n\ndef f(item):\n    return item["Id"]\n',
    "templates_admin/typed.py": (
        "__all__ = ['Status']\n"
        "LABEL = 'Timestamps'\n"
        "def g(bounce_type):\n"
        "    return bounce_type == 'Permanent'\n"
        "def f(row, message):\n"
        "    return row.expires_at, {**{'a': 1}}, dict(message.attributes), row.status == 'SENT'\n"
    ),
}


def test_the_check_catches_reads_comparisons_constants_spreads_and_codec_imports(tmp_path):
    for relative, source in {**CAUGHT, **ALLOWED}.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(source)

    found = findings(tmp_path)

    assert [line.split(": ", 2)[:2] for line in found] == [
        ["templates_admin/reads.py:2", "reads an attribute"],
        ["api/compares.py:2", "compares with an attribute name"],
        ["api/compares.py:4", "compares with an attribute name"],
        ["worker/constants.py:1", "constant holding an attribute name"],
        ["preferences/spreads.py:2", "spreads a row"],
        ["preferences/spreads.py:3", "spreads a row"],
        ["preferences/spreads.py:4", "spreads a row"],
        ["preferences/spreads.py:5", "reads the raw attribute bag"],
        ["emailops/core/imports.py:1", "imports the codec"],
        ["emailops/core/imports.py:2", "imports the codec"],
    ]
