"""axe-core (Deque's accessibility engine, as the PyPI package ``axe-playwright-python`` ships it:
no download at run time) on rendered emails, in Debian's chromium through Playwright: what
``templates lint --axe`` adds to the publish gate's own accessibility rules. Where chromium or
Playwright is missing, it says so instead (``AxeUnavailable``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from emailops.core.template_findings import WARNING, Finding

__all__ = ["CHROMIUM", "AxeSession", "AxeUnavailable", "axe_findings", "axe_session"]

CHROMIUM = Path("/usr/bin/chromium")
# What a rendered email cannot be asked for: a page's landmarks and its one <main>.
_PAGE_ONLY = ("region", "landmark-one-main", "page-has-heading-one", "bypass")


class AxeUnavailable(RuntimeError):
    pass


@dataclass
class AxeSession:
    page: object
    script: str

    def violations(self, html: str) -> list[dict]:
        self.page.set_content(html, wait_until="domcontentloaded")  # type: ignore[attr-defined]
        self.page.evaluate(self.script)  # type: ignore[attr-defined]
        options = {
            "resultTypes": ["violations"],
            "rules": {r: {"enabled": False} for r in _PAGE_ONLY},
        }
        result = self.page.evaluate("options => axe.run(document, options)", options)  # type: ignore[attr-defined]
        return result["violations"]


@contextmanager
def axe_session(chromium: Path | None = None) -> Iterator[AxeSession]:
    """One headless chromium for many renders (no network: the page's images are not fetched)."""
    chromium = chromium or CHROMIUM
    if not chromium.exists():
        raise AxeUnavailable(f"no chromium at {chromium} (Debian's chromium package)")
    try:
        from axe_playwright_python.base import AXE_SCRIPT
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise AxeUnavailable(f"{exc.name} is not installed (pip install emailops[gate])") from exc
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), headless=True)
        try:
            context = browser.new_context(java_script_enabled=True, offline=True)
            yield AxeSession(context.new_page(), AXE_SCRIPT)
        finally:
            browser.close()


def axe_findings(
    violations: Sequence[dict], *, key: str, organization: str | None
) -> list[Finding]:
    """One warning per axe rule violated, with its first element and axe's help."""
    found = []
    for violation in violations:
        nodes = violation.get("nodes") or [{}]
        first = nodes[0]
        found.append(
            Finding(
                WARNING,
                f"axe-{violation['id']}",
                f"axe-core {violation['id']} ({violation.get('impact') or 'minor'}): "
                f"{violation.get('help', '')} ({len(nodes)} element{'s' * (len(nodes) != 1)}; "
                f"{violation.get('helpUrl', '')})",
                key,
                organization,
                None,
                (first.get("html") or "")[:120],
                (first.get("failureSummary") or "").replace("\n", " ")[:300],
            )
        )
    return found
