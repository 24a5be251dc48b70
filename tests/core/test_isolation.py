"""The core is Django-, AWS- and Redis-free: importing every emailops.core module loads none."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = sorted(p.stem for p in (ROOT / "emailops" / "core").glob("*.py") if p.stem != "__init__")


@pytest.fixture(scope="module")
def loaded_by_core() -> set[str]:
    """Top-level packages in sys.modules after importing every core module, in a fresh process."""
    assert {"contract", "dedupe", "pipeline", "rendering", "compose", "ports"} <= set(CORE)
    script = (
        "import importlib, json, sys\n"
        f"for name in {CORE!r}:\n"
        "    importlib.import_module('emailops.core.' + name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=True,
    )
    modules = json.loads(result.stdout)
    assert "emailops.core.pipeline" in modules  # the imports did happen
    return {m.split(".")[0] for m in modules}


def test_core_loads_no_aws_library(loaded_by_core):
    assert not loaded_by_core & {"boto3", "botocore", "s3transfer", "moto", "storages"}


def test_core_loads_no_django(loaded_by_core):
    assert not loaded_by_core & {"django", "celery", "kombu"}


def test_core_loads_no_redis(loaded_by_core):
    assert "redis" not in loaded_by_core  # the send-rate bucket's Redis half is emailops.redis.rate


def test_core_starts_no_threads():
    # Threads belong to the worker (and the adapters' pools): the core is called from them and
    # may guard shared state with a lock, but never starts a thread or a pool of its own.
    starters = {"Thread", "Timer", "ThreadPoolExecutor", "ProcessPoolExecutor", "start_new_thread"}
    found = []
    for path in sorted((ROOT / "emailops" / "core").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            name = getattr(node, "attr", None) or getattr(node, "id", None)
            if isinstance(node, ast.ImportFrom) and node.module in (
                "concurrent.futures",
                "_thread",
            ):
                found.append(f"{path.name}:{node.lineno} imports {node.module}")
            elif name in starters:
                found.append(f"{path.name}:{node.lineno} uses {name}")
    assert not found, found
