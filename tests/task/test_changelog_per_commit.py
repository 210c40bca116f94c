"""A commit's changelog holds one record per instance changed since the last commit, snapshotted
once at the commit, whatever number of records changed it (issue 26: the changelog's cost grows
with the keys a batch touches, never with its records)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eventscript.state.keyinfo import split_value

from .task_helpers import T0, make_task, tick, unframed

CHANGELOG = "p-changelog"


def commit(task: Any, snapshots: Counter[bytes]) -> dict[bytes, bytes | None]:
    """The snapshots of the task's changelog records of one commit, after checking what it sent
    are exactly the values it returned (for the store: the same bytes)."""
    changes: dict[bytes, bytes | None] = task.changelog_records()
    sent = [(r.key, unframed(r.value)) for r in task.take_outputs() if r.topic == CHANGELOG]
    assert sent == list(changes.items())
    return {k: split_value(v, None)[0] for k, v in changes.items()}


def count_of(task: Any, snapshot: bytes | None) -> int:
    """The ``count`` variable of an instance snapshot."""
    assert snapshot is not None, "a tombstone where a snapshot was due"
    slot = [v.name for v in task.engine.program.variables].index("count")
    return int(task.engine.restore(snapshot).vars[slot])


@pytest.mark.parametrize("per_key", [1, 7])
def test_each_changed_key_is_snapshotted_once_per_commit(tmp_path: Path, per_key: int) -> None:
    task = make_task(tmp_path / "t")
    task.load_from_store()
    snapshots: Counter[bytes] = Counter()
    real = task.engine.snapshot
    key_bytes_of = task.routing.ctx_key_bytes()

    def counting(ctx: Any) -> bytes:
        snapshots[key_bytes_of(ctx)] += 1
        return real(ctx)

    task.engine.snapshot = counting
    keys = [f"k{i}" for i in range(5)]
    offset = 0
    for _ in range(per_key):
        for key in keys:
            task.add(tick(offset, T0 + offset, key))
            offset += 1
    task.process(0)
    changes = commit(task, snapshots)
    instance_keys = {b'["%s"]' % k.encode() for k in keys}
    assert snapshots == Counter(dict.fromkeys(instance_keys, 1))
    assert {kb: count_of(task, changes[kb]) for kb in instance_keys} == dict.fromkeys(instance_keys, per_key)

    snapshots.clear()
    for n in range(3):  # the next batch changes one key only
        task.add(tick(offset + n, T0 + offset + n, "k2"))
    task.process(0)
    changes = commit(task, snapshots)
    assert snapshots == Counter({b'["k2"]': 1})
    assert count_of(task, changes[b'["k2"]']) == per_key + 3
    assert {kb for kb in changes if kb.startswith(b"[")} == {b'["k2"]'}  # besides, only the task's own state
    task.close()
