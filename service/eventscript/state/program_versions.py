"""The program versions a task state names, and which of them wrote a snapshot, for its readers.

A snapshot carries the tag of the program version that wrote it (``engine.context.program_tag``),
and the task state keeps each version's fingerprint and compiled program under ``version_key``
(written by ``task.versions``). A worker converts another version's instances as it needs them
(the topology's ``upgrade`` policy) and writes them in its own version at its next commit; until
then its store, its changelog and its standbys hold them as the old version wrote them. A reader
that explains a snapshot (the state query, ``state dump``) must read it in the terms of the
version that wrote it: in another version's terms, a state number, a timer's symbol or a
variable's slot means something else (a marker of the new text with the old deadline).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ..automata.compiled import CompiledProgram
from ..engine.context import program_tag, snapshot_tag
from ..upgrade.fingerprint import fingerprint_of
from .changelog import UNTAGGED_KEY, VERSION_PREFIX

if TYPE_CHECKING:  # (the worker loads this module for version records, never the explain package)
    from ..explain.terms import ProgramTerms


T = TypeVar("T", bound=int | None)


def version_key(tag: int) -> bytes:
    """The task-state key of the version of program tag ``tag``."""
    return VERSION_PREFIX + b"%08x" % tag


def untagged_tag(raw: bytes | None) -> int | None:
    """The tag of the version that wrote the task state's snapshots without one, as recorded under
    ``UNTAGGED_KEY`` (None: not recorded)."""
    return int(raw, 16) if raw else None


def writer_tag(snapshot: bytes, untagged: T) -> int | T:
    """The tag of the version that wrote ``snapshot``: its own, or for a snapshot of a format
    before tags, ``untagged`` (``untagged_tag``). ValueError if it is not a snapshot."""
    tag = snapshot_tag(snapshot)
    return untagged if tag is None else tag


def read_version_record(raw: bytes) -> tuple[str, CompiledProgram | None]:
    """(fingerprint, compiled program: None when it was too large to keep) of a version record;
    ValueError if it cannot be read."""
    try:
        doc: Any = orjson.loads(zlib.decompress(raw))
        compiled = doc["compiled"]
        return str(doc["fingerprint"]), None if compiled is None else CompiledProgram.from_json(compiled)
    except (zlib.error, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"unreadable program version record: {exc}") from None


#: What a reader says of a snapshot another version wrote.
OTHER_VERSION = (
    "written by another version of the program than the one reading it (an upgrade the worker has "
    "not yet written back: it converts the instance by the topology's upgrade policy when it next "
    "needs it, and its next commit writes it in its own version; or a reader with an older or newer "
    "topology than the one the workers run)"
)


class WrittenBy:
    """Which version of ``terms``'s program wrote a snapshot, and the terms to read it in.

    ``lookup`` reads a task-state key (a store's ``get``, or the records a changelog dump folded).
    """

    def __init__(self, terms: ProgramTerms, lookup: Callable[[bytes], bytes | None]) -> None:
        self.terms = terms
        self.own_tag = program_tag(fingerprint_of(terms.compiled))
        self._lookup = lookup
        self._others: dict[int, tuple[ProgramTerms, dict[str, Any]]] = {}

    @functools.cached_property
    def untagged(self) -> int | None:
        """The tag the task state recorded for snapshots without one (read once)."""
        return untagged_tag(self._lookup(UNTAGGED_KEY))

    def terms_for(self, snapshot: bytes) -> tuple[ProgramTerms, dict[str, Any] | None]:
        """The terms to explain ``snapshot`` (a snapshot's bytes) in, and what to say of its
        version (None: the program's own)."""
        try:
            tag = writer_tag(snapshot, self.untagged)
        except ValueError:
            return self.terms, None  # (the decoder says what is wrong with it)
        if tag is None or tag == self.own_tag:
            return self.terms, None
        known = self._others.get(tag)
        if known is None:
            known = self._others[tag] = self._other(tag)
        return known

    def _other(self, tag: int) -> tuple[ProgramTerms, dict[str, Any]]:
        about: dict[str, Any] = {"own": False, "tag": f"{tag:08x}", "fingerprint": None, "note": OTHER_VERSION}
        raw = self._lookup(version_key(tag))
        compiled = None
        if raw is not None:
            try:
                about["fingerprint"], compiled = read_version_record(raw)
            except ValueError:
                pass
        if compiled is None:
            about["explained_in"] = "the program asked with (the writer's program is not kept): states may not fit"
            return self.terms, about
        about["explained_in"] = "the program that wrote it, as the task state keeps it"
        from ..explain.terms import ProgramTerms  # (a reader's: see the import above)

        return ProgramTerms(compiled), about
