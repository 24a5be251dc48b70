"""No console, API or worker module reads a raw journal attribute: above the adapters a journal row is
a JournalRow (emailops/core/journal_row.py), built by emailops/aws/journal_codec.py."""

from __future__ import annotations

import re
from pathlib import Path

from emailops.aws.journal_codec import ATTRIBUTE_ORDER

ROOT = Path(__file__).resolve().parent.parent
# Every attribute the codec knows (ATTRIBUTE_ORDER), and those it reads that a page never lists.
NAMES = "|".join(
    (
        *ATTRIBUTE_ORDER,
        "ContextTrimmed",
        "Producer",
        "LoggedOnly",
        "ExtraSends",
        "DeliveryOrder",
        "DeliveryEventCount",
    )
)
READ = re.compile(rf"""\[\s*["']({NAMES})["']\s*\]|\.get\(\s*["']({NAMES})["']""")
# Rows that are not journal rows: a mappings file's lines (messageId, templateFile, subject).
NOT_JOURNAL = {"worker/management/commands/load_template_mappings.py"}


def test_no_console_api_or_worker_module_reads_a_raw_journal_attribute():
    found = []
    for area in ("templates_admin", "api", "worker"):
        for path in sorted((ROOT / area).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative or relative in NOT_JOURNAL:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if READ.search(line):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "raw journal attribute reads:\n" + "\n".join(found)
