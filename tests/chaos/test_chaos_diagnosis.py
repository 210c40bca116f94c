"""The diagnosis a failed chaos run prints (no broker): the harness's steps, the key's output
copies near its first difference, its changelog records with their ``es-pos`` (a header, or in the
value's batch frame) and the variables
their snapshots hold, and the workers' log lines about its task."""

from __future__ import annotations

from pathlib import Path

import orjson
from chaos_diagnosis import diagnose
from chaos_plan import ChaosPlan
from test_chaos_verdict import Msg

from eventscript.kafka import codec
from eventscript.state.changelog import batch_frame


def _snapshot(program_text: str, count: int) -> bytes:
    """A real snapshot of key k0's instance after ``count`` records."""
    from eventscript.automata.compile import compile_source
    from eventscript.engine.engine import Engine
    from eventscript.engine.time_provider import SimulatedTimeProvider

    engine = Engine(
        compile_source(program_text, name="t").require(), lambda e: None, SimulatedTimeProvider(), track_dirty=True
    )
    for n in range(count):
        engine.feed_json("Tick", {"k": "k0", "n": n})
    return engine.snapshot(engine.drain_dirty()[-1])


def test_a_failed_run_is_described_from_its_records_and_logs(tmp_path: Path) -> None:
    program = ChaosPlan(clock="record").program
    inputs = [Msg("in", 2, n, b"k0", orjson.dumps({"k": "k0", "n": n})) for n in range(3)]
    outputs = [
        Msg(
            "out",
            1,
            n,
            b'["k0"]',
            orjson.dumps({"k": "k0", "count": c, "last": n}),
            [(codec.HEADER_ID, f"in:2:{n}/0".encode()), (codec.HEADER_TIME, b"1795721394910431")],
        )
        for n, c in [(0, 1), (1, 2), (2, 2)]
    ]
    changelog = [
        Msg("cl", 2, 7, b'["k0"]', _snapshot(program, 2), [("es-pos", b'{"in:2":2}')], 1_795_721_394_000),
        Msg("cl", 2, 8, b'["k0"]', _snapshot(program, 1), [("es-pos", b'{"in:2":1}'), ("es-gen", b"4")]),
        Msg("cl", 2, 10, b'["k0"]', batch_frame(b'{"in:2":3}', b"5") + _snapshot(program, 3), []),  # (a frame)
        Msg("cl", 3, 9, b'["k9"]', None),
    ]
    log = tmp_path / "w1.log"
    log.write_text(
        "2026-11-26 19:45:45,189 INFO eventscript.kafka.worker: app: assigned tasks [0, 2]\n"
        "2026-11-26 19:45:46,000 INFO eventscript.kafka.worker: app: nothing to see\n"
        "2026-11-26 19:45:47,500 INFO eventscript.kafka.restore: p task 2: changelog from offset 0: 3 applied\n"
    )
    problem = "output 2 is Count{'k': 'k0', 'count': 2, 'last': 2}, the uninterrupted run's is Count{...}"
    text = diagnose(program, {'["k0"]': [problem], "errors": ["x"]}, inputs, outputs, changelog, [log], ["t0 kill:0"])
    assert "t0 kill:0" in text
    assert 'key ["k0"] (input and changelog partition 2)' in text
    assert text.count("    out 1:") == 3 and "in:2:2/0" in text
    # both changelog records of the key, in log order, with their positions and variables; the
    # other key's and the other partition's are not shown
    cl = [line for line in text.splitlines() if line.startswith("    cl ")]
    assert [line.split()[1] for line in cl] == ["7", "8", "10"]
    assert '{"in:2":2}' in cl[0] and " count=2 " in cl[0] and "\"es-gen\": '4'" not in cl[0]
    assert '{"in:2":1}' in cl[1] and " count=1 " in cl[1] and "es-gen" in cl[1]
    assert '{"in:2":3}' in cl[2] and " count=3 " in cl[2] and "'es-gen': '5'" in cl[2]
    assert "assigned tasks [0, 2]" in text and "changelog from offset 0" in text and "nothing to see" not in text
