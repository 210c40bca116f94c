"""Process-level settings for hosts that run the engine at high rates.

The engine allocates a few short-lived objects per event (keys, emitted events, timer entries)
and creates no reference cycles on its hot path, so CPython's cyclic garbage collector, which by
default runs after every 700 allocations, spends its time rescanning long-lived instance
contexts for nothing. Hosts call :func:`configure_gc` once after start-up: it moves everything
allocated so far out of the collector's sight and makes young-generation collections rare.
Reference counting still frees garbage at once; only cycle detection runs less often.

A host that checkpoints (the Kafka worker, at each commit) also calls :func:`settle_gc` there:
what it allocated since and still holds is mostly new long-lived state (at many keys, each key's
instance, its variables and the event it keeps), which the young-generation collections would
otherwise scan twice on its way to the old generation — 0.5 µs of a record at 100k keys
(bench/SPEED.md, issue 26, fifth session).
"""

from __future__ import annotations

import gc
import time

#: Allocations between young-generation collections (CPython's default is 700).
GEN0_THRESHOLD = 50_000

#: Seconds between the full collections ``settle_gc`` runs: how long a reference cycle that
#: became garbage after it was frozen can wait to be collected.
FULL_COLLECTION_EVERY = 600.0

#: Whether this process was tuned (``configure_gc``): ``settle_gc`` does nothing otherwise.
_configured = False
#: When ``settle_gc`` last ran a full collection (``time.monotonic``).
_last_full = 0.0


def configure_gc(gen0: int = GEN0_THRESHOLD) -> None:
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0, max(gen1, 20), max(gen2, 100))
    global _configured, _last_full
    _configured = True
    _last_full = time.monotonic()


def settle_gc() -> None:
    """At a host's checkpoint, in a process tuned by ``configure_gc``: move every object the
    collector tracks out of its sight, as ``configure_gc`` did at start (``gc.freeze``: O(1)).
    The young collections then scan only what was allocated since the last checkpoint and still
    lives, rather than every new instance once in each young generation. Reference counting still
    frees what is dropped, frozen or not; a reference cycle frozen before it became garbage is
    collected by the full collection run here every ``FULL_COLLECTION_EVERY`` seconds (everything
    back in sight, collected, frozen again): memory held by such cycles is bounded by what the
    process makes of them in that time. In a process ``configure_gc`` did not tune, nothing."""
    global _last_full
    if not _configured:
        return
    now = time.monotonic()
    if now - _last_full >= FULL_COLLECTION_EVERY:
        _last_full = now
        gc.unfreeze()
        gc.collect()
    gc.freeze()
