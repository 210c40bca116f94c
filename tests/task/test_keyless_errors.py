"""An ``$error`` record with no key (about an input record that had none), written to an error
topic another program reads, goes to the partition its ``es-id`` hashes to, as a keyless output
does (tests/task/test_event_time.py, ``test_an_output_with_no_key_goes_where_its_id_says``): an
at-least-once writer restarted from its last commit writes it again with the same id, and only on
the same partition can the reader's repeat rules see the copy. To an error topic no program reads,
the producer's partitioner places it (-1)."""

from __future__ import annotations

from pathlib import Path

from eventscript.task import codec
from eventscript.task.partitioner import murmur2_partition
from eventscript.topology.progress import ProgressPlan

from .task_helpers import T0, PlainRecord, make_task, tick

ERR_PARTITIONS = 5


def _errors_sent(tmp_path: Path, plan: ProgressPlan) -> list[tuple[int, bytes | None, bytes]]:
    """(partition asked for, key, es-id) of each record sent to "err", for keyless bad records
    among good ones."""
    task = make_task(tmp_path)
    task.load_from_store()
    sent: list[tuple[int, bytes | None, bytes]] = []

    def send(topic: str, partition: int, key: bytes | None, value: bytes | None, headers, ts, changelog):  # type: ignore[no-untyped-def]
        if topic == "err":
            sent.append((partition, key, codec.header(headers, codec.HEADER_ID) or b""))

    task.attach(send)
    task.set_progress(plan)
    for offset in range(40):
        if offset % 2:
            task.add(PlainRecord("in", 0, offset, T0 + offset, None, b"not json %d" % offset, None))
        else:
            task.add(tick(offset, T0 + offset, f"k{offset}"))
    task.process(0)
    return sent


def test_a_keyless_error_to_a_topic_another_program_reads_goes_where_its_id_says(tmp_path: Path) -> None:
    plan = ProgressPlan(program="p", tasks=1, outputs={"err": ERR_PARTITIONS})
    sent = _errors_sent(tmp_path, plan)
    assert len(sent) == 20
    for partition, key, rid in sent:
        assert key is None and rid
        assert partition == murmur2_partition(rid, ERR_PARTITIONS)
    assert len({p for p, _, _ in sent}) > 1  # (the ids spread them)


def test_a_keyless_error_to_a_topic_no_program_reads_is_left_to_the_producer(tmp_path: Path) -> None:
    sent = _errors_sent(tmp_path, ProgressPlan(program="p", tasks=1))
    assert len(sent) == 20 and {p for p, _, _ in sent} == {-1}
