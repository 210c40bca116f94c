"""A changelog record carries its batch's input position and owner epoch in front of its value
(``state.changelog.batch_frame``), not as ``es-pos`` / ``es-gen`` headers, except a tombstone,
whose value must stay null for compaction. The worker's producer (kafka/producer.py) and the
collector every other host uses (task/collector.py) send the same records; the readers take a
header when there is one and the frame otherwise, so changelogs written before still restore
(tests/task/test_changelog_value_info.py restores each form through the real restore)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from eventscript.automata.compile import compile_source
from eventscript.kafka.producer import BatchProducer
from eventscript.state.changelog import BATCH_FRAME, HEADER_EPOCH, HEADER_POSITION, batch_frame, split_batch_frame
from eventscript.state.keyinfo import INFO_FRAME
from eventscript.topology.config import InputConfig

from .task_helpers import T0, build_task, program_config, tick

SNAPSHOT = b"\x99\x03\x00"


def test_a_frame_splits_back_into_its_value_position_and_epoch() -> None:
    pos = b'{"in:0":12,"in:1":3}'
    assert split_batch_frame(batch_frame(pos, b"7") + SNAPSHOT, None, None) == (SNAPSHOT, pos, b"7")
    assert split_batch_frame(batch_frame(pos, None) + SNAPSHOT, None, None) == (SNAPSHOT, pos, None)
    framed_info = INFO_FRAME + b'{"last":["in",0,1,2]}\x00' + SNAPSHOT  # (the key's information stays inside)
    assert split_batch_frame(batch_frame(pos, b"2") + framed_info, None, None) == (framed_info, pos, b"2")


def test_a_record_with_headers_or_without_a_frame_is_read_as_it_came() -> None:
    framed = batch_frame(b'{"in:0":1}', b"4") + SNAPSHOT
    # a position header: written before the frame (or a hand-over's): its value is its own
    assert split_batch_frame(framed, b'{"in:0":9}', b"5") == (framed, b'{"in:0":9}', b"5")
    assert split_batch_frame(SNAPSHOT, None, None) == (SNAPSHOT, None, None)
    assert split_batch_frame(None, b'{"in:0":1}', None) == (None, b'{"in:0":1}', None)  # a tombstone
    for broken in (BATCH_FRAME, BATCH_FRAME + b'{"in:0":1}', BATCH_FRAME + b'{"in:0":1}\x003'):
        assert split_batch_frame(broken, None, None) == (broken, None, None)  # (for the decoder to refuse)


class Capture:
    """A producer that keeps what it is given, as librdkafka would send it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, Any]] = []

    def produce(
        self, topic: str, value: Any, key: Any, partition: int, cb: Any, opaque: Any, ts: int, headers: Any
    ) -> None:
        self.sent.append((topic, key, value, headers))


ENDS = """in {string k; long n;} Tick group(Tick.k)
out {long n;} Count
{ count = 0; }
( Tick() { count = count + 1; !>Count({n: count}); } ){2}
"""


def _changelog(tmp_path: Path, through_producer: bool) -> list[tuple[bytes | None, bytes | None, Any]]:
    """The changelog records of the second commit of a task with an owner epoch, in which key
    "a" ends (its second record) while "b" lives on: through the worker's producer, or the
    default collector."""
    cfg = program_config([InputConfig(topic="in", event="Tick")])
    task = build_task(compile_source(ENDS, name="p").require(), cfg, tmp_path / "s", changelog="p-changelog")
    capture = Capture()
    if through_producer:
        task.attach(*BatchProducer("p", capture, False, "p-changelog", lambda since: since).senders())
    task.load_from_store()
    task.take_epoch(6, 0)
    offsets = iter(range(4))
    for batch in ("ab", "ab"):
        capture.sent.clear()
        task.take_outputs()
        for key in batch:
            task.add(tick(next(offsets), T0, key))
        task.process(0)
        task.changelog_records()
    if through_producer:
        return [(k, v, h) for topic, k, v, h in capture.sent if topic == "p-changelog"]
    return [(r.key, r.value, r.headers) for r in task.take_outputs() if r.topic == "p-changelog"]


def test_live_records_carry_the_frame_and_tombstones_the_headers(tmp_path: Path) -> None:
    for through_producer in (True, False):
        records = _changelog(tmp_path / str(through_producer), through_producer)
        by_key = {k: (v, h) for k, v, h in records}
        tomb, tomb_headers = by_key[orjson.dumps(["a"])]
        assert tomb is None
        names = [name for name, _ in tomb_headers]
        assert names[:2] == [HEADER_POSITION, HEADER_EPOCH] and dict(tomb_headers)[HEADER_POSITION] == b'{"in:0":4}'
        for key, (value, headers) in by_key.items():
            if value is None:
                continue
            assert not headers, key  # (no header list for librdkafka to copy)
            stored, pos, epoch = split_batch_frame(value, None, None)
            assert (pos, epoch) == (b'{"in:0":4}', dict(tomb_headers)[HEADER_EPOCH]), key
            assert stored is not None and not stored.startswith(BATCH_FRAME)
        assert orjson.dumps(["b"]) in by_key
    # the same records either way (but for the wall time an ended marker notes)
    same = [[(k, v, [n for n, _ in h or ()]) for k, v, h in _changelog(tmp_path / w, w == "p")] for w in "pc"]
    assert same[0] == same[1]
