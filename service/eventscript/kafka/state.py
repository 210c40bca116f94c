"""Task state: moved to :mod:`eventscript.state` (the store of record, its changelog positions,
the instance cache and the timer index); re-exported here for the worker, its restore and the
backfill."""

from __future__ import annotations

from ..state.changelog import (
    CLOCK_KEY,
    HEADER_POSITION,
    HWM_KEY,
    SEQ_KEY,
    SINGLE_KEY,
    TASK_STATE_KEYS,
    Position,
    committed_covers,
    decode_clock,
    decode_hwm,
    decode_position,
    position_header,
    same_position,
    tp_name,
)
from ..state.store import TaskStore

__all__ = [
    "CLOCK_KEY",
    "HEADER_POSITION",
    "HWM_KEY",
    "SEQ_KEY",
    "SINGLE_KEY",
    "TASK_STATE_KEYS",
    "Position",
    "TaskStore",
    "committed_covers",
    "decode_clock",
    "decode_hwm",
    "decode_position",
    "position_header",
    "same_position",
    "tp_name",
]
