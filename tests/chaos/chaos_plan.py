"""What one run of the fault harness does: the program, the input, the faults and their order.

A ``ChaosPlan`` is plain data, so that a failing run can be repeated from what the test printed
(the seed, the guarantee, the clock and the sizes). The short plans run in ``make test``; the long
one (``make chaos``) reads its sizes from ``CHAOS_*`` environment variables (``from_env``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

#: The program under test. Each key counts its events and reports every one (deterministic per
#: key: the uninterrupted run is the oracle); after ``{quiet}`` without an event the key reports
#: itself quiet with its count and its instance ends (a timer output; the next event starts a new
#: instance). On the record clock the quiet period is record time and fires mid-stream; on the
#: wall clock it fires once per key after the producer stops.
PROGRAM = """
in {{string k; long n;}} Tick group(Tick.k)
out {{string k; long count; long last;}} Count, {{string k; long count;}} Quiet

{{ count = 0; }}
( Tick(t) {{ count = count + 1; !>Count({{k: t.k, count: count, last: t.n}}); }} )*
elapse[{quiet} seconds]() {{ !>Quiet({{k: group[0], count: count}}); }}
"""

#: The faults of one round, in order: ``kill:N`` (kill -9 of worker N, restarted at once),
#: ``join``/``leave`` (a fourth worker), ``freeze:N`` (SIGSTOP of worker N until the others have
#: taken its tasks, then SIGCONT: a zombie), ``broker`` (kill -9 of the broker leading the
#: changelog's partition 0, restarted once the workers made progress without it).
ROUND = ("kill:0", "join", "freeze:1", "kill:1", "leave", "broker", "kill:2")


@dataclass(frozen=True)
class ChaosPlan:
    guarantee: str = "exactly_once"
    clock: str = "record"
    #: Seeds the producer (keys, poison bytes and where they go) and the pauses between faults.
    seed: int = 2026
    keys: int = 40
    partitions: int = 4
    #: Input records per second (the producer runs until the last fault is done).
    rate: float = 80.0
    #: One record in ``1 / poison`` does not decode (bytes that are not JSON).
    poison: float = 0.01
    #: Rounds of ``ROUND``.
    rounds: int = 1
    #: New distinct outputs to see between two faults (the workers are processing).
    progress: int = 30
    #: The quiet period of ``PROGRAM``: record-time seconds, or wall seconds (longer than any
    #: stall the faults cause, or a key would go quiet mid-stream for a reason no oracle knows).
    record_quiet: int = 30
    wall_quiet: int = 15
    #: Group session timeout (ms) of the workers: a frozen worker is out of the group after it.
    session_timeout_ms: int = 3000
    #: Whether a wedged worker (a fatal client error, then neither rejoined nor exited:
    #: ``chaos_fleet.wedged``) fails the run, or is only reported in the figures. It depends on
    #: which broker coordinated the group when one was killed, so the short run only reports it
    #: (a test that fails by chance is no test); the long run fails on it.
    wedged_fail: bool = False
    commit_interval_ms: int = 100

    @property
    def quiet(self) -> int:
        return self.record_quiet if self.clock == "record" else self.wall_quiet

    @property
    def program(self) -> str:
        return PROGRAM.format(quiet=self.quiet)

    @property
    def steps(self) -> list[str]:
        return list(ROUND) * self.rounds

    def describe(self) -> str:
        return (
            f"guarantee={self.guarantee} clock={self.clock} seed={self.seed} keys={self.keys} "
            f"partitions={self.partitions} rate={self.rate:g}/s poison={self.poison:g} rounds={self.rounds}"
        )


def from_env(plan: ChaosPlan) -> ChaosPlan:
    """``plan`` with the sizes ``CHAOS_SEED``, ``CHAOS_ROUNDS``, ``CHAOS_RATE``, ``CHAOS_KEYS``,
    ``CHAOS_PROGRESS`` and ``CHAOS_WALL_QUIET`` set in the environment (``make chaos``)."""
    changes: dict[str, object] = {}
    for field, var, cast in (
        ("seed", "CHAOS_SEED", int),
        ("rounds", "CHAOS_ROUNDS", int),
        ("rate", "CHAOS_RATE", float),
        ("keys", "CHAOS_KEYS", int),
        ("progress", "CHAOS_PROGRESS", int),
        ("wall_quiet", "CHAOS_WALL_QUIET", int),
    ):
        raw = os.environ.get(var)
        if raw:
            try:
                changes[field] = cast(raw)
            except ValueError:
                raise ValueError(f"{var}={raw!r}: expected a number") from None
    return replace(plan, **changes)  # type: ignore[arg-type]
