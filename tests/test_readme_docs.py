"""The README's documentation table lists every page in docs/ (send-guard.md and unsubscribe.md
were missing: a newcomer found the held and log-only page only by reading the folder)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_docs_page_is_in_the_readmes_table():
    readme = (ROOT / "README.md").read_text()
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    assert [page for page in pages if f"(docs/{page})" not in readme] == []
