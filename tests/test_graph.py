"""``eventscript graph``: the drawing of a compiled program's automaton (language document Figs. 6
and 11).

The DOT text is parsed back here (nodes, edges, unescaped labels) so that the tests check what
the drawing says — which states, which transitions, which actions and timer starts/stops — and
not merely that some substring appears somewhere.
"""

from __future__ import annotations

import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.automata.machine import DFAMachine, LazyDFA
from eventscript.cli.main import main
from eventscript.tools import graph
from eventscript.tools.graph import block_text, dot_escape, render, time_marker_text, to_dot

KEYPAD = """\
in long Key case { Key==0 ? K0 : Key==7 ? K7 : Other }
out { } Unlock
( .* K0() K0() K7() { !>Unlock({}); } ) *
"""

# Fig. 6 of the language document.
BUSINESS_HOURS = """\
in { } CallReceived
out long BusinessHourCallCount

( CallReceived()*
  arrive[9:00]() { count = 0; }
  ( CallReceived() { count = count + 1; } )*
  arrive[17:00]() { !>BusinessHourCallCount(count); }
)*
"""

# After A the timer runs; B leaves for the untimed start state (stop), so does the time event.
SILENCE = """\
in {} A, {} B
out {} Z
( A() ( elapse[5 msec](t) { !>Z({}); } | B() ) )*
"""

LAZY = "in {} A, {} B\nout {} Z\n.* A() .{20} { !>Z({}); }\n"

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")


# ---------------------------------------------------------------------------------------
# A small DOT reader for the subset to_dot writes


_STRING = r'"(?:[^"\\]|\\.)*"'
_ATTR = re.compile(rf"(\w+)=({_STRING}|[\w.]+)")
_NODE = re.compile(r"^\s*(\w+) \[(.*)\];$")
_EDGE = re.compile(r"^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$")


def _unquote(value: str) -> str:
    if not value.startswith('"'):
        return value
    body = value[1:-1]
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), body)


def _attrs(text: str | None) -> dict[str, str]:
    return {k: _unquote(v) for k, v in _ATTR.findall(text or "")}


@dataclass
class Drawing:
    nodes: dict[str, dict[str, str]]
    edges: list[tuple[str, str, str]]  # (source, target, label)
    caption: str

    def labels(self, source: str, target: str) -> list[str]:
        return [lab for s, t, lab in self.edges if (s, t) == (source, target)]

    def label(self, source: str, target: str) -> str:
        found = self.labels(source, target)
        assert len(found) == 1, f"expected one edge {source} -> {target}, found {found}"
        return found[0]

    @property
    def states(self) -> list[str]:
        return [n for n in self.nodes if re.fullmatch(r"s\d+", n)]


def read_dot(text: str) -> Drawing:
    nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, str]] = []
    caption = ""
    assert text.startswith("digraph ") and text.rstrip().endswith("}")
    for line in text.splitlines()[1:-1]:
        if line.strip().startswith("graph ["):
            caption = _attrs(line)["label"]
        elif m := _EDGE.match(line):
            edges.append((m.group(1), m.group(2), _attrs(m.group(3)).get("label", "")))
        elif m := _NODE.match(line):
            if m.group(1) not in ("node", "edge"):
                nodes[m.group(1)] = _attrs(m.group(2))
        else:
            raise AssertionError(f"unexpected DOT line {line!r}")
    return Drawing(nodes, edges, caption)


def compiled(text: str, *, force_lazy: bool = False) -> CompiledProgram:
    return compile_source(text, name="t", force_lazy=force_lazy).require()


def drawing(text: str) -> Drawing:
    return read_dot(to_dot(compiled(text)))


# ---------------------------------------------------------------------------------------
# States and transitions


def test_keypad_dfa_matches_fig_11() -> None:
    d = drawing(KEYPAD)
    assert d.states == ["s0", "s1", "s2", "s3"]
    assert d.nodes["s0"]["shape"] == "doublecircle"  # the empty sequence is accepted
    assert all("shape" not in d.nodes[s] for s in ("s1", "s2", "s3"))
    assert "t: 4 DFA states" in d.caption
    # The entry arrow has no label: no initial actions and no timer.
    assert d.label("__start", "s0") == ""
    # K7 and Other lead to the same state with no actions: one edge with both symbols.
    assert d.label("s0", "s2") == "K7, Other"
    assert d.label("s0", "s1") == "K0"
    assert d.label("s1", "s3") == "K0"
    assert d.label("s3", "s3") == "K0"
    assert d.label("s3", "s0") == "K7 /\n{ !>Unlock({}); }"
    assert d.label("s3", "s2") == "Other"
    # Every state has a transition on each of the three symbols, and nothing else.
    for s in d.states:
        syms = sorted(x for src, _, lab in d.edges if src == s for x in lab.split(" /")[0].split(", "))
        assert syms == ["K0", "K7", "Other"], s


def test_edges_follow_the_machine_exactly() -> None:
    """Every DFA transition appears once, with its symbol, on an edge to its target."""
    c = compiled(KEYPAD)
    assert isinstance(c.machine, DFAMachine)
    d = read_dot(to_dot(c))
    names = {s.index: s.name for s in c.program.symbols}
    drawn = {(src, t, sym) for src, t, lab in d.edges if src != "__start" for sym in lab.split(" /")[0].split(", ")}
    expected = {
        (f"s{k}", f"s{t}", names[sym])
        for k in range(c.machine.size)
        for sym, (t, _) in c.machine.transitions(k).items()
    }
    assert drawn == expected


def test_terminal_state_is_marked() -> None:
    d = drawing("in {} A\nout {} Z\nA() { !>Z({}); }\n")
    assert d.states == ["s0", "s1"]
    assert "shape" not in d.nodes["s0"]
    end = d.nodes["s1"]
    assert end["shape"] == "doublecircle" and end["style"] == "filled"
    assert end["label"] == "1\nend"
    assert d.label("s0", "s1") == "A /\n{ !>Z({}); }"


def test_accepting_state_with_a_way_out_is_not_terminal() -> None:
    d = drawing("in {} A\nout {} Z\n( A() { !>Z({}); } )*\n")
    assert d.nodes["s0"]["shape"] == "doublecircle"
    assert "style" not in d.nodes["s0"] and "end" not in d.nodes["s0"]["label"]


def test_marker_store_and_initial_actions() -> None:
    d = drawing("in long A\nout long Z\n{ n = 0; }\n( A(x) { n = n + x; !>Z(n); } )*\n")
    assert d.label("__start", "s0") == "{ n = 0; }"
    assert d.label("s0", "s0") == "A /\nx := value\n{ n = n + x; !>Z(n); }"


def test_long_and_multiline_blocks_are_shortened() -> None:
    d = drawing(
        "in {} A, {} B\nout long Z\n"
        "( A() { total = 1; !>Z(total + total + total + total + total + total); }\n"
        "  B() { n = 1;  // a comment with a } brace\n"
        "        !>Z(n); }\n"
        ")*\n"
    )
    labels = [lab for _, _, lab in d.edges]
    a = next(lab for lab in labels if lab.startswith("A /"))
    b = next(lab for lab in labels if lab.startswith("B /"))
    assert a.split("\n")[1].startswith("{ total = 1; !>Z(total")
    assert a.split("\n")[1].endswith(" …}") and len(a.split("\n")[1]) <= graph.ACTION_TEXT_LIMIT + 1
    assert b.split("\n")[1] == "{ n = 1; …}"


# ---------------------------------------------------------------------------------------
# Timers (Fig. 6)


def test_business_hours_timer_starts_match_fig_6() -> None:
    d = drawing(BUSINESS_HOURS)
    assert d.label("__start", "s0") == "start(arrive[9:00])"
    # Before 9:00 calls are ignored, and each one (re)enters a state waiting for 9:00.
    assert d.label("s0", "s1") == "CallReceived /\nstart(arrive[9:00])"
    assert d.label("s0", "s2") == "arrive[9:00] /\n{ count = 0; }\nstart(arrive[17:00])"
    assert d.label("s2", "s2") == "CallReceived /\n{ count = count + 1; }\nstart(arrive[17:00])"
    assert d.label("s2", "s0") == "arrive[17:00] /\n{ !>BusinessHourCallCount(count); }\nstart(arrive[9:00])"
    # Every state of this program is timed, so nothing ever stops the timer.
    assert not any("stop()" in lab for _, _, lab in d.edges)


def test_leaving_a_timed_state_stops_the_timer() -> None:
    d = drawing(SILENCE)
    assert d.states == ["s0", "s1"]
    assert d.label("__start", "s0") == ""  # the start state has no time marker
    assert d.label("s0", "s1") == "A /\nstart(elapse[5 msec])"
    back = sorted(d.labels("s1", "s0"))
    # B and the time event go to the same state with different actions: two edges.
    assert back == ["B /\nstop()", "elapse[5 msec] /\nt := time\n{ !>Z({}); }\nstop()"]


def test_state_with_two_time_markers_starts_both() -> None:
    d = drawing("in {} A\nout {} Z\n( A() ( arrive[9:00]() { !>Z({}); } | elapse[5 msec]() ) )*\n")
    assert d.label("s0", "s1") == "A /\nstart(arrive[9:00], elapse[5 msec])"
    assert sorted(d.labels("s1", "s0")) == ["arrive[9:00] /\n{ !>Z({}); }\nstop()", "elapse[5 msec] /\nstop()"]


def test_identical_time_markers_are_told_apart() -> None:
    d = drawing("in {} A\nout {} Z\nelapse[1 hour]() A() elapse[1 hour]() { !>Z({}); }\n")
    assert d.label("__start", "s0") == "start(elapse[1 hour]@3:1)"
    assert d.label("s0", "s1") == "elapse[1 hour]@3:1 /\nstop()"
    assert d.label("s1", "s2") == "A /\nstart(elapse[1 hour]@3:22)"
    assert d.label("s2", "s3") == "elapse[1 hour]@3:22 /\n{ !>Z({}); }\nstop()"
    assert d.nodes["s3"]["label"] == "3\nend"


# ---------------------------------------------------------------------------------------
# The lazy DFA


def test_lazy_dfa_is_drawn_up_to_the_bound() -> None:
    c = compiled(LAZY)
    assert isinstance(c.machine, LazyDFA)
    d = read_dot(to_dot(c))
    assert len(d.states) == graph.DEFAULT_MAX_STATES
    assert "lazy DFA" in d.caption and "first 200 reachable states" in d.caption
    # Transitions out of the drawn part go to one placeholder, dashed.
    assert d.nodes["__more"]["label"].startswith("…")
    assert any(t == "__more" for _, t, _ in d.edges)
    assert all(t in d.nodes for _, t, _ in d.edges)
    # Lazy-DFA states carry their NFA-state sets, as in Fig. 11.
    assert re.fullmatch(r"0\n\{[\d,]+\}", d.nodes["s0"]["label"])
    # Drawing must not leave hundreds of built states in the shared machine's cache.
    assert c.machine.cached_states == 0


def test_lazy_dfa_smaller_bound_and_complete_lazy_dfa() -> None:
    d = read_dot(to_dot(compiled(LAZY), max_states=10))
    assert len(d.states) == 10 and "first 10 reachable states" in d.caption
    # A small program forced onto the lazy DFA is drawn whole, and says so.
    small = read_dot(to_dot(compiled(KEYPAD, force_lazy=True)))
    assert len(small.states) == 4 and "__more" not in small.nodes
    assert "lazy DFA, all 4 reachable states" in small.caption


def test_big_eager_dfa_is_cut_too() -> None:
    c = compiled("in {} A, {} B\nout {} Z\n.* A() .{8} { !>Z({}); }\n")
    assert isinstance(c.machine, DFAMachine) and c.machine.size > 200
    d = read_dot(to_dot(c))
    assert len(d.states) == 200 and f"DFA of {c.machine.size} states" in d.caption


# ---------------------------------------------------------------------------------------
# Escaping


def test_dot_escape() -> None:
    assert dot_escape('a "b" \\ {c} <d> |e|\nf\tg') == 'a \\"b\\" \\\\ \\{c\\} \\<d\\> \\|e\\|\\nf g'


def test_source_text_helpers() -> None:
    assert time_marker_text("arrive[9:00]() { count = 0; }") == "arrive[9:00]"
    assert time_marker_text("elapse[ 5  msec ](t) B()") == "elapse[ 5 msec ]"
    assert time_marker_text("arrive[(deadline)]()") == "arrive[(deadline)]"
    assert time_marker_text("elapse[minutesBetween(a, b…") == "elapse[minutesBetween(a, b…]"
    assert block_text('{ s = "}"; } )*') == '{ s = "}"; }'
    assert block_text("{ a = 1; /* } */ } B()") == "{ a = 1; }"
    assert block_text("{ if_long_name = 1;") == "{ if_long_name = 1; …}"


@needs_dot
def test_awkward_text_survives_graphviz(tmp_path: Path) -> None:
    src = 'in {} A\nout string S\n( A() { !>S("q\\"}{<b>|\\\\n"); } )*\n'
    c = compiled(src)
    d = read_dot(to_dot(c))
    assert d.label("s0", "s0") == 'A /\n{ !>S("q\\"}{<b>|\\\\n"); }'
    out = tmp_path / "x.svg"
    assert render(c, out) == 0
    svg = out.read_text(encoding="utf-8")
    # Graphviz parsed the label and shows it literally (XML-escaped in the SVG).
    assert "!&gt;S(&quot;q\\&quot;}{&lt;b&gt;|\\\\n&quot;); }" in svg


# ---------------------------------------------------------------------------------------
# Rendering and the command line


def write_program(tmp_path: Path, text: str) -> str:
    f = tmp_path / "prog.es"
    f.write_text(text, encoding="utf-8")
    return str(f)


@needs_dot
def test_cli_renders_svg(tmp_path: Path) -> None:
    out = tmp_path / "keypad.svg"
    assert main(["graph", write_program(tmp_path, KEYPAD), "-o", str(out)]) == 0
    svg = out.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg.rstrip().endswith("</svg>")
    for state in ("s0", "s1", "s2", "s3"):
        assert f"<title>{state}</title>" in svg
    assert "K7, Other" in svg and "Unlock" in svg
    assert not (tmp_path / "keypad.dot").exists()


@needs_dot
def test_cli_renders_png(tmp_path: Path) -> None:
    out = tmp_path / "hours.png"
    assert main(["graph", write_program(tmp_path, BUSINESS_HOURS), "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_cli_writes_dot(tmp_path: Path) -> None:
    out = tmp_path / "hours.dot"
    assert main(["graph", write_program(tmp_path, BUSINESS_HOURS), "-o", str(out)]) == 0
    d = read_dot(out.read_text(encoding="utf-8"))
    assert d.label("__start", "s0") == "start(arrive[9:00])"


def test_unknown_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "keypad.pdf"
    assert main(["graph", write_program(tmp_path, KEYPAD), "-o", str(out)]) == 2
    assert "unknown output format '.pdf'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [tmp_path / "prog.es"]


def test_falls_back_to_dot_text_without_graphviz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "keypad.svg"
    assert main(["graph", write_program(tmp_path, KEYPAD), "-o", str(out)]) == 1  # the .svg asked for is missing
    assert not out.exists()
    fallback = tmp_path / "keypad.dot"
    assert read_dot(fallback.read_text(encoding="utf-8")).label("s0", "s2") == "K7, Other"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "'dot' was not found" in err[0] and str(fallback) in err[0]


def test_falls_back_when_graphviz_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: renderer for svg is unavailable' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))
    out = tmp_path / "k.svg"
    assert render(compiled(KEYPAD), out) == 1
    assert not out.exists()
    assert (tmp_path / "k.dot").read_text(encoding="utf-8").startswith('digraph "t"')
    err = capsys.readouterr().err
    assert "exit status 3" in err and "renderer for svg is unavailable" in err and str(tmp_path / "k.dot") in err


def test_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert render(compiled(KEYPAD), tmp_path / "missing" / "k.dot") == 1
    assert "cannot write" in capsys.readouterr().err
