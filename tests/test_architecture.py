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
    "emailops.redis": 1,
    "emailops": 2,  # the container, settings, the Celery app (tasks by name only), health, logging
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


def every_import() -> list[tuple[str, str, int]]:
    """(importing module, imported module, line) for every absolute import in the project's
    packages, whatever it imports, module-level or deferred."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    found.extend((module, alias.name, node.lineno) for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.append((module, node.module, node.lineno))
    return found


def project_imports() -> list[tuple[str, str, int]]:
    """(importing module, imported project module, line) for every import in the project's
    packages, module-level or not: a deferred import still ties the two together."""
    return [found for found in every_import() if found[1].split(".")[0] in PACKAGES]


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


# --- Third-party and standard-library imports that belong to one place --------------------------


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def redis_outside_its_package(imports: list[tuple[str, str, int]]) -> list[str]:
    """redis is imported only in emailops.redis, whose client factory turns Redis's errors into
    core's SharedStateUnavailable: nothing above it needs to know Redis's exceptions."""
    return [
        f"{importer}:{line} imports {imported} (only emailops.redis may)"
        for importer, imported, line in imports
        if _within(imported, "redis") and not _within(importer, "emailops.redis")
    ]


def threads_in_core(imports: list[tuple[str, str, int]]) -> list[str]:
    """emailops.core starts no thread and makes no lock: locks are injected (the container makes
    them), so core stays plain code, tested without threads. No exceptions."""
    return [
        f"{importer}:{line} imports {imported} (core takes its locks injected)"
        for importer, imported, line in imports
        if _within(importer, "emailops.core") and imported.split(".")[0] in ("threading", "_thread")
    ]


def test_redis_is_imported_only_in_the_redis_package():
    imports = every_import()
    assert any(_within(imported, "redis") for _, imported, _ in imports)  # the walk sees redis
    assert redis_outside_its_package(imports) == []


def test_the_check_catches_redis_outside_its_package():
    assert redis_outside_its_package(
        [
            ("templates_admin.dashboard.views", "redis", 18),
            ("api.ratelimit", "redis.retry", 21),
            ("emailops.redis.client", "redis", 3),
            ("emailops.redis.rate", "redis.backoff", 4),
            ("emailops.redis_rate", "redis", 5),  # a sibling module's name is not the package
        ]
    ) == [
        "templates_admin.dashboard.views:18 imports redis (only emailops.redis may)",
        "api.ratelimit:21 imports redis.retry (only emailops.redis may)",
        "emailops.redis_rate:5 imports redis (only emailops.redis may)",
    ]


def test_core_never_imports_threading():
    imports = every_import()
    assert any(_within(importer, "emailops.core") for importer, _, _ in imports)
    assert threads_in_core(imports) == []


def test_the_check_catches_threading_in_core():
    assert threads_in_core(
        [
            ("emailops.core.ratelimit", "threading", 35),
            ("emailops.core.template_cache", "_thread", 16),
            ("emailops.aws.clients", "threading", 10),
            ("worker.consumer", "threading", 23),
        ]
    ) == [
        "emailops.core.ratelimit:35 imports threading (core takes its locks injected)",
        "emailops.core.template_cache:16 imports _thread (core takes its locks injected)",
    ]
