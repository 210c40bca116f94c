"""``eventscript graph``: draw a compiled program's automaton with Graphviz.

The drawing follows the figures of the language document: one node per DFA state (Fig. 11),
each transition labelled with the event that causes it and the actions it runs, including the
timer start and timer stop actions the engine adds (Fig. 6). The timer actions are derived the
way the engine derives them (``engine.RState``/``Engine._function``), so the drawing shows what
actually runs rather than what the source text suggests:

* a state is *timed* when it has transitions on time symbols;
* every transition into a timed state (the initial "transition" included) ends with
  ``start(markers…)``: the engine evaluates those markers and arms the earliest deadline;
* a transition from a timed state to an untimed one ends with ``stop()``.

Parallel transitions with the same target and the same actions are merged into one edge listing
all their symbols, since a DFA over a classified alphabet would otherwise draw a fan of identical
arrows. Actions are compared as what runs (the action units and timers), never by their shortened
labels: two blocks that read alike once cut (one emitting "logout", the other "timeout") stay two
edges; ``full_labels`` draws action blocks as the compiled program keeps them (up to 60
characters, ``language/lower.py``). A lazy DFA (a program whose DFA exceeds the compiler's state limit) is explored
only up
to a bound, and the drawing says so; an eager DFA above the same bound is cut the same way,
because Graphviz cannot lay out tens of thousands of states legibly either.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..automata.compiled import CompiledProgram
from ..automata.machine import DFAMachine, LazyDFA
from ..language import ir

#: States drawn at most; beyond this a drawing is unreadable and Graphviz slow.
DEFAULT_MAX_STATES = 200
#: Longest action text on an edge; action blocks are shown by their source, shortened.
ACTION_TEXT_LIMIT = 40
#: Output suffixes drawn by Graphviz, and the ``-T`` format for each.
IMAGE_FORMATS = {".svg": "svg", ".png": "png"}
#: Output suffixes written as DOT text.
DOT_SUFFIXES = (".dot", ".gv")
#: Seconds to wait for ``dot`` before falling back to the DOT text.
DOT_TIMEOUT = 300

Units = tuple[int, ...]
Row = Mapping[int, tuple[Hashable, Units]]

# Characters that must be backslash-escaped inside a quoted DOT label. Quotes and backslashes
# would end or corrupt the string; braces, angle brackets and bars are record-label syntax, and
# escaping them keeps labels literal whatever node shape Graphviz is told to use.
_DOT_ESCAPES = {'"': '\\"', "\\": "\\\\", "{": "\\{", "}": "\\}", "<": "\\<", ">": "\\>", "|": "\\|"}


def dot_escape(text: str) -> str:
    """Text as the body of a quoted DOT string: newlines become centred line breaks, other
    control characters spaces, so a label never breaks the DOT syntax."""
    out: list[str] = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch in _DOT_ESCAPES:
            out.append(_DOT_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def dot_quoted(text: str) -> str:
    return f'"{dot_escape(text)}"'


# ---------------------------------------------------------------------------------------
# Source text of markers and units


def balanced_prefix(text: str, open_ch: str, close_ch: str) -> tuple[str, bool]:
    """The prefix of ``text`` up to the bracket closing its first ``open_ch``, and whether it was
    found. The intermediate form keeps only the rest of the marker's or block's source line
    (possibly truncated), so the construct's own extent has to be recovered here; string
    literals and comments are skipped so that a ``}`` inside them does not end the block."""
    depth = 0
    i, n = 0, len(text)
    out: list[str] = []
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            continue
        if text.startswith("//", i):
            break
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                break
            out.append(" ")
            i = end + 2
            continue
        out.append(ch)
        if ch == open_ch:
            depth += 1
        elif ch == close_ch and depth > 0:
            depth -= 1
            if depth == 0:
                return "".join(out), True
        i += 1
    return "".join(out), False


def _shorten(text: str, limit: int = ACTION_TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _squash(text: str) -> str:
    return " ".join(text.split())


def block_text(text: str, limit: int = ACTION_TEXT_LIMIT) -> str:
    """An action block's source, on one line and at most ``limit`` characters: ``{ n = 0; }``.

    A block that continues past its first line (or past the stored text) ends in ``…}``."""
    text = text.strip()
    if not text.startswith("{"):
        return _shorten(_squash(text.rstrip("…")), limit)
    body, closed = balanced_prefix(text, "{", "}")
    body = _squash(body)
    if closed and len(body) <= limit:
        return body
    if closed:
        body = body[:-1]
    return _shorten(body.rstrip("…").rstrip(), limit - 2).rstrip("…").rstrip() + " …}"


def time_marker_text(text: str) -> str:
    """A time marker's own text, ``arrive[9:00]`` or ``elapse[5 msec]``, without what follows it
    on the line (its parentheses, actions, the rest of the regular expression)."""
    head, closed = balanced_prefix(text.strip(), "[", "]")
    head = _squash(head)
    return head if closed else head.rstrip("…").rstrip() + "…]"


# ---------------------------------------------------------------------------------------
# Labels


class Labels:
    """How symbols and action units read on a drawing."""

    def __init__(self, program: ir.ProgramIR) -> None:
        self.program = program
        self._store_marker: dict[int, ir.Marker] = {m.store: m for m in program.markers if m.store is not None}
        self._symbol: dict[int, str] = {}
        time_text: dict[int, str] = {}
        for s in program.symbols:
            if s.kind == "time" and s.marker is not None:
                time_text[s.index] = time_marker_text(program.markers[s.marker].text)
            else:
                self._symbol[s.index] = s.name
        # Two time markers with the same text (say two ``elapse[1 hour]``) are different symbols;
        # their positions tell them apart.
        seen: dict[str, int] = {}
        for text in time_text.values():
            seen[text] = seen.get(text, 0) + 1
        for sym, text in time_text.items():
            if seen[text] > 1:
                m = program.markers[program.symbols[sym].marker or 0]
                text = f"{text}@{m.line}:{m.col}"
            self._symbol[sym] = text

    def symbol(self, sym: int) -> str:
        return self._symbol.get(sym, f"#{sym}")

    def unit(self, u: int, limit: int = ACTION_TEXT_LIMIT) -> str:
        unit = self.program.units[u]
        marker = self._store_marker.get(u)
        if marker is not None and len(unit.actions) == 1 and isinstance(unit.actions[0], ir.Store):
            is_time = all(self.program.symbols[s].kind == "time" for s in marker.symbols)
            return f"{unit.actions[0].name} := {'time' if is_time else 'value'}"
        return block_text(unit.text, limit)

    def timer_start(self, timers: tuple[int, ...]) -> str:
        return f"start({', '.join(self.symbol(s) for s in timers)})"


# ---------------------------------------------------------------------------------------
# Exploration


@dataclass
class Explored:
    """The states drawn (breadth-first from the start, at most ``limit``) and their rows."""

    keys: list[Hashable] = field(default_factory=list)
    index: dict[Hashable, int] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    #: Timer symbols of every state seen, drawn or not (a cut-off target still needs its timer).
    timers: dict[Hashable, tuple[int, ...]] = field(default_factory=dict)
    complete: bool = True


def explore(compiled: CompiledProgram, limit: int) -> Explored:
    """Walk the machine breadth-first, keeping at most ``limit`` states.

    For a lazy DFA this builds states on demand; its cache is emptied afterwards so the drawing
    leaves the machine as it found it."""
    machine = compiled.machine
    time_symbols = compiled.program.time_symbols
    ex = Explored()

    def timers_of(key: Hashable) -> tuple[int, ...]:
        t = ex.timers.get(key)
        if t is None:
            t = ex.timers[key] = tuple(sorted(s for s in machine.transitions(key) if s in time_symbols))
        return t

    start, _ = machine.start()
    ex.index[start] = 0
    ex.keys.append(start)
    i = 0
    while i < len(ex.keys):
        key = ex.keys[i]
        i += 1
        row = machine.transitions(key)
        ex.rows.append(row)
        timers_of(key)
        for sym in sorted(row):
            target = row[sym][0]
            if target in ex.index:
                continue
            if len(ex.keys) >= limit:
                ex.complete = False
                timers_of(target)
                continue
            ex.index[target] = len(ex.keys)
            ex.keys.append(target)
    if isinstance(machine, LazyDFA):
        machine.clear_cache()
    return ex


# ---------------------------------------------------------------------------------------
# DOT


def _state_label(compiled: CompiledProgram, key: Hashable, i: int) -> str:
    """DFA states are named by their number (as in snapshots); lazy-DFA states by their discovery
    number and, as in Fig. 11, the set of NFA states they stand for."""
    if isinstance(compiled.machine, DFAMachine):
        return str(key)
    assert isinstance(key, frozenset)
    nfa = sorted(key)
    shown = ",".join(str(s) for s in nfa[:6]) + (",…" if len(nfa) > 6 else "")
    return f"{i}\n{{{shown}}}"


def _caption(compiled: CompiledProgram, ex: Explored, limit: int) -> str:
    drawn = len(ex.keys)
    if isinstance(compiled.machine, LazyDFA):
        if ex.complete:
            what = f"lazy DFA, all {drawn} reachable states"
        else:
            what = (
                f"lazy DFA (too large to build eagerly): only the first {drawn} reachable "
                f"states are drawn (bound {limit})"
            )
    elif ex.complete:
        what = f"{drawn} DFA state{'s' if drawn != 1 else ''}"
    else:
        size = compiled.machine.size if isinstance(compiled.machine, DFAMachine) else "?"
        what = f"DFA of {size} states: only the first {drawn} reachable states are drawn (bound {limit})"
    return f"{compiled.name}: {what}\ndouble circle: accepting; filled: terminal (the instance ends)"


def to_dot(compiled: CompiledProgram, *, max_states: int = DEFAULT_MAX_STATES, full_labels: bool = False) -> str:
    """The program's automaton as Graphviz DOT text (action blocks shortened unless ``full_labels``)."""
    if max_states < 1:
        raise ValueError("max_states must be at least 1")
    program = compiled.program
    machine = compiled.machine
    labels = Labels(program)
    ex = explore(compiled, max_states)

    limit = 1 << 30 if full_labels else ACTION_TEXT_LIMIT

    def actions(units: Units, source_timed: bool, target: Hashable) -> tuple[str, ...]:
        out = [labels.unit(u, limit) for u in units]
        timers = ex.timers[target]
        if timers:
            out.append(labels.timer_start(timers))
        elif source_timed:
            out.append("stop()")
        return tuple(out)

    lines = [
        f"digraph {dot_quoted(compiled.name or 'program')} {{",
        f"  graph [label={dot_quoted(_caption(compiled, ex, max_states))}, labelloc=t, fontname=Helvetica];",
        "  node [shape=circle, fontname=Helvetica];",
        "  edge [fontname=Helvetica, fontsize=10];",
        '  __start [shape=point, width=0.08, label=""];',
    ]

    start, initial = machine.start()
    init = "\n".join(actions(initial, False, start))
    lines.append(f"  __start -> s0{_attrs(label=init) if init else ''};")

    for i, key in enumerate(ex.keys):
        accepting = machine.accepting(key)
        attrs: dict[str, str] = {"label": _state_label(compiled, key, i)}
        if accepting:
            attrs["shape"] = "doublecircle"
        if accepting and not ex.rows[i]:
            attrs["style"] = "filled"
            attrs["fillcolor"] = "gray80"
            attrs["label"] += "\nend"
        if isinstance(key, frozenset):
            attrs["tooltip"] = "NFA states {" + ",".join(str(s) for s in sorted(key)) + "}"
        lines.append(f"  s{i}{_attrs(**attrs)};")

    # Merge parallel transitions: same source, target and actions (the units that run, not their
    # shortened text) → one edge, several symbols.
    edges: dict[tuple[int, str, Units, tuple[str, ...]], list[int]] = {}
    for i, key in enumerate(ex.keys):
        timed = bool(ex.timers[key])
        for sym in sorted(ex.rows[i]):
            target, units = ex.rows[i][sym]
            j = ex.index.get(target)
            node = f"s{j}" if j is not None else "__more"
            edges.setdefault((i, node, tuple(units), actions(units, timed, target)), []).append(sym)
    if not ex.complete:
        lines.append('  __more [shape=plaintext, label="… states not drawn"];')
    for (i, node, _units, acts), syms in edges.items():
        head = ", ".join(labels.symbol(s) for s in syms)
        label = "\n".join([head + (" /" if acts else ""), *acts])
        extra = {"style": "dashed"} if node == "__more" else {}
        lines.append(f"  s{i} -> {node}{_attrs(label=label, **extra)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _attrs(**attrs: str) -> str:
    return " [" + ", ".join(f"{k}={dot_quoted(v)}" for k, v in attrs.items()) + "]"


# ---------------------------------------------------------------------------------------
# Rendering


def render(
    compiled: CompiledProgram, path: Path, *, max_states: int = DEFAULT_MAX_STATES, full_labels: bool = False
) -> int:
    """Write the drawing to ``path``: DOT text for ``.dot``/``.gv``, an image drawn by Graphviz
    for ``.svg``/``.png``. Returns the exit status (0 ok, 1 not drawn or cannot write, 2 unknown format)."""
    return write_drawing(
        lambda: to_dot(compiled, max_states=max_states, full_labels=full_labels), path, "eventscript graph"
    )


def write_drawing(dot_text: Callable[[], str], path: Path, command: str) -> int:
    """Write DOT text, or the image Graphviz draws from it, as ``path``'s suffix asks; the exit
    status of ``command`` (0 ok, 1 the image was not drawn or cannot write, 2 unknown format).

    Without a working ``dot`` the DOT text is still useful (it can be drawn elsewhere), so it is
    written beside the requested file with a one-line note; the status is still 1, since the file
    asked for does not exist (a script or make rule must not go on as if it did)."""
    suffix = path.suffix.lower()
    if suffix not in DOT_SUFFIXES and suffix not in IMAGE_FORMATS:
        print(
            f"{command}: {path}: unknown output format {suffix or '(no suffix)'!r}; use .svg, .png or .dot",
            file=sys.stderr,
        )
        return 2
    text = dot_text()
    try:
        if suffix in DOT_SUFFIXES:
            path.write_text(text, encoding="utf-8")
            return 0
        image, problem = _run_dot(text, IMAGE_FORMATS[suffix])
        if image is not None:
            path.write_bytes(image)
            return 0
        fallback = path.with_suffix(".dot")
        fallback.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"{command}: cannot write {exc.filename or path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(
        f"{command}: {problem}; wrote the DOT text to {fallback} instead of {path} (install Graphviz, "
        f"e.g. apt-get install graphviz, or ask for a .dot file)",
        file=sys.stderr,
    )
    return 1


def _run_dot(text: str, fmt: str) -> tuple[bytes | None, str]:
    """Graphviz's output, or None and why it could not be had."""
    exe = shutil.which("dot")
    if exe is None:
        return None, "Graphviz 'dot' was not found on PATH"
    try:
        done = subprocess.run(
            [exe, f"-T{fmt}"], input=text.encode("utf-8"), capture_output=True, timeout=DOT_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return None, f"Graphviz 'dot' took longer than {DOT_TIMEOUT} s"
    except OSError as exc:
        return None, f"Graphviz 'dot' could not be run ({exc.strerror or exc})"
    if done.returncode != 0 or not done.stdout:
        err = next((ln.strip() for ln in done.stderr.decode("utf-8", "replace").splitlines() if ln.strip()), "")
        return None, f"Graphviz 'dot' failed (exit status {done.returncode}{': ' + err if err else ''})"
    return done.stdout, ""
