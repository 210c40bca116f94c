"""One worker task on a real local store, as the task-level tests of tests/kafka build it.

The worker's ``Task`` over one input topic ``in`` (event ``Tick`` unless told), outputs to ``out``
and ``$error`` records to ``err``, on partition 0 of 1, its store in ``store``: loaded from that
store as the worker loads a task it is assigned, so that a second task on the same store is the
first one restarted.
"""

from __future__ import annotations

from pathlib import Path

from eventscript.automata.compile import compile_source
from eventscript.kafka.config import InputConfig, ProgramConfig
from eventscript.kafka.task import Task


def stored_task(
    store: Path,
    program: str,
    *,
    name: str = "p",
    clock: str = "record",
    event: str = "Tick",
    cache_instances: int | None = None,
) -> Task:
    """The task of ``program`` (its source) on ``store``, as the worker makes and loads it."""
    cfg = ProgramConfig(
        name=name,
        source=f"{name}.es",
        clock=clock,
        inputs=[InputConfig(topic="in", event=event)],
        outputs={"default": "out"},
        errors="err",
        state={"cache_instances": cache_instances} if cache_instances is not None else {},
    )
    compiled = compile_source(program, name=name).require()
    task = Task(0, compiled, cfg, cfg.inputs, f"{name}-rep", f"{name}-changelog", 1, store)
    task.load_from_store()
    return task
