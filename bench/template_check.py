"""The template check's time per variant (one file rendered for one organization), with the
publish gate's rules, without spamd and with it.

    .venv/bin/python bench/template_check.py [--spamd 127.0.0.1:783] [--repeat 3]

Each sample template (emailops/data/samples/templates/: every default file and its branded
copies) and the fixture set (tests/gate_templates/) is checked as the draft check does it
(``check_render`` with the manifest's sample context): the check's own rules only, then with the
gate (client support, accessibility, dark mode), then with the spam score from spamd (a fresh
scorer each time, so no score comes from its cache). Target (issue 34): under 2 s per variant,
spamd included. axe-core in chromium is not part of the gate (yet): no column for it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import moto_env  # noqa: F401  (the project on sys.path)

from emailops.core.rendering import Renderer
from emailops.core.template_check import check_render
from emailops.core.template_findings import organization_of_key
from emailops.core.template_gate import GateOptions
from emailops.spamd import SpamdScorer
from templates_admin.mappings.variables import sample_context

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "emailops" / "data" / "samples" / "templates"
FIXTURES = ROOT / "tests" / "gate_templates"
MANIFEST = json.loads((ROOT / "emailops" / "data" / "template-variables.json").read_text())


def variants() -> list[tuple[str, str]]:
    found = [(str(p.relative_to(SAMPLES)), p.read_text()) for p in sorted(SAMPLES.rglob("*.html"))]
    found += [(f"default/{p.name}", p.read_text()) for p in sorted(FIXTURES.iterdir())]
    return found


def timed(renderer: Renderer, key: str, source: str, gate: GateOptions | None) -> float:
    organization = organization_of_key(key)
    stem = key.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    context = sample_context(MANIFEST.get(stem) or renderer.variables(source), sources=[source])
    if organization:
        context["organizationId"] = organization
    started = time.perf_counter()
    check_render(
        renderer=renderer,
        key=key,
        source=source,
        subject_source="Welcome to {{ organizationName }}",
        contexts=[context],
        organization=organization,
        gate=gate,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spamd", default="127.0.0.1:783")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    renderer = Renderer()
    reachable = SpamdScorer(args.spamd)._reachable()
    timed(renderer, *variants()[0], GateOptions())  # caniemail's data loaded once per process
    print(f"{'variant':46} {'KB':>6} {'check s':>8} {'+gate s':>8} {'+spamd s':>9}")
    worst = 0.0
    for key, source in variants():
        plain = statistics.median(timed(renderer, key, source, None) for _ in range(args.repeat))
        gated = statistics.median(
            timed(renderer, key, source, GateOptions()) for _ in range(args.repeat)
        )
        spam = "-"
        if reachable:
            scored = statistics.median(
                timed(renderer, key, source, GateOptions(spam=SpamdScorer(args.spamd)))
                for _ in range(args.repeat)
            )
            worst = max(worst, scored)
            spam = f"{scored:9.3f}"
        worst = max(worst, gated)
        print(f"{key:46} {len(source) / 1024:6.1f} {plain:8.3f} {gated:8.3f} {spam:>9}")
    where = f"spamd at {args.spamd}" if reachable else f"no spamd at {args.spamd}"
    print(f"slowest variant: {worst:.3f} s ({where}; target < 2 s)")


if __name__ == "__main__":
    main()
