"""A topology's tasks run over an in-memory log in a random schedule and killed as a worker's are
(``test_random_kills.py``): at random, and at the moments a recovery fault hides in.

A kill loses what the task did since its last commit; its next owner starts from that commit
(``test_upstream_repeats.restart``). Besides a kill of a random task after a random turn
(``KillRates.anywhere``), a task is killed:

- ``kept``: after a turn that left records of its own waiting in a partition several upstream
  tasks write (``Task._forward_in_time_order`` keeps them in record-time order, not offset
  order), before its commit;
- ``after_commit``: right after a commit that left such records waiting (the committed position
  must stay before every one of them: tests/task/test_kept_out_of_offset_order.py);
- ``mid_commit``: at-least-once, between the commit's steps (the records re-published ahead sent,
  the state not stored; or the state stored, the markers not written). Exactly-once commits are
  one transaction: killed before it, or after;
- ``restoring``: again, the task just taken on, after a turn or two and before its first commit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eventscript.task.streams import WriterStreams
from eventscript.task.task import Task

from .pipeline_log import PipelineRun
from .test_upstream_repeats import commit, restart, store_state


@dataclass(frozen=True)
class KillRates:
    """The chance of each kill (see the module's docstring), and how many kills a run has at most."""

    anywhere: float = 0.02
    kept: float = 0.0
    after_commit: float = 0.0
    mid_commit: float = 0.0
    restoring: float = 0.0
    most: int = 8


def kept_waiting(task: Task) -> bool:
    """The task keeps records of its own, taken from a partition several upstream tasks write,
    not processed yet."""
    return any(isinstance(ip.inbox, WriterStreams) and ip.streams is not None and len(ip.streams) for ip in task.inputs)


class Transactions:
    """Exactly-once: what a task sends reaches the log when it commits (its transaction); a kill
    aborts it (a ``read_committed`` reader never sees it)."""

    def __init__(self, pipeline: PipelineRun) -> None:
        self.log = pipeline.log
        self.pending: dict[int, list[tuple[Any, ...]]] = {}

    def begin(self, task: Task) -> None:
        batch = self.pending.setdefault(id(task), [])
        task.attach(lambda *record: batch.append(record))

    def commit(self, task: Task) -> None:
        """The host's exactly-once commit (``Checkpoint``): the markers in the transaction, the
        state in the store at the input position, and the transaction's records to the log."""
        task.write_progress()
        commit(task, markers=False)
        for record in self.pending.pop(id(task), []):
            self.log.send(*record)
        self.begin(task)

    def abort(self, task: Task) -> None:
        self.pending.pop(id(task), None)

    def end(self, tasks: list[tuple[Task, dict[str, int]]]) -> None:
        """Every task commits, then writes to the log directly (no more kills)."""
        for task, _ in tasks:
            self.commit(task)
            task.attach(self.log.send)


class KillSchedule:
    """One run's turns, commits and kills (``run``), in the order the seed gives."""

    def __init__(self, pipeline: PipelineRun, stores: Path, eos: bool, rates: KillRates, seed: int) -> None:
        self.pipeline, self.stores, self.rates = pipeline, stores, rates
        self.transactions = Transactions(pipeline) if eos else None
        self.rng = random.Random(seed)
        #: The kills so far, by kind.
        self.kills: dict[str, int] = {}
        #: The tasks taken on and not committed since (by index): ``restoring`` kills them again.
        self.restoring: set[int] = set()

    def run(self, turns: int, commit_chance: float) -> None:
        """``turns`` random turns, each task committing after one with ``commit_chance`` and when it
        asks to (``Task.wants_commit``, as the Kafka host: ``Checkpoint``); then every task commits
        and writes its markers once more, and the pipeline runs to rest with no more kills."""
        pipeline, rng, rates = self.pipeline, self.rng, self.rates
        if self.transactions is not None:
            for task, _ in pipeline.tasks:
                self.transactions.begin(task)
        for _ in range(turns):
            i = rng.randrange(len(pipeline.tasks))
            task, cursors = pipeline.tasks[i]
            pipeline.step(task, cursors, rng, mark=False)
            kept = kept_waiting(task)
            if i in self.restoring and self._chance(rates.restoring):
                self._kill(i, "restoring")
                continue
            if kept and self._chance(rates.kept):
                self._kill(i, "kept")
                continue
            if rng.random() < commit_chance or task.wants_commit:
                if self._commit(i, task):
                    continue
                if kept_waiting(task) and self._chance(rates.after_commit):
                    self._kill(i, "after_commit")
                    continue
            if self._chance(rates.anywhere):
                self._kill(rng.randrange(len(pipeline.tasks)), "anywhere")
        if self.transactions is not None:
            self.transactions.end(pipeline.tasks)
        for task, _ in pipeline.tasks:  # every writer marks again within ``RESEND_S``: a reader
            task.write_progress(force=True)  # restarted after a writer's last marker hears from it

    def _commit(self, i: int, task: Task) -> bool:
        """Task ``i`` commits; True when it was killed in the middle (at-least-once)."""
        self.restoring.discard(i)
        if self.transactions is not None:
            self.transactions.commit(task)
            return False
        if self._chance(self.rates.mid_commit):
            task.forward_fetched()
            if self.rng.random() < 0.5:
                store_state(task)
            self._kill(i, "mid_commit")
            return True
        commit(task)
        return False

    def _chance(self, rate: float) -> bool:
        return rate > 0 and sum(self.kills.values()) < self.rates.most and self.rng.random() < rate

    def _kill(self, i: int, kind: str) -> None:
        """Task ``i`` killed (its transaction aborted) and taken on from its last commit."""
        transactions = self.transactions
        if transactions is not None:
            transactions.abort(self.pipeline.tasks[i][0])
        restart(self.pipeline, i, self.stores)
        if transactions is not None:
            transactions.begin(self.pipeline.tasks[i][0])
        self.kills[kind] = self.kills.get(kind, 0) + 1
        self.restoring.add(i)
