"""``fold``: a compact step's single-use locals folded into their one use, and only then."""

from __future__ import annotations

from eventscript.engine.fold import fold_target, read_state


def test_a_target_used_once_is_stored_directly() -> None:
    assert fold_target(["t = _N1[st]", "v[2] = t", "return None"], "v[2] = t") == ["v[2] = _N1[st]", "return None"]
    assert fold_target(["t = 3", "_tab[gk] = t", "return None"], "_tab[gk] = t") == ["_tab[gk] = 3", "return None"]


def test_a_target_used_again_stays_a_local() -> None:
    lines = ["t = _N1[st]", "v[2] = t", "if _E[t]:", "    _tab.pop(gk, None)", "return None"]
    assert fold_target(lines, "v[2] = t") == lines
    checked = ["t = _N1[st]", "if t is None:", "    return _unexpected(_view(gk, v), name, 1)", "v[2] = t"]
    assert fold_target(checked, "v[2] = t") == checked
    # a store nested under a condition is not the step's store
    nested = ["t = _N1[st]", "if _E[t]:", "    _tab.pop(gk, None)", "else:", "    _tab[gk] = t"]
    assert fold_target(nested, "_tab[gk] = t") == nested


def test_names_that_only_contain_t_are_no_uses() -> None:
    lines = ["t = 1", "v[2] = t", "_m.time = _now(); _m.value = (_t if 0 <= (_t := ev) else 0); ctx.tsym = 1"]
    assert fold_target(lines, "v[2] = t") == ["v[2] = 1", lines[2]]


def test_the_state_is_read_where_it_is_used() -> None:
    assert read_state(["v[2] = _N1[st]", "return None"], 2) == ["v[2] = _N1[v[2]]", "return None"]
    assert read_state(["v[2] = 1", "v[0] = ev", "return None"], 2) == ["v[2] = 1", "v[0] = ev", "return None"]


def test_a_state_read_after_the_store_is_read_before_it() -> None:
    """``if _K2[st]`` comes after ``v[2]`` holds the target: reading ``v[2]`` there would be wrong."""
    lines = ["v[2] = _N2[st]", "if _K2[st]:", "    v[1] = ev", "return None"]
    assert read_state(lines, 2) == ["st = v[2]", *lines]
    late = ["v[2] = 0", "if _K2[st]:", "    v[1] = ev"]
    assert read_state(late, 2) == ["st = v[2]", *late]
