"""Reading a topology file safely: whatever the file holds, the answer is a parsed document or one
:class:`TopologyError` that says what is wrong, where, and what to do — never a traceback or a hang.

A topology is a small hand-written YAML file, so the reader refuses what no topology needs and
what would otherwise hurt the command reading it (issue 27):

- more than :data:`MAX_BYTES` (a log or a dump named by mistake);
- binary data or text that is not UTF-8 (the first bad byte is named);
- nesting deeper than :data:`MAX_DEPTH` (PyYAML's composer recurses: 5,000 ``[`` exhaust the stack);
- a document whose aliases expand to more than :data:`MAX_NODES` nodes (a "billion laughs" alias
  bomb is small on disk and takes minutes and gigabytes once expanded by the code walking it);
- an EventScript program given where a topology is expected (it says which command to use).

The composed node tree is kept so that schema errors can name ``file:line:col`` (see
:class:`~eventscript.topology.positions.YamlPositions`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import TopologyError
from .positions import YamlPositions

#: A topology is a page or two of YAML; a megabyte is far beyond any real one.
MAX_BYTES = 1 << 20
#: Levels of mappings and sequences inside each other (a topology uses about six).
MAX_DEPTH = 64
#: Nodes of the document once every alias is expanded (a large topology has a few thousand).
MAX_NODES = 100_000

#: A line that starts an EventScript declaration, to recognise a program given by mistake.
_PROGRAM_LINE = re.compile(r"^\s*(in|out|import|const|type)\s+\S", re.MULTILINE)


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting limit while composing (the parser itself is not recursive)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _Refused(
                    mark,
                    f"the document nests more than {MAX_DEPTH} levels deep; a topology needs "
                    f"a handful: check for unbalanced brackets",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _Refused(Exception):
    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


def _expanded_size(root: yaml.Node) -> int:
    """Nodes in the document with every alias expanded, counted without expanding (memoised by node:
    an alias is the same node object as its anchor). Stops counting past MAX_NODES."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a recursive alias (not allowed by the safe loader) counts once
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child)
                if total > MAX_NODES:
                    break
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                total += size(key) + size(value)
                if total > MAX_NODES:
                    break
        sizes[id(node)] = total
        return total

    return size(root)


def _refuse_duplicate_keys(root: yaml.Node) -> None:
    """A key given twice in one mapping (``errors:`` written again lower down a program): YAML
    keeps the last one without a word, so the first setting would be ignored silently."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: its node was looked at where it was defined
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, yaml.Node] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in first:
                        line = first[key.value].start_mark.line + 1
                        raise _Refused(
                            key.start_mark,
                            f"{key.value}: given twice in this mapping (first on line {line}); YAML would "
                            f"keep only this one: remove one of them, or check the indentation",
                        )
                    first[key.value] = key
                stack.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _where(path: Path, mark: Any) -> str:
    return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)


def _decode(path: Path, data: bytes) -> str:
    nul = data.find(b"\0")
    if nul >= 0:
        raise TopologyError(
            f"{path}: this is binary data, not a YAML topology (NUL byte at byte offset "
            f"{nul}); give the topology file, e.g. topology.yaml"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8", errors="replace")
        line = good.count("\n") + 1
        col = len(good) - (good.rfind("\n") + 1) + 1
        bad = data[exc.start : exc.start + 1].hex().upper()
        raise TopologyError(
            f"{path}:{line}:{col}: the topology is not UTF-8 text: byte 0x{bad} at byte offset "
            f"{exc.start}; save the file as UTF-8"
        ) from None


def _program_hint(path: Path, text: str) -> str:
    """Why a file is not a topology, when it looks like a program instead."""
    if path.suffix == ".es" or _PROGRAM_LINE.search(text):
        return (
            f"{path}: this looks like an EventScript program, not a topology; check it with "
            f"'eventscript check {path}' and run it with 'eventscript test --trace TRACE {path}'"
        )
    return ""


def read_topology_file(path: str | Path) -> tuple[Any, YamlPositions]:
    """The parsed YAML document of a topology file and the positions of its nodes; TopologyError for
    anything that keeps it from being one (unreadable, too large, binary, too deep, an alias bomb, bad YAML)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise TopologyError(f"{p}: cannot read the topology: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise TopologyError(
            f"{p}: the file is larger than {MAX_BYTES >> 20} MiB, far more than any topology; "
            f"check that this is the topology file"
        )
    text = _decode(p, data)
    loader = _LimitedLoader(text)
    try:
        root = loader.get_single_node()
        if root is not None:
            if _expanded_size(root) > MAX_NODES:
                raise _Refused(
                    root.start_mark,
                    f"the document's aliases (*name) expand to more than {MAX_NODES:,} "
                    f"values; a topology needs far fewer: write the values out or use "
                    f"fewer nested aliases",
                )
            _refuse_duplicate_keys(root)
            document = loader.construct_document(root)
        else:
            document = None
    except _Refused as exc:
        raise TopologyError(f"{_where(p, exc.mark)}: {exc.message}") from None
    except yaml.YAMLError as exc:
        hint = _program_hint(p, text)
        if hint:
            raise TopologyError(hint) from None
        mark = getattr(exc, "problem_mark", None)
        if isinstance(exc, yaml.reader.ReaderError):
            raise TopologyError(
                f"{p}: not valid YAML: character {exc.character!r} at character offset "
                f"{exc.position} cannot appear in a YAML file"
            ) from None
        problem = str(getattr(exc, "problem", None) or exc)
        raise TopologyError(f"{_where(p, mark)}: not valid YAML: {problem}{_yaml_hint(problem)}") from None
    finally:
        loader.dispose()
    if not isinstance(document, dict):
        hint = _program_hint(p, text)
        if hint:
            raise TopologyError(hint)
    return document, YamlPositions(p, root)


#: PyYAML's words for a line indented out of step with its neighbours (a newcomer's first YAML
#: mistake), which say nothing of indentation themselves.
_INDENTATION_PROBLEMS = ("expected <block end>", "bad indentation", "did not find expected key")


def _yaml_hint(problem: str) -> str:
    """What to do about a YAML problem whose words do not say it, or nothing."""
    if "'\\t'" in problem:
        return "; it is a tab: YAML indents with spaces only, so replace the tab with spaces"
    if any(words in problem for words in _INDENTATION_PROBLEMS):
        return (
            "; check the indentation of this line and the one above it: YAML nests by indentation, and "
            "every key of one mapping starts in the same column (spaces only, no tabs)"
        )
    return ""
