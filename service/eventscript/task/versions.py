"""The program versions of a task's state, and another version's instances converted as the task
loads them (issue 22: upgrading a running program).

Every snapshot names the version that wrote it (format 3: ``context.program_tag``), and the task
state keeps, once per version, the fingerprint and the compiled program behind each tag
(``VERSION_PREFIX`` + tag, a changelog record like the record clock), so that a worker started
with another version can map the old automaton's states to its own (upgrade/plan.py). Snapshots
of formats 1 and 2 name no version: they are read as the version recorded under
``UNTAGGED_KEY``, which the first task of this build to load the store records as its own
program (a store from before format 3 was written by the program it then runs; upgrade
EventScript first, then the program).

At load, the topology's ``upgrade`` policy decides (``UpgradeLoader.admit``): ``refuse`` stops
the worker with a message naming both versions and what to do; ``carry`` and ``restart`` convert
each old instance when the task first needs it (lazily: a record of its key, or its timer coming
due), and the next commit writes the converted snapshot (or a tombstone) in the new version. One
eager pass converts at load every old instance with a pending timer, so that a timer the upgrade
re-arms earlier (upgrade/timers.py) fires on time even for a key that never sees another record;
those instances stay in memory until the next commit has written them.
"""

from __future__ import annotations

import logging
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson

from ..automata.compiled import CompiledProgram
from ..engine import context
from ..engine.engine import Engine
from ..state.changelog import TIMERS_KEY, UNTAGGED_KEY, VERSION_PREFIX, is_instance_key
from ..state.keyinfo import framed_value, snapshot_of
from ..state.program_versions import read_version_record, untagged_tag, version_key, writer_tag
from ..state.store import TaskStore, parse_index_key, snapshot_fields
from ..upgrade.convert import Conversion, UpgradeRefused
from ..upgrade.fingerprint import fingerprint_of
from ..upgrade.loader import UpgradeLoader
from ..upgrade.places import source_places
from ..upgrade.plan import CARRIED, ENDED, RESTARTED

log = logging.getLogger("eventscript.task")

#: The outcomes counted per converted instance (the metric's ``outcome`` label), and "refused":
#: a task that would not run over another version's state.
REFUSED = "refused"
OUTCOMES = (CARRIED, RESTARTED, ENDED, REFUSED)
#: What the host's counts name them: ``upgraded_carried``, ...
COUNT_PREFIX = "upgraded_"

#: The largest version record kept with its compiled program (compressed bytes): a changelog
#: record must stay under the brokers' message size (1 MiB by default). A larger program's record
#: holds its fingerprint only, and its instances can be restarted, not carried.
MAX_PROGRAM_RECORD = 512 * 1024


def version_record(compiled: CompiledProgram) -> bytes:
    """The task-state value of a version: its fingerprint and compiled program."""
    fp = fingerprint_of(compiled)
    raw = zlib.compress(orjson.dumps({"fingerprint": fp, "compiled": compiled.to_json()}))
    if len(raw) > MAX_PROGRAM_RECORD:
        log.warning(
            "program %s (%s): its compiled form is too large to keep in the task state (%d bytes compressed, "
            "more than %d): a later version will be able to restart its instances, not to carry them",
            compiled.name,
            fp,
            len(raw),
            MAX_PROGRAM_RECORD,
        )
        raw = zlib.compress(orjson.dumps({"fingerprint": fp, "compiled": None}))
    return raw


class ProgramVersions:
    """What a task knows of the versions its state was written by, and its conversions."""

    def __init__(
        self,
        name: str,
        partition: int,
        compiled: CompiledProgram,
        policy: str,
        now: Callable[[], int],
        counts: Counter[str],
    ) -> None:
        self.name = name
        self.partition = partition
        self.compiled = compiled
        self.policy = policy
        self.now = now
        self.fingerprint = fingerprint_of(compiled)
        self.tag = context.program_tag(self.fingerprint)
        #: The tag snapshots without one are read as (``UNTAGGED_KEY``).
        self.untagged = self.tag
        #: A loader per other version found in the task state, and every one made (by tag, with
        #: the record it was made from).
        #: None: a version whose program was too large to keep (its instances restart).
        self.loaders: dict[int, UpgradeLoader | None] = {}
        self._known: dict[int, tuple[bytes, UpgradeLoader | None]] = {}
        #: Changelog records the next commit writes: this version's record, converted instances
        #: (None: the upgrade dropped them) not written since, kept so that a key loaded twice
        #: before the commit is converted once.
        self.pending: dict[bytes, bytes | None] = {}
        #: What the last commit wrote of ``pending`` (until its store write lands, a key loaded
        #: again is read from here rather than converted twice).
        self.sent: dict[bytes, bytes | None] = {}
        #: The host's counts: instances converted (``upgraded_<outcome>``) and tasks refused.
        self.counts = counts
        #: Instances of versions without a kept program (too large), restarted.
        self.unplanned = 0
        #: Whether instances were converted since the summary was last logged.
        self.converted = False

    # -- at load ----------------------------------------------------------------------------------

    def open(self, store: TaskStore) -> None:
        """Read the versions the store names; UpgradeRefused (counted) when the policy forbids
        running over another version's state. Sets ``store.translate`` while there is one."""
        self.pending.clear()
        self.sent.clear()
        self.loaders.clear()
        store.translate = None
        if store.get(version_key(self.tag)) is None:
            self.pending[version_key(self.tag)] = version_record(self.compiled)
        raw_untagged = store.get(UNTAGGED_KEY)
        if raw_untagged is None:
            self.untagged = self.tag
            self.pending[UNTAGGED_KEY] = b"%08x" % self.tag
            if store.has_instances():
                log.info(
                    "%s task %d: the stored instances name no program version (written before snapshot "
                    "format 3): read as this program's (%s)",
                    self.name,
                    self.partition,
                    self.fingerprint,
                )
        else:
            recorded = untagged_tag(raw_untagged)
            self.untagged = self.tag if recorded is None else recorded
        for key, raw in store.with_prefix(VERSION_PREFIX):
            if key == UNTAGGED_KEY or key == version_key(self.tag):
                continue
            tag = int(key[len(VERSION_PREFIX) :], 16)
            known = self._known.get(tag)
            if known is None or known[0] != raw:  # (a rewind opens the store again: plan once)
                known = self._known[tag] = (raw, self._loader(tag, raw))
            self.loaders[tag] = known[1]
        if self.untagged != self.tag and self.untagged not in self.loaders:
            self._refuse(
                f"the stored instances without a version tag were written by version tag {self.untagged:08x}, "
                f"whose program the task state does not hold; reset the program's state (eventscript reset) "
                f"or run the version that wrote it"
            )
        if self.loaders:
            store.translate = self.translate

    def _loader(self, tag: int, raw: bytes) -> UpgradeLoader | None:
        try:
            fp, old = read_version_record(raw)
        except ValueError as exc:
            self._refuse(f"the task state's record of program version tag {tag:08x}: {exc}")
        if old is None:  # too large to keep: restart only
            if self.policy != "restart":
                self._refuse(
                    f"the stored state was written by version {fp}, whose compiled form was "
                    f"too large to keep in the task state, so its instances cannot be carried; set 'upgrade: "
                    f"restart' for this program in the topology, or reprocess the history with the backfill"
                )
            log.info(
                "%s task %d: stored instances of version %s restart (upgrade: restart)", self.name, self.partition, fp
            )
            return None
        # (the places of this program's source: a refusal points at the lines to edit)
        loader = UpgradeLoader(old, self.compiled, self.policy, self.name, source_places(self.compiled))
        try:
            loader.admit()
        except UpgradeRefused as exc:
            self._refuse(str(exc))
        log.info(
            "%s task %d: stored instances of version %s are converted to %s as they are loaded (upgrade: %s)",
            self.name,
            self.partition,
            loader.plan.old_fingerprint,
            self.fingerprint,
            self.policy,
        )
        return loader

    def _refuse(self, message: str) -> Any:
        """Count the refusal and raise it; the host names the program (the runner prints
        ``program NAME: task N: ...``)."""
        self.counts[COUNT_PREFIX + REFUSED] += 1
        raise UpgradeRefused(f"task {self.partition}: {message.removeprefix(f'program {self.name}: ')}")

    def convert_timed(self, store: TaskStore, engine: Engine) -> int:
        """The eager pass: every stored instance of another version with a pending timer is
        converted now and restored (its timer in the queue at the re-armed deadline), marked
        changed so that the next commit writes it; returns how many were restored. That commit
        also records that the pass was made (``TIMERS_KEY``): a later load skips it."""
        if not self.loaders or store.get(TIMERS_KEY) == b"%08x" % self.tag:
            return 0  # (a pass committed before: every pending timer in the store is this version's)
        restored = 0
        for entry in list(store.index_after(None)):
            deadline, seq, kb = parse_index_key(entry)
            raw = store.get(kb)
            raw = snapshot_of(raw) if raw is not None else None  # (without its key's information)
            if raw is None or snapshot_fields(raw)[1] != (deadline, seq) or self._tag_of(raw) == self.tag:
                continue  # stale entry, or this version's instance: left to the timer index
            current = self.translate(kb, raw)
            if current is not None:
                engine.mark_changed(engine.restore(current))
                self.pending.pop(kb, None)  # (written from memory at the commit)
                restored += 1
        self.pending[TIMERS_KEY] = b"%08x" % self.tag  # committed with the instances it restored
        return restored

    # -- per instance -----------------------------------------------------------------------------

    def _tag_of(self, raw: bytes) -> int:
        return writer_tag(raw, self.untagged)

    def translate(self, kb: bytes, raw: bytes) -> bytes | None:
        """``TaskStore.translate``: a stored snapshot for this version (None: dropped)."""
        tag = self._tag_of(raw)
        if tag == self.tag:
            return raw
        for written in (self.pending, self.sent):
            if kb in written:
                return written[kb]
        if tag not in self.loaders:
            self._refuse(
                f"instance {kb!r} was written by program version tag {tag:08x}, which the task state does not "
                f"describe; reset the program's state (eventscript reset) or run the version that wrote it"
            )
        loader = self.loaders[tag]
        if loader is None:
            conversion = Conversion(RESTARTED, None, "the topology's upgrade policy is restart")
            self.unplanned += 1
        else:
            conversion = loader.load(raw, self.now())
        self.counts[COUNT_PREFIX + conversion.verdict] += 1
        self.converted = True
        data = None if conversion.data is None else context.retag(conversion.data, self.tag)
        self.pending[kb] = data
        return data

    # -- at commit --------------------------------------------------------------------------------

    def changelog_records(self, changes: dict[bytes, bytes | None], key_info: Callable[[bytes], bytes | None]) -> None:
        """Add what the versions have to write to a commit's ``changes`` (a key the batch wrote
        itself keeps its newer value): a converted instance with its key's information as kept
        (``key_info``: ``TaskStore.key_info``) in front, as every stored value carries it."""
        for kb, value in self.pending.items():
            if kb not in changes:
                info = key_info(kb) if value is not None and is_instance_key(kb) else None
                changes[kb] = framed_value(info, value) if info is not None and value is not None else value
        self.sent, self.pending = self.pending, {}

    def log_summary(self) -> None:
        """Log the loaders' counts (what was converted so far) if anything was since last time."""
        if self.converted:
            self.converted = False
            lines = [loader.summary() for loader in self.loaders.values() if loader and sum(loader.counts.values())]
            if self.unplanned:
                lines.append(
                    f"{self.counts[COUNT_PREFIX + RESTARTED]} instances of a version too large to keep restarted"
                )
            log.info("%s task %d: %s", self.name, self.partition, "; ".join(lines))
