"""How ``make unit``'s two processes (pytest-xdist, ``-n 2 --dist loadgroup``) share the tests.

Every test on the session's Kafka broker runs in one process, one after the other; every test
that starts its own brokers (the fault harness's and the failover test's three, the launcher's,
``dev``'s) runs in one process, one after the other too; every test that needs Spark runs in one
process; the other tests are shared out a whole file at a time. Why: the Kafka tests mostly wait
on brokers and workers, so the CPU-bound files (engine, language, cli...) run beside them in the
other process, while the Kafka tests never compete with each other for the two cores (run side
by side, as whole files in two processes, six failed on timing under load), and two clusters
never run at once.

The order the groups are handed out in: the tests on the session's broker first (the longest
group), to one process; the tests with their own brokers next, to the other; then Spark's, then
the files, the largest first, each to whichever process is free. Why the files last: they are many
small units, so they even out the two processes' ends whatever the Kafka groups took. The tests
with their own brokers vary the most from run to run (a failover variant took 25 s in one whole run
and 122 s in the next, the harness's variants 40 to 121 s): handed out last, as they were until
2026-11-28, nothing was left to balance them, and that run's other process ended 6 minutes after
the session broker's (33:42 in all, against 27:18 for the same tests an hour before).
xdist's own order (the groups with the most tests first, ``--loadscope-reorder``) would hand out
a parametrized file before the Kafka tests.
A file's other tests stay in one process so its module fixtures start once (the Kafka tests'
module fixtures, as a three-broker cluster, are only theirs).

Why not pytest-xdist's own ``xdist_group`` marks: on pytest 9.2 they are silently ignored (xdist
3.8 passes the group by rewriting the test's node id, which pytest 9.2 no longer reads:
pytest-dev/pytest-xdist#1386). So each worker process writes the groups it collected to a folder
the controller names, and the controller's scheduler reads them when collection is complete
(workers report it only after ``pytest_collection_modifyitems``).

tests/conftest.py takes the hooks at the end of this module into its namespace.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

#: The key of ``workerinput`` naming the folder where worker processes write their groups.
FOLDER_KEY = "eventscript_groups_folder"
_FOLDER = pytest.StashKey[Path]()


#: The group of the tests with their own brokers.
OWN = "kafka-own"
#: The groups handed out first, in this order; the files follow, largest first.
FIRST = ("kafka", OWN, "spark")


def needs(item: pytest.Item, what: str) -> bool:
    """Whether a test uses the fixture or carries the marker ``what`` ("broker" counts as "kafka")."""
    names = set(getattr(item, "fixturenames", ()))
    if what == "kafka" and "broker" in names:
        return True
    return what in names or item.get_closest_marker(what) is not None


def groups(items: list[pytest.Item]) -> dict[str, str]:
    """Each test's group (node id → group): "kafka" for a test on the session's broker (the
    ``broker`` fixture), ``OWN`` for one marked ``kafka`` without it (it starts its own brokers:
    its fixtures, as a three-broker cluster, are its own), else "spark" for one that needs Spark,
    else its file's path (the CPU-bound tests of a Kafka test file, as the state cache's memory
    test, run beside the Kafka tests too)."""
    out: dict[str, str] = {}
    for item in items:
        if "broker" in getattr(item, "fixturenames", ()):
            out[item.nodeid] = "kafka"
        elif needs(item, "kafka"):
            out[item.nodeid] = OWN
        elif needs(item, "spark"):
            out[item.nodeid] = "spark"
        else:
            out[item.nodeid] = item.nodeid.split("::")[0]
    return out


def folder(config: pytest.Config) -> Path:
    """The controller's folder for the workers' groups (made on first use, removed at the end)."""
    if _FOLDER not in config.stash:
        config.stash[_FOLDER] = Path(tempfile.mkdtemp(prefix="eventscript-test-groups-"))
    return config.stash[_FOLDER]


def remove_folder(config: pytest.Config) -> None:
    if _FOLDER in config.stash:
        for f in config.stash[_FOLDER].iterdir():
            f.unlink()
        config.stash[_FOLDER].rmdir()


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker process started for ``--dist loadgroup``: writes the groups of what it collected."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or FOLDER_KEY not in workerinput:
        return
    path = Path(workerinput[FOLDER_KEY]) / f"{workerinput['workerid']}.json"
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(groups(items)))
    os.replace(partial, path)  # the controller never reads half a file


class KafkaApartScheduling(LoadScopeScheduling):
    """xdist's scheduling by scope, with the scopes above: the groups of ``FIRST`` are handed out
    first, in that order, then the files, the largest first (``--loadscope-reorder``, the
    default). (A process is given its next group when it has two tests or fewer left: the
    session broker's process takes a file only at the end of its group.)"""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self.folder = folder(config)
        self.groups: dict[str, str] | None = None
        self.ordered = False

    def _assign_work_unit(self, node: Any) -> None:
        if not self.ordered:  # the first call: the work queue is complete
            self.ordered = True
            for scope in reversed(FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        if self.groups is None:
            self.groups = {}
            for f in sorted(self.folder.glob("*.json")):
                self.groups.update(json.loads(f.read_text()))
        return self.groups.get(nodeid, nodeid.split("::")[0])


# The hooks (tests/conftest.py imports them).


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    write_groups(config, items)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hooks: none without it
def pytest_configure_node(node: Any) -> None:
    """(In the controller) Tells each worker process where to write its groups."""
    node.workerinput[FOLDER_KEY] = str(folder(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` means the groups above."""
    return KafkaApartScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None


def pytest_unconfigure(config: pytest.Config) -> None:
    remove_folder(config)
