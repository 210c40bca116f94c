"""Is a program's state folder free? Taken by ``run`` and ``dev`` before they start any worker.

Two workers on one machine pointed at the same state folder (``eventscript run`` started twice on
one topology, or ``dev --state-dir`` twice) shared the RocksDB stores of their tasks and the
instance id kept there: the second died on RocksDB's ``IO error: While lock file:
.../task-0/LOCK: Resource temporarily unavailable`` with a Python traceback, or the two fenced
each other's transactions again and again. Each command now holds a lock on the state folder of
every program it runs for as long as it runs (the kernel drops it when the process ends, after a
``kill -9`` too), and a second one says which folder is in use, by which process, and what to do.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from ..topology.config import Topology

#: The lock file in each program's state folder (beside its ``task-N`` stores).
LOCK_NAME = ".worker.lock"


class StateFolderError(Exception):
    """A program's state folder cannot be taken; the message says which and what to do."""


class StateFolderInUse(StateFolderError):
    """Another process holds a program's state folder; the message says which and what to do."""


def lock_state_folders(topo: Topology, names: list[str] | None, remedy: str) -> contextlib.ExitStack:
    """Lock the state folder of each program of ``topo`` named in ``names`` (every program when
    None); the locks are held until the returned stack is closed or the process ends. Raises
    StateFolderInUse, holding none of them, when another process holds one (StateFolderError when
    a folder cannot be made or opened); ``remedy`` ends its
    message (what this command's user can change)."""
    held = contextlib.ExitStack()
    try:
        for cfg in topo.programs:
            if names is None or cfg.name in names:
                held.enter_context(_lock(topo.state_path(cfg), cfg.name, remedy))
    except BaseException:
        held.close()
        raise
    return held


@contextlib.contextmanager
def _lock(folder: Path, program: str, remedy: str) -> Iterator[None]:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        f: IO[str] = open(folder / LOCK_NAME, "a+")  # noqa: SIM115 (held open while the lock is)
    except OSError as exc:
        raise StateFolderError(
            f"cannot use the state folder of program {program}, {folder}: {exc.strerror or exc}; "
            f"give it a folder this user may write (state_dir in the topology)"
        ) from None
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip()
            by = f" by process {holder}" if holder.isdigit() else ""
            raise StateFolderInUse(
                f"the state folder of program {program}, {folder.resolve()}, is in use{by}: another worker on this "
                f"machine runs it (two workers cannot share a program's state folder); {remedy}"
            ) from None
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield
    finally:
        f.close()
