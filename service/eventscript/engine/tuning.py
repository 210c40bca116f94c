"""Process-level settings for hosts that run the engine at high rates.

The engine allocates a few short-lived objects per event (keys, emitted events, timer entries)
and creates no reference cycles on its hot path, so CPython's cyclic garbage collector, which by
default runs after every 700 allocations, spends its time rescanning long-lived instance
contexts for nothing. Hosts call :func:`configure_gc` once after start-up: it moves everything
allocated so far out of the collector's sight and makes young-generation collections rare.
Reference counting still frees garbage at once; only cycle detection runs less often.
"""

from __future__ import annotations

import gc

#: Allocations between young-generation collections (CPython's default is 700).
GEN0_THRESHOLD = 50_000


def configure_gc(gen0: int = GEN0_THRESHOLD) -> None:
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0, max(gen1, 20), max(gen2, 100))
