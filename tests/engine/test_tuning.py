"""The collector's settings for hosts at high rates (engine/tuning.py): ``settle_gc`` at a
checkpoint moves what is held out of the young collections' sight, and a reference cycle frozen
before it became garbage is still collected, at the next full collection it runs."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from eventscript.engine import tuning


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def tuned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process tuned as a worker's is, put back as it was after the test."""
    thresholds = gc.get_threshold()
    monkeypatch.setattr(tuning, "_configured", False)
    monkeypatch.setattr(tuning, "_last_full", 0.0)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def dropped_cycle() -> weakref.ref[Node]:
    """A reference cycle, dropped: only the cyclic collector can free it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_does_nothing_in_a_process_not_tuned(tuned: None) -> None:
    gc.unfreeze()
    tuning.settle_gc()
    assert gc.get_freeze_count() == 0


def test_settle_freezes_what_is_held_at_a_checkpoint(tuned: None) -> None:
    tuning.configure_gc()
    held = [Node() for _ in range(1000)]
    frozen = gc.get_freeze_count()
    tuning.settle_gc()
    assert gc.get_freeze_count() >= frozen + len(held)
    assert held  # (held to here)


def test_a_cycle_frozen_before_it_became_garbage_is_collected_at_the_next_full_collection(
    tuned: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    tuning.configure_gc()
    a = Node()
    a.other = a
    ref = weakref.ref(a)
    tuning.settle_gc()  # frozen while held
    del a
    gc.collect()
    assert ref() is not None  # out of the collector's sight: what the full collection is for
    now = tuning._last_full + tuning.FULL_COLLECTION_EVERY
    monkeypatch.setattr(tuning.time, "monotonic", lambda: now)
    tuning.settle_gc()
    assert ref() is None
    assert gc.get_freeze_count() > 0  # what survived is out of sight again


def test_a_cycle_made_and_dropped_after_a_checkpoint_is_collected_by_a_young_collection(tuned: None) -> None:
    tuning.configure_gc()
    tuning.settle_gc()
    ref = dropped_cycle()
    gc.collect(0)
    assert ref() is None
