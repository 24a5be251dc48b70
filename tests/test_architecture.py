"""Imports run one way (docs/architecture.md): core ← aws ← the rest of emailops ← the console ←
the API and the worker ← URL wiring. An import that runs upward, or between the API and the
worker, is a cycle waiting to happen; this test names each one."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("emailops", "templates_admin", "api", "worker")

# Lower rank = lower layer. A module may import its own layer or any lower one; the API and the
# worker share a rank but are separate layers, so neither imports the other.
LAYERS: dict[str, int] = {
    "emailops.core": 0,
    "emailops.aws": 1,
    "emailops.client": 1,
    "emailops": 2,  # wiring, settings, the Celery app (tasks by name only), health, logging
    "templates_admin": 3,
    "api": 4,
    "worker": 4,
    "emailops.urls": 5,  # ties the apps' URLs together
}


def layer_of(module: str) -> str:
    """The most specific LAYERS key that ``module`` falls under."""
    parts = module.split(".")
    for size in range(len(parts), 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in LAYERS:
            return prefix
    raise AssertionError(f"{module} is in no layer")


def project_imports() -> list[tuple[str, str, int]]:
    """(importing module, imported project module, line) for every import in the project's
    packages, module-level or not: a deferred import still ties the two together."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                found.extend(
                    (module, name, node.lineno) for name in names if name.split(".")[0] in PACKAGES
                )
    return found


def violations(imports: list[tuple[str, str, int]]) -> list[str]:
    bad = []
    for importer, imported, line in imports:
        source, target = layer_of(importer), layer_of(imported)
        upward = LAYERS[target] > LAYERS[source]
        sideways = LAYERS[target] == LAYERS[source] and source != target
        if upward or sideways:
            bad.append(f"{importer}:{line} imports {imported} ({source} → {target})")
    return bad


def test_imports_run_one_way():
    imports = project_imports()
    assert len(imports) > 100  # the walk did find the project's imports
    assert violations(imports) == []


def test_the_check_catches_an_upward_and_a_sideways_import():
    assert violations(
        [
            ("templates_admin.jobs.services", "worker.tasks", 1),
            ("api.sending", "worker.wiring", 2),
            ("emailops.core.pipeline", "emailops.wiring", 3),
            ("emailops.urls", "api.endpoints", 4),
            ("worker.tasks", "templates_admin.jobs.services", 5),
        ]
    ) == [
        "templates_admin.jobs.services:1 imports worker.tasks (templates_admin → worker)",
        "api.sending:2 imports worker.wiring (api → worker)",
        "emailops.core.pipeline:3 imports emailops.wiring (emailops.core → emailops)",
    ]
