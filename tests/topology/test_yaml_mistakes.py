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


#: A topology of one program, to which each case adds its mistake.
ONE_PROGRAM = "programs:\n  - name: a\n    source: a.es\n    inputs: [{topic: t, event: E}]\n"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (  # a program's setting, pointed at where its name is written
            ONE_PROGRAM + "    ouputs:\n      E: u\n",
            "5:5: programs[0].ouputs: unknown setting: did you mean outputs?",
        ),
        (  # one in a map of topics, in flow style
            ONE_PROGRAM + "topics:\n  t: {partiton: 2}\n",
            "6:7: topics.t.partiton: unknown setting: did you mean partitions?",
        ),
        (  # one under an optional setting's mapping
            "kafka: {security: {sasl: {usrname: u}}}\n" + ONE_PROGRAM,
            "1:27: kafka.security.sasl.usrname: unknown setting: did you mean username?",
        ),
    ],
)
def test_a_misspelt_setting_names_the_setting_meant_where_it_is_written(tmp_path: Path, text: str, said: str) -> None:
    f = tmp_path / "topology.yaml"
    f.write_text(text)
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert f"{f}:{said} (check its spelling and indentation)" in str(info.value)


def test_a_setting_close_to_none_keeps_the_plain_message(tmp_path: Path) -> None:
    f = tmp_path / "topology.yaml"
    f.write_text(ONE_PROGRAM + "    colour: red\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert f"{f}:5:5: programs[0].colour: unknown setting (check its spelling and indentation)" in str(info.value)


def test_a_setting_given_twice_is_refused_at_the_second(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys without a word: a program's ``errors:`` written again
    lower down silently replaced the first."""
    f = tmp_path / "topology.yaml"
    f.write_text(ONE_PROGRAM + "    errors: e1\n    clock: record\n    errors: e2\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert str(info.value) == (
        f"{f}:7:5: errors: given twice in this mapping (first on line 5); YAML would keep only this one: "
        "remove one of them, or check the indentation"
    )


def test_equal_keys_in_different_mappings_and_merge_keys_are_fine(tmp_path: Path) -> None:
    f = tmp_path / "topology.yaml"
    f.write_text(
        "x-input: &input {topic: t, event: E}\nprograms:\n"
        "  - {name: a, source: a.es, inputs: [{<<: *input, keyed: false}]}\n"
        "  - {name: b, source: a.es, inputs: [*input]}\n"
    )
    with pytest.raises(TopologyError, match="x-input: unknown setting"):  # read past the keys, to the schema
        load_topology(f)


def test_a_tab_says_to_indent_with_spaces(tmp_path: Path) -> None:
    f = tmp_path / "topology.yaml"
    f.write_text(ONE_PROGRAM + "\tclock: record\n")
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert str(info.value).endswith(
        "found character '\\t' that cannot start any token; it is a tab: YAML indents with spaces only, "
        "so replace the tab with spaces"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (  # an input written as a mapping, without its '- '
            "programs:\n  - name: a\n    source: a.es\n    inputs:\n      topic: t\n      event: E\n",
            "5:7: programs[0].inputs: should be a list: one item per line, each starting with '- '",
        ),
        (  # topics as a list of names
            ONE_PROGRAM + "topics: [t]\n",
            "5:9: topics: should be a mapping: one 'name: value' per line, indented under it",
        ),
        (  # both ways of naming the event
            "programs:\n  - name: a\n    source: a.es\n    inputs: [{topic: t, event: E, event_from: {header: h}}]\n",
            "programs[0].inputs[0]: give either 'event: Name' (every record is that event) or 'event_from: ...' "
            "(the name is in each record), not both",
        ),
    ],
)
def test_a_value_of_the_wrong_shape_says_how_to_write_it_in_yaml(tmp_path: Path, text: str, said: str) -> None:
    """Pydantic's "Input should be a valid list" named a Python type and no way to write one; an input
    with both 'event' and 'event_from' was told to give one of them, as if it gave neither."""
    f = tmp_path / "topology.yaml"
    f.write_text(text)
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    assert said in str(info.value)
