"""Imports run one way (docs/architecture.md): core ← aws ← the rest of emailops ← the capabilities
(audit, monitoring, webhooks, jobs) ← the console ← the API and the worker ← URL wiring. An import that runs upward, or between the API and the
worker, is a cycle waiting to happen; this test names each one."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "emailops",
    "audit",
    "monitoring",
    "webhooks",
    "jobs",
    "templates_admin",
    "api",
    "worker",
    "preferences",
)

# Lower rank = lower layer. A module may import its own layer or any lower one; the API and the
# worker share a rank but are separate layers, so neither imports the other.
LAYERS: dict[str, int] = {
    "emailops.core": 0,
    "emailops.aws": 1,
    "emailops.client": 1,
    "emailops": 2,  # wiring, settings, the Celery app (tasks by name only), health, logging
    # The capabilities in their own apps: the console shows and drives them, they never see it.
    "audit": 3,  # the read audit and the audit trails' retention
    "monitoring": 3,  # beat's periodic checks and their readings
    "webhooks": 4,  # endpoints and delivery (a worker on its queue is a reading)
    "jobs": 4,  # the job engine; the kinds are registered by the apps that offer them
    "templates_admin": 5,
    "api": 6,
    "worker": 6,
    "preferences": 6,  # the public unsubscribe page: emailops, and the console's category labels
    "emailops.urls": 7,  # ties the apps' URLs together
}


def layer_of(module: str) -> str:
    """The most specific LAYERS key that ``module`` falls under."""
    parts = module.split(".")
    for size in range(len(parts), 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in LAYERS:
            return prefix
    raise AssertionError(f"{module} is in no layer")


def absolute_imports(
    root: Path, packages: tuple[str, ...], *, imported_names: bool = False
) -> list[tuple[str, str, int]]:
    """(importing module, imported name, line) for every absolute import in ``packages`` under
    ``root``, module-level or not: a deferred import still ties the two together. With
    ``imported_names``, ``from a import b`` gives ``a.b`` (which may be a module), else ``a``."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = (
                        [f"{node.module}.{alias.name}" for alias in node.names]
                        if imported_names
                        else [node.module]
                    )
                else:
                    continue
                found.extend((module, name, node.lineno) for name in names)
    return found


def project_imports() -> list[tuple[str, str, int]]:
    """(importing module, imported project module, line) for every import in the project."""
    return [
        (module, name, line)
        for module, name, line in absolute_imports(ROOT, PACKAGES)
        if name.split(".")[0] in PACKAGES
    ]


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


# The capabilities below the console: the console imports them, they never import it.
CAPABILITIES = ("audit", "monitoring", "webhooks", "jobs")


def console_imports_below(imports: list[tuple[str, str, int]], below: tuple[str, ...]) -> list[str]:
    """Imports of the console from a package in ``below`` (deferred ones included)."""
    return [
        f"{importer}:{line} imports {imported}"
        for importer, imported, line in imports
        if importer.split(".")[0] in below and _within(imported, "templates_admin")
    ]


def test_the_capabilities_never_import_the_console():
    imports = project_imports()
    assert {importer.split(".")[0] for importer, _, _ in imports} >= set(CAPABILITIES)
    assert console_imports_below(imports, CAPABILITIES) == []


def test_the_worker_imports_nothing_from_the_console():
    """The worker's tasks call the capabilities' apps; what the console owns (job kinds, the
    template check, the reputation guard) it registers with them, and the tasks run it by name."""
    imports = project_imports()
    assert any(importer.startswith("worker.") for importer, _, _ in imports)
    assert console_imports_below(imports, ("worker",)) == []


def test_the_capability_check_catches_an_import_of_the_console():
    assert console_imports_below(
        [
            ("audit.retention", "templates_admin.models", 12),
            ("audit.reads", "emailops.container", 3),
            ("templates_admin.admin", "audit.reads", 4),
            ("audit.apps", "templates_admin_extra", 5),  # a sibling's name is not the console
        ],
        CAPABILITIES,
    ) == ["audit.retention:12 imports templates_admin.models"]


# --- The console's areas (templates_admin): one-way dependencies, no circles -------------------

CONSOLE = "templates_admin"
CONSOLE_AREAS = (
    "dashboard",
    "drafts",
    "jobs",
    "journal",
    "mappings",
    "reputation",
    "suppression",
    "webhooks",
)
# The bottom layer every area may use; it uses no area.
CONSOLE_SHARED = (
    "categories",
    "console",
    "csp",
    "display",
    "forms",
    "login_throttle",
    "models",
    "roles",
)
# What puts the areas together (admin entries and URLs, commands, template tags); no area or
# shared module imports these.
CONSOLE_TOP = ("admin", "apps", "management", "migrations", "templatetags")


def console_part(module: str) -> str | None:
    """The console part ``module`` belongs to ("journal", "roles"...), None outside the console."""
    parts = module.split(".")
    if parts[0] != CONSOLE or len(parts) < 2:
        return None
    return parts[1]


def console_imports(root: Path = ROOT) -> list[tuple[str, str, int]]:
    """(importing module, imported console module, line) for every import in the console,
    deferred ones included; ``from templates_admin import roles`` names ``templates_admin.roles``."""
    return [
        (module, name, line)
        for module, name, line in absolute_imports(root, (CONSOLE,), imported_names=True)
        if console_part(name)
    ]


def console_violations(imports: list[tuple[str, str, int]]) -> list[str]:
    """Imports that break the console's shape: a shared module using an area, anything but the
    top importing the top, and every import between two areas that closes a circle."""
    known = {*CONSOLE_AREAS, *CONSOLE_SHARED, *CONSOLE_TOP}
    bad = []
    edges: dict[str, set[str]] = {}
    between: list[tuple[str, str, str, str, int]] = []
    for importer, imported, line in imports:
        source, target = console_part(importer), console_part(imported)
        if source is None or target is None or source == target:
            continue
        for part in (source, target):
            if part not in known:
                bad.append(f"{importer}:{line}: {part!r} is in no console layer; place it")
        if target in CONSOLE_TOP and source not in CONSOLE_TOP:
            bad.append(f"{importer}:{line} imports {imported} ({source} → {target}, the top)")
        elif source in CONSOLE_SHARED and target in CONSOLE_AREAS:
            bad.append(f"{importer}:{line} imports {imported} (shared {source} → area {target})")
        elif source in CONSOLE_AREAS and target in CONSOLE_AREAS:
            edges.setdefault(source, set()).add(target)
            between.append((source, target, importer, imported, line))

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            area = todo.pop()
            if area == goal:
                return True
            if area not in seen:
                seen.add(area)
                todo.extend(edges.get(area, ()))
        return False

    for source, target, importer, imported, line in between:
        if reaches(target, source):
            bad.append(
                f"{importer}:{line} imports {imported} ({source} → {target}, and {target} "
                f"leads back to {source})"
            )
    return bad


def test_console_areas_import_each_other_one_way():
    imports = console_imports()
    assert len(imports) > 100  # the walk did find the console's imports
    assert console_violations(imports) == []


def test_the_console_check_catches_circles_a_shared_module_using_an_area_and_an_unplaced_part():
    assert console_violations(
        [
            ("templates_admin.drafts.services", "templates_admin.mappings.services", 1),
            ("templates_admin.mappings.urls", "templates_admin.drafts.urls", 2),
            ("templates_admin.journal.views", "templates_admin.suppression.selectors", 3),
            ("templates_admin.jobs.dlq", "templates_admin.journal.presentation", 4),
            ("templates_admin.console", "templates_admin.journal.views", 5),
            ("templates_admin.jobs.views", "templates_admin.admin", 6),
            ("templates_admin.admin", "templates_admin.jobs", 7),
            ("templates_admin.newarea.views", "templates_admin.roles", 8),
        ]
    ) == [
        "templates_admin.console:5 imports templates_admin.journal.views"
        " (shared console → area journal)",
        "templates_admin.jobs.views:6 imports templates_admin.admin (jobs → admin, the top)",
        "templates_admin.newarea.views:8: 'newarea' is in no console layer; place it",
        "templates_admin.drafts.services:1 imports templates_admin.mappings.services"
        " (drafts → mappings, and mappings leads back to drafts)",
        "templates_admin.mappings.urls:2 imports templates_admin.drafts.urls"
        " (mappings → drafts, and drafts leads back to mappings)",
    ]


def test_a_deferred_import_counts(tmp_path):
    """An import inside a function ties two areas together as much as one at the top."""
    package = tmp_path / CONSOLE
    (package / "drafts").mkdir(parents=True)
    (package / "mappings").mkdir()
    (package / "drafts" / "views.py").write_text("from templates_admin.mappings import views\n")
    (package / "mappings" / "views.py").write_text(
        "def later():\n    from templates_admin.drafts import views\n"
    )
    assert [v.split(" (")[0] for v in console_violations(console_imports(tmp_path))] == [
        "templates_admin.drafts.views:1 imports templates_admin.mappings.views",
        "templates_admin.mappings.views:2 imports templates_admin.drafts.views",
    ]


# --- AWS libraries only in the adapters -------------------------------------------------------

AWS_LIBRARIES = ("boto3", "botocore")
AWS_ADAPTERS = "emailops.aws"


def aws_imports(root: Path = ROOT) -> list[tuple[str, str, int]]:
    """(module, AWS library, line) for every boto3/botocore import in the project's packages."""
    return [
        (module, name, line)
        for module, name, line in absolute_imports(root, PACKAGES)
        if name.split(".")[0] in AWS_LIBRARIES
    ]


def aws_violations(imports: list[tuple[str, str, int]]) -> list[str]:
    return [
        f"{module}:{line} imports {name} (only {AWS_ADAPTERS} may)"
        for module, name, line in imports
        if module != AWS_ADAPTERS and not module.startswith(AWS_ADAPTERS + ".")
    ]


def test_only_the_aws_adapters_import_boto3_or_botocore():
    imports = aws_imports()
    assert len(imports) > 10  # the walk did find the adapters' imports
    assert aws_violations(imports) == []


def test_the_aws_check_catches_boto3_outside_the_adapters(tmp_path):
    (tmp_path / "emailops" / "aws").mkdir(parents=True)
    (tmp_path / "emailops" / "aws" / "s3.py").write_text("import boto3\n")
    (tmp_path / "emailops" / "client").mkdir()
    (tmp_path / "emailops" / "client" / "sender.py").write_text(
        "def send():\n    from botocore.exceptions import ClientError\n"
    )
    (tmp_path / "emailops" / "awsome.py").write_text("import boto3.session\n")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    assert aws_violations(aws_imports(tmp_path)) == [
        "emailops.awsome:1 imports boto3.session (only emailops.aws may)",
        "emailops.client.sender:2 imports botocore.exceptions (only emailops.aws may)",
    ]


# --- Third-party and standard-library imports that belong to one place --------------------------


def every_import() -> list[tuple[str, str, int]]:
    """(importing module, imported module, line) for every absolute import in the project's
    packages, whatever it imports, module-level or deferred."""
    return absolute_imports(ROOT, PACKAGES)


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


# --- No file-level import circles, anywhere in the product ---------------------------------------


def project_modules(root: Path = ROOT) -> set[str]:
    return {
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for package in PACKAGES
        if (root / package).is_dir()
        for path in (root / package).rglob("*.py")
    }


def module_edges(root: Path = ROOT) -> dict[str, set[str]]:
    """importer → the project modules it imports: deferred and TYPE_CHECKING imports included (a
    circle through either is still a circle a refactor trips over). ``from a import b`` counts as
    ``a.b`` when that is a module, else as ``a``."""
    modules = project_modules(root)

    def owner(name: str) -> str | None:
        parts = name.split(".")
        for size in range(len(parts), 0, -1):
            if (candidate := ".".join(parts[:size])) in modules:
                return candidate
        return None

    edges: dict[str, set[str]] = {}
    for importer, name, _ in absolute_imports(root, PACKAGES, imported_names=True):
        target = owner(name)
        if target is not None and target != importer:
            edges.setdefault(importer, set()).add(target)
    return edges


def import_circles(edges: dict[str, set[str]]) -> list[str]:
    """Each set of modules that import one another round a circle (a strongly connected
    component of two or more), as one sorted line."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []
    for start in sorted(edges):
        if start in order:
            continue
        # Tarjan's algorithm, iterative: the module graph is deep enough to hit recursion limits.
        work = [(start, iter(sorted(edges.get(start, ()))))]
        order[start] = low[start] = len(order)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in order:
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], order[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == order[node]:
                members = []
                while True:
                    member = stack.pop()
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(" ↔ ".join(sorted(members)))
    return sorted(circles)


def test_no_module_imports_round_a_circle():
    edges = module_edges()
    assert sum(map(len, edges.values())) > 500  # the walk did find the project's imports
    assert import_circles(edges) == []


def test_the_circle_check_sees_deferred_and_type_checking_imports(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "emailops" / "a.py").write_text("from emailops import b\n")
    (tmp_path / "emailops" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from emailops.a import X\n"
    )
    (tmp_path / "worker" / "c.py").write_text("def later():\n    import worker.d\n")
    (tmp_path / "worker" / "d.py").write_text("from worker.e import thing\n")
    (tmp_path / "worker" / "e.py").write_text("from worker.c import later\n")
    (tmp_path / "api" / "f.py").write_text("from api import g\n")
    (tmp_path / "api" / "g.py").write_text("import json\n")
    assert import_circles(module_edges(tmp_path)) == [
        "emailops.a ↔ emailops.b",
        "worker.c ↔ worker.d ↔ worker.e",
    ]


# --- Benchmarks drive the product, never its libraries directly ---------------------------------

BENCH_FORBIDDEN = ("boto3", "botocore", "redis")


def bench_library_imports(root: Path = ROOT) -> list[str]:
    """bench/ measures the product through its own adapters: a benchmark that opens its own
    boto3 or Redis client measures something the product does not do."""
    bad = []
    for path in sorted((root / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            bad.extend(
                f"bench/{path.name}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] in BENCH_FORBIDDEN
            )
    return bad


def test_benchmarks_import_neither_boto3_nor_redis():
    assert len(list((ROOT / "bench").glob("*.py"))) > 5  # the walk did find the benchmarks
    assert bench_library_imports() == []


def test_the_bench_check_catches_a_deferred_redis_import(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.py").write_text(
        "import moto_env\ndef f():\n    import redis\n    from botocore.config import Config\n"
    )
    assert bench_library_imports(tmp_path) == [
        "bench/x.py:3 imports redis",
        "bench/x.py:4 imports botocore.config",
    ]


# --- The container is reached only where a process (or a request) starts --------------------------

# Where a process or a request begins, and so may ask for the process's container; everything
# below takes its collaborators as arguments (docs/architecture.md, "Composed once per process").
ENTRY_MODULES = {
    "emailops.container",  # defines it
    "emailops.middleware",  # a web request: request.container
    "emailops.wsgi",  # the web process's start
    "emailops.celery",  # the Celery app's start
    "worker.tasks",  # each Celery task is a start
}


def is_entry(module: str) -> bool:
    """An entry module: one listed above, or a management command (each run is a process)."""
    return module in ENTRY_MODULES or ".management.commands." in module


def current_calls(root: Path = ROOT) -> list[str]:
    """module:line of every ``current()`` call (``container.current()`` or a bare imported one)."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Call):
                    continue
                called = node.func
                name = (
                    called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                )
                if name == "current" and not node.args and not node.keywords:
                    found.append(f"{module}:{node.lineno}")
    return found


def test_the_container_is_reached_only_in_entry_modules():
    calls = current_calls()
    assert any(c.startswith("worker.tasks:") for c in calls)  # the walk does see the entries
    assert [c for c in calls if not is_entry(c.split(":")[0])] == []


def test_the_entry_check_catches_a_selector_reaching_for_the_container(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "templates_admin" / "selectors.py").write_text(
        "from emailops import container\ndef rows():\n    return container.current().journal\n"
    )
    (tmp_path / "worker" / "management" / "commands").mkdir(parents=True)
    (tmp_path / "worker" / "management" / "commands" / "go.py").write_text(
        "from emailops.container import current\ncurrent()\n"
    )
    calls = current_calls(tmp_path)
    assert calls == ["templates_admin.selectors:3", "worker.management.commands.go:2"]
    assert [c for c in calls if not is_entry(c.split(":")[0])] == ["templates_admin.selectors:3"]
