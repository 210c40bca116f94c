"""The user's guides read as guides (issue 27): docs/backfill.md and bench/README.md start with what a
user needs (a quick start; what each benchmark measures and how to run it) and keep the
measurements, each with its command, in a section of their own at the end."""

from __future__ import annotations

import re

from conftest import ROOT

#: What only a measurement says: rates, CPU per record, load averages.
MEASUREMENT = re.compile(r"\d+(\.\d+)? ?k records/s|records per CPU-s|CPU-s per|load average|µs per record")


def _sections(path: str) -> list[tuple[str, str]]:
    text = (ROOT / path).read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def test_backfill_guide_starts_with_a_quick_start_and_ends_with_its_measurements() -> None:
    sections = _sections("docs/backfill.md")
    titles = [t for t, _ in sections]
    assert titles[0] == "Quick start" and titles[-1] == "Measurements"
    guide = sections[: titles.index("How it works")]
    for title, body in guide:
        assert not MEASUREMENT.search(body), f"a measurement in the guide's section {title!r}"
    assert "eventscript export" in sections[0][1] and "eventscript backfill" in sections[0][1]
    measurements = sections[-1][1]
    assert measurements.count("bench/backfill.py") >= 3  # the figures keep their commands


def test_bench_readme_lists_every_benchmark_before_its_measurements() -> None:
    sections = _sections("bench/README.md")
    assert [t for t, _ in sections] == ["Measurements"]
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    guide = text[: text.index("## Measurements")]
    for script in sorted((ROOT / "bench").glob("*.py")):
        assert f"`bench/{script.name}`" in guide, f"{script.name} is not in the guide's table"
    headings = re.findall(r"^#{3,4} (.+)$", sections[0][1], flags=re.M)
    assert headings and not [h for h in headings if re.search(r"issue \d|helper|round \d", h, re.I)]
