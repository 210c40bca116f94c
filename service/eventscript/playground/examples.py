"""The examples the playground offers: every shipped topology and the language document's
examples (the conformance cases that reproduce them), copied into ``examples/`` beside this
module by ``scripts/playground-examples`` so that they install with the package."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).parent / "examples"


@cache
def catalogue() -> list[dict[str, Any]]:
    """Each example's id, title and kind (``topology`` or ``document``), in menu order."""
    out = []
    for meta in sorted(EXAMPLES.glob("*/*/example.json")):
        info = json.loads(meta.read_text(encoding="utf-8"))
        out.append(
            {"id": f"{meta.parent.parent.name}/{meta.parent.name}", "title": info["title"], "kind": info["kind"]}
        )
    out.sort(key=lambda e: (e["kind"] != "topology", e["title"].lower()))
    return out


def load(example_id: str) -> dict[str, Any] | None:
    """An example's programs (in pipeline order), trace and topology YAML (None for a program or
    a pipeline), or None if there is no such example."""
    if example_id not in {e["id"] for e in catalogue()}:
        return None
    folder = EXAMPLES / example_id
    info = json.loads((folder / "example.json").read_text(encoding="utf-8"))
    programs = [{"name": n, "text": (folder / n).read_text(encoding="utf-8")} for n in info["programs"]]
    topology = folder / "topology.yaml"
    return {
        "id": example_id,
        "title": info["title"],
        "kind": info["kind"],
        "programs": programs,
        "trace": (folder / info["trace"]).read_text(encoding="utf-8"),
        "topology": topology.read_text(encoding="utf-8") if topology.exists() else None,
    }
