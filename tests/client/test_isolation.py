"""Producers import the client without Django, the console or any AWS library: only what the
consumer's contract needs (email-validator) besides the standard library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_client_imports_nothing_heavy():
    script = (
        "import json, sys\n"
        "from emailops.client import EmailClient, To, messages\n"
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
    assert "emailops.client.messages" in modules  # the import did happen
    top = {m.split(".")[0] for m in modules}
    third_party = {m for m in top - set(sys.stdlib_module_names) if not m.startswith("_")}
    assert third_party <= {"emailops", "email_validator", "idna", "dns"}, third_party
    assert not top & {"django", "boto3", "botocore", "moto", "celery", "jinja2"}
