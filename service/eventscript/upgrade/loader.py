"""What a host does with an instance written by another version of its program: the topology's
``upgrade`` policy applied per instance, as the host loads it, with counts for metrics and one
summary line for the log.

Hosts (the task's store, task/versions.py, for the Kafka worker and the backfill) call
:meth:`UpgradeLoader.load` on each snapshot of the old version when they first need it (lazily,
per key) and write the result back in the new format; :meth:`UpgradeLoader.admit` decides at start whether they may run
at all. The policies:

- ``refuse`` (the default, for when nothing was planned): state of another version stops the
  host with a message naming both versions and what to do; a worker never reads another
  version's state as its own;
- ``carry``: the plan's verdict for each instance (carried, restarted or ended); a plan that
  cannot be applied (exit 2) is refused all the same;
- ``restart``: every instance of the old version is dropped and starts afresh (the new program's
  initial actions run at the key's next event), the offsets kept: for a change the plan cannot
  carry, when losing the partial matches is acceptable.
"""

from __future__ import annotations

import logging
from collections import Counter

from ..automata.compiled import CompiledProgram
from .convert import RESTARTED, Conversion, UpgradeRefused, convert
from .places import SourcePlaces
from .plan import CARRIED, ENDED, Plan, make_plan

POLICIES = ("carry", "restart", "refuse")
DEFAULT_POLICY = "refuse"

log = logging.getLogger(__name__)


class UpgradeLoader:
    """Converts the old version's instances for the new one under a policy, and counts them."""

    def __init__(
        self,
        old: CompiledProgram,
        new: CompiledProgram,
        policy: str = DEFAULT_POLICY,
        program_name: str = "",
        places: SourcePlaces | None = None,
    ) -> None:
        """``places``: positions in the new program's source, so that a refusal for the plan's
        problems says file:line:col as ``eventscript upgrade plan`` does."""
        if policy not in POLICIES:
            raise ValueError(f"upgrade policy {policy!r}: use one of {', '.join(POLICIES)}")
        self.policy = policy
        self.plan: Plan = make_plan(old, new, places=places)
        self.name = program_name or new.name
        self.counts: Counter[str] = Counter({CARRIED: 0, RESTARTED: 0, ENDED: 0})

    def admit(self) -> None:
        """Raise UpgradeRefused, saying why and what to do, when the policy forbids running over
        the old version's state (nothing happens when both versions are one machine)."""
        plan = self.plan
        if plan.old_fingerprint == plan.new_fingerprint or self.policy == "restart":
            return
        if self.policy == "refuse":
            raise UpgradeRefused(
                f"program {self.name}: the stored state was written by version {plan.old_fingerprint}, this is "
                f"{plan.new_fingerprint}; check the change with 'eventscript upgrade plan OLD NEW', then set "
                f"'upgrade: carry' (or 'restart') for this program in the topology"
            )
        if plan.problems:
            raise UpgradeRefused(
                f"program {self.name}: the upgrade cannot be applied: {'; '.join(map(str, plan.problems))}; "
                f"set 'upgrade: restart' to start every instance afresh, or reprocess the history "
                f"with the backfill"
            )

    def load(self, data: bytes, now: int) -> Conversion:
        """One old snapshot for the new program (see ``convert``), counted. ``now``: the host's
        clock (microseconds), for timers the old state did not have."""
        self.admit()
        if self.policy == "restart":
            result = Conversion(RESTARTED, None, "the topology's upgrade policy is restart")
        else:
            result = convert(self.plan, data, now)
        self.counts[result.verdict] += 1
        return result

    def summary(self) -> str:
        """One line: the versions and how many instances were carried, restarted and ended."""
        c = self.counts
        return (
            f"program {self.name}: upgraded from {self.plan.old_fingerprint} to {self.plan.new_fingerprint} "
            f"({self.policy}): {c[CARRIED]} instances carried, {c[RESTARTED]} restarted, {c[ENDED]} ended"
        )

    def log_summary(self) -> None:
        log.info("%s", self.summary())
