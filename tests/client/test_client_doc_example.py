"""docs/client.md's example runs as written, against a moto server standing in for `make run`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from emailops.core.contract import parse_request

ROOT = Path(__file__).resolve().parents[2]


def client_doc_example() -> str:
    page = (ROOT / "docs" / "client.md").read_text()
    section = page.split("# Producers: the Python client", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


@pytest.fixture
def moto_queue(aws_env, moto_server):
    import boto3

    sqs = boto3.client("sqs", endpoint_url=moto_server.url, region_name="us-east-1")
    sqs.create_queue(QueueName="email-service-queue")
    return moto_server.url, sqs


def test_client_doc_example_queues_valid_requests(tmp_path, moto_queue):
    from worker.management.commands.devstack import write_env_file

    endpoint, sqs = moto_queue
    write_env_file(tmp_path / ".devstack.env", endpoint, 8000)
    script = client_doc_example()
    assert script.startswith("source .devstack.env\n.venv/bin/python - <<'EOF'")
    # This checkout's interpreter stands in for the project's .venv.
    script = script.replace(".venv/bin/python", f"PYTHONPATH={ROOT} {sys.executable}", 1)
    result = subprocess.run(
        ["bash", "-c", "set -e\n" + script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("queued ")
    url = f"{endpoint}/123456789012/email-service-queue"
    bodies = []
    for _ in range(5):  # bounded: three messages, at most 10 a receive
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
        bodies += [m["Body"] for m in got.get("Messages", [])]
        if len(bodies) == 3:
            break
    requests = sorted((parse_request(b) for b in bodies), key=lambda r: r.message_id)
    assert [r.message_id for r in requests] == [
        "added-to-team",
        "dataset-publication-accepted",
        "dataset-publication-accepted",
    ]
    assert requests[0].dedupe_id == "team-invite-evt-12345"
    assert {r.organization_id for r in requests[1:]} == {"367"}
