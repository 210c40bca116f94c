"""Line and column of settings in a topology file, so wiring messages can say ``file:line:col``.

The pydantic model forgets where a value came from; the YAML composer keeps it. The topology is
composed a second time only for positions: a path such as ``programs[1].inputs[0].topic`` maps to
the position of that value (or of the closest enclosing node that exists).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[str | int, ...]


class YamlPositions:
    """Positions of the nodes of one YAML file, by path."""

    def __init__(self, file: Path, root: yaml.Node | None) -> None:
        self.file = file
        self.root = root

    @classmethod
    def read(cls, file: Path) -> YamlPositions:
        try:
            root = yaml.compose(file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            root = None
        return cls(file, root)

    def _child(self, node: yaml.Node, step: str | int) -> yaml.Node | None:
        if isinstance(step, int) and isinstance(node, yaml.SequenceNode):
            return node.value[step] if 0 <= step < len(node.value) else None
        if isinstance(step, str) and isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == step:
                    return v
        return None

    def _found(self, path: Path_) -> Any:
        """The node at ``path``, or its nearest existing ancestor (None: no document)."""
        node: Any = self.root
        found = node
        for step in path:
            if node is None:
                break
            node = self._child(node, step)
            if node is not None:
                found = node
        return found

    def _key(self, path: Path_) -> yaml.Node | None:
        """The key node of the setting at ``path`` (None unless its parent is a mapping holding it)."""
        node: Any = self.root
        for step in path[:-1]:
            node = None if node is None else self._child(node, step)
        if not path or not isinstance(node, yaml.MappingNode):
            return None
        return next((k for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.value == path[-1]), None)

    def where(self, *path: str | int, key: bool = False) -> str:
        """``file:line:col`` of the value at ``path`` (or of its nearest existing ancestor); with
        ``key``, of the setting's name, which is what an unknown setting's message points at."""
        found = (self._key(path) if key else None) or self._found(path)
        if found is None:
            return str(self.file)
        mark = found.start_mark
        return f"{self.file}:{mark.line + 1}:{mark.column + 1}"

    def where_in(self, path: Path_, offset: int) -> str:
        """``file:line:col`` of character ``offset`` of the string at ``path``: exact in a plain
        scalar on one line (the file holds it character for character); elsewhere (quoted,
        folded, on several lines, or no such node) where ``where`` places the string."""
        node: Any = self.root
        for step in path:
            node = None if node is None else self._child(node, step)
        plain = (
            isinstance(node, yaml.ScalarNode)
            and node.style is None
            and node.start_mark.line == node.end_mark.line
            and 0 <= offset < len(node.value)
        )
        if not plain:
            return self.where(*path)
        mark = node.start_mark
        return f"{self.file}:{mark.line + 1}:{mark.column + offset + 1}"
