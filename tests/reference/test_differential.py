"""Random programs and traces: the reference interpreter, the eager DFA and the lazy DFA agree.

``REFERENCE_EXAMPLES`` sets the number of examples (``make fuzz`` runs many more);
``REFERENCE_DEPTH`` and ``REFERENCE_TRACE_ITEMS`` (see :mod:`.generate`) make the programs deeper
and the traces longer. A failure prints the program and the trace; hypothesis shrinks them first.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from .compare import compiles, run_tester
from .generate import programs, traces
from .interpreter import Trace, run_reference

EXAMPLES = int(os.environ.get("REFERENCE_EXAMPLES", "90"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _agree(source: str | list[str], trace: Trace, text: str) -> None:
    note(f"program:\n{source if isinstance(source, str) else chr(10).join(source)}\ntrace:\n{text}")
    keyed = run_reference(source, trace, error_keys=True)
    # $error lines carry the keys the reference gives (docs/language.md 7.7): the eager DFA's
    # retiring of instances must not show in them.
    eager = run_tester(source, text, lazy=False, error_keys=True)
    lazy = run_tester(source, text, lazy=True, error_keys=True)
    assert lazy == keyed, "the lazy DFA disagrees with the reference"
    assert eager == keyed, "the eager DFA disagrees with the reference"


@SETTINGS
@given(data=st.data())
def test_reference_and_tester_agree_without_intersection_or_difference(data: st.DataObject) -> None:
    source, spec = data.draw(programs(products=False))
    assume(compiles(source))
    trace, text = data.draw(traces(spec))
    _agree(source, trace, text)


@SETTINGS
@given(data=st.data())
def test_reference_and_tester_agree_on_random_programs(data: st.DataObject) -> None:
    source, spec = data.draw(programs())
    assume(compiles(source))
    trace, text = data.draw(traces(spec))
    _agree(source, trace, text)


@settings(SETTINGS, max_examples=max(10, EXAMPLES // 4))
@given(data=st.data())
def test_reference_and_tester_agree_on_pipelines(data: st.DataObject) -> None:
    """docs/language.md 10.3: each event stage 1 emits goes at once to stage 2, which reads its
    ``long`` outputs T and O; one clock, the timers of both stages in one order."""
    first, spec = data.draw(programs())
    second, _ = data.draw(programs(inputs=("T", "O")))
    assume(compiles(first) and compiles(second))
    trace, text = data.draw(traces(spec))
    _agree([first, second], trace, text)


def test_generated_programs_mostly_compile() -> None:
    """Guard for the generator: a test that skips most of its examples tests nothing."""
    ok = total = 0

    # derandomized: a guard on the generator's share of valid programs, the same draw on every
    # run (random draws put it at 78-92%, so a fixed threshold flickered)
    @settings(max_examples=60, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(programs())
    def count(drawn: tuple[str, object]) -> None:
        nonlocal ok, total
        total += 1
        ok += compiles(drawn[0])

    count()
    assert ok >= 0.8 * total, (ok, total)
