"""The keys of the benches' records, one draw for all of them (worker_peers.py, task_path.py,
event_time.py), so that a bench in process measures the records the race on a broker sends."""

from __future__ import annotations

import itertools
import random

#: The exponent of the Zipf law of order "zipf".
ZIPF_S = 1.1


def drawn_keys(n: int, keys: int, order: str, seed: int) -> list[str]:
    """``n`` keys among ``k0`` .. ``k<keys-1>``, drawn uniformly (``order`` "random") or by a
    Zipf law ("zipf": a few keys have most records, in a shuffled order of the names)."""
    rnd = random.Random(seed)
    names = [f"k{i}" for i in range(keys)]
    if order == "zipf":
        rnd.shuffle(names)
        cum = list(itertools.accumulate(1.0 / r**ZIPF_S for r in range(1, keys + 1)))
        return rnd.choices(names, cum_weights=cum, k=n)
    return [names[rnd.randrange(keys)] for _ in range(n)]
