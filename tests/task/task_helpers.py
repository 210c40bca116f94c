"""What the task tests share: the record a host builds (``PlainRecord``, from task/record.py), a
task builder, and the counting task several of them drive. No relative imports: tests/kafka
reads it too (from this folder on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from count_programs import COUNT_QUIET
from eventscript.automata.compile import compile_source
from eventscript.automata.compiled import CompiledProgram
from eventscript.state.changelog import HEADER_EPOCH, HEADER_POSITION, split_batch_frame
from eventscript.task.record import PlainRecord
from eventscript.task.task import Task
from eventscript.topology.config import InputConfig, ProgramConfig

__all__ = ["T0", "PlainRecord", "build_task", "changelog_fields", "make_task", "program_config", "tick", "unframed"]

T0 = 1_767_225_600_000  # ms: 2026-01-01T00:00:00Z


def program_config(inputs: list[InputConfig], clock: str = "record", name: str = "p") -> ProgramConfig:
    """Program ``name`` reading ``inputs``, writing every output to "out" and errors to "err"."""
    return ProgramConfig(
        name=name, source=f"{name}.es", clock=clock, inputs=inputs, outputs={"default": "out"}, errors="err"
    )


def build_task(
    program: CompiledProgram,
    cfg: ProgramConfig,
    store: Path,
    *,
    partition: int = 0,
    tasks: int = 1,
    repartition: str | None = None,
    changelog: str | None = None,
) -> Task:
    """Task ``partition`` of ``tasks`` for the program of ``cfg`` (the repartition and changelog
    topics named after the program unless given), its store in ``store``; not yet loaded."""
    return Task(
        partition,
        program,
        cfg,
        cfg.inputs,
        repartition or f"{cfg.name}-rep",
        changelog or f"{cfg.name}-changelog",
        tasks,
        store,
    )


def make_task(store: Path, clock: str = "record") -> Task:
    """The counting task (``count_programs.COUNT_QUIET``), reading Ticks from topic "in"."""
    cfg = program_config([InputConfig(topic="in", event="Tick")], clock)
    return build_task(compile_source(COUNT_QUIET, name="p").require(), cfg, store)


def tick(offset: int, ts: int, key: str, cls: Any = PlainRecord) -> Any:
    """A Tick of ``key`` on partition 0 of "in", as ``cls`` builds a record from its fields."""
    return cls("in", 0, offset, ts, orjson.dumps([key]), orjson.dumps({"k": key, "n": offset}), None)


def changelog_fields(msg: Any) -> tuple[bytes | None, bytes | None, bytes | None]:
    """(stored value, position, epoch) of a changelog record, as a ``confluent_kafka.Message``
    (the restore's reading: the batch frame in front of its value, or its headers)."""
    h = dict(msg.headers() or ())
    return split_batch_frame(msg.value(), h.get(HEADER_POSITION), h.get(HEADER_EPOCH))


def unframed(value: bytes | None) -> bytes | None:
    """A changelog record's value as the store keeps it (without its batch frame)."""
    return split_batch_frame(value, None, None)[0]
