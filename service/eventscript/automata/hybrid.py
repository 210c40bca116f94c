"""The lazy DFA's transition cache: filled one symbol at a time, evicted by generations, and
switched off when it thrashes.

Rust's ``regex-automata`` hybrid DFA builds a transition only when a search needs it, clears its
cache when full, and gives up for a search whose cache is cleared too often while producing
too few bytes per state, so the caller runs an NFA simulation instead. A stream processor cannot
give up per search, so here:

- an entry is one transition, (state mask, symbol) → whatever the engine needs to take it,
  computed by the simulation (``simulate.PositionSets``) when first needed, never the whole row;
- eviction is by generations: new entries go to the young generation; when it holds
  ``capacity`` entries it becomes the old one and the previous old one is dropped. A miss in the
  young generation that hits the old one moves the entry back, so the working set survives a
  turnover and only what was not used for a whole generation is forgotten;
- a generation that fills up shows a working set larger than a generation: the generations grow
  (twice as large each time, up to ``GROWTH`` times the initial size), so a working set that
  fits stops moving between them;
- when most entries of several generations in a row were computed rather than moved back, the
  cache is not paying for itself (every step builds a transition that is never used again, as
  with ``.* A() .{25}`` over random events): it is emptied and switched off, and every step is
  then simulated directly, at a cost proportional to the expression's size. That lasts for the
  engine's lifetime (a restarted engine tries the cache again).

The engine's generated code reads ``young[sym]`` directly, so those dicts are replaced in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Generations whose entries were mostly computed, in a row, before the cache is switched off.
THRASH_GENERATIONS = 3
#: "Mostly": this fraction of a generation's entries computed rather than moved back.
THRASH_FRACTION = 0.5
#: How far a generation may grow when its working set moves between generations.
GROWTH = 4


class TransitionCache:
    def __init__(
        self,
        nsym: int,
        capacity: int,
        *,
        enabled: bool = True,
        adaptive: bool = True,
        on_switch_off: Callable[[], None] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("the lazy DFA's cache needs room for at least one transition")
        self.capacity = capacity
        self._max_capacity = capacity * GROWTH
        #: Per symbol: state mask → entry. Read by the engine's generated feed.
        self.young: list[dict[int, Any]] = [{} for _ in range(nsym)]
        self._old: list[dict[int, Any]] = [{} for _ in range(nsym)]
        self._size = 0
        self._computed = 0
        self._streak = 0
        self.enabled = enabled
        #: Whether thrashing switches the cache off (tests turn it off to exercise eviction).
        self.adaptive = adaptive
        self.generations = 0
        #: Told when the cache switches itself off (the engine then simulates every step inline).
        self._on_switch_off = on_switch_off

    def recall(self, mask: int, sym: int) -> Any:
        """The entry from the old generation (moved back to the young one), or None."""
        e = self._old[sym].pop(mask, None)
        if e is not None:
            self._add(mask, sym, e)
        return e

    def remember(self, mask: int, sym: int, entry: Any) -> None:
        """Keep a freshly computed entry."""
        self._computed += 1
        self._add(mask, sym, entry)

    def _add(self, mask: int, sym: int, entry: Any) -> None:
        self.young[sym][mask] = entry
        self._size += 1
        if self._size >= self.capacity:
            self._turn_over()

    def _turn_over(self) -> None:
        self.generations += 1
        if self.adaptive:
            thrashing = self._computed >= THRASH_FRACTION * self._size
            self._streak = self._streak + 1 if thrashing else 0
            if self._streak >= THRASH_GENERATIONS:
                self.switch_off()
                return
            if self.capacity < self._max_capacity:
                self.capacity *= 2
        self._old = [d for d in self.young]
        self.young[:] = [{} for _ in self.young]  # in place: the generated code holds the list
        self._size = self._computed = 0

    def switch_off(self) -> None:
        self.enabled = False
        if self._on_switch_off is not None:
            self._on_switch_off()
        for d in self.young:
            d.clear()
        self._old = [{} for _ in self.young]
        self._size = self._computed = 0

    @property
    def entries(self) -> int:
        return sum(map(len, self.young)) + sum(map(len, self._old))
