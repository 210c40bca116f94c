"""A topology whose YAML is broken says where and, for an indentation mistake (PyYAML's "expected
<block end>, but found '<block mapping start>'", which names no indentation), what to check."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventscript.topology.config import TopologyError, load_topology


def test_a_key_indented_out_of_step_says_to_check_the_indentation(tmp_path: Path) -> None:
    f = tmp_path / "topology.yaml"
    f.write_text("application: x\nprograms:\n  - name: a\n    source: a.es\n   inputs:\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert str(info.value) == (
        f"{f}:5:4: not valid YAML: expected <block end>, but found '<block mapping start>'; check the "
        "indentation of this line and the one above it: YAML nests by indentation, and every key of one "
        "mapping starts in the same column (spaces only, no tabs)"
    )


def test_other_yaml_mistakes_keep_pyyamls_words_alone(tmp_path: Path) -> None:
    f = tmp_path / "topology.yaml"
    f.write_text("programs:\n  - name: p\n    source: [unclosed\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert "not valid YAML" in str(info.value) and "indentation" not in str(info.value)
