"""Whether a program's input records already sit on the partition of the task that runs their
group key (``keeps_upstream_key``), so that its tasks need not re-publish each other's records.

A grouped program on record time with progress markers and several tasks re-publishes every
record it reads ahead through its repartition topic (``Task.forward_ahead``): a record of another
task's key goes there, and each task waits on the other tasks' progress on that topic before it
takes even its own records. Where no record can be another task's, all of that is work for
nothing: each record's event decoded and its key placed twice, a second merge, a round trip of
markers through the repartition topic, and the task's own records held meanwhile (measured by
``bench/worker_markers.py``). Kafka Streams re-partitions only after an operation that changes
the key; here the program text says it, for topics that other programs of the topology write:

- every program writing the topic is grouped, with the reader's group key types, and names its
  records' keys in the reader's key format (not ``none``), which the writers' producers place by
  murmur2 as the reader's routing does (``kafka/clients.py``: ``murmur2_random``);
- every event a writer emits to the topic is a structure built in place whose field the reader
  groups that event by holds the writer's ``group[i]``, for each key component ``i`` in order
  (or, for an event that is not a structure, the value ``group[0]`` itself), or the field ``f``
  of a marker variable that only markers set, each on events the writer groups by their field
  ``f`` as component ``i`` (``Reading(r) { !>Hit({k: r.k}); }`` under ``group(Reading.k)``: any
  event an instance holds has its key there), in a program that sets no structure's field (so
  that no alias changes what the variable holds): a record's key is then its writer's instance
  key, which is the reader's group key;
- the topic has as many partitions as the reader has tasks.

Then a record's partition is its key's task. Anything else (an external topic, a re-keying emit,
a writer's error topic, a different partition count) keeps the re-publishing. A worker proves
it from the topology's program texts; every worker of a program must agree, so a worker that
cannot compile a writer's source does not prove it, and says so (``kafka/supervisor.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields

from ..language import ir
from ..language.types import StructType, Type
from .config import InputConfig, ProgramConfig, Topology


def input_format(inp: InputConfig, types: list[Type] | None) -> str:
    """The key format of an input: as configured, else ``string`` for a one-component group key
    and ``json`` otherwise."""
    if inp.key is not None:
        return inp.key
    return "string" if types is not None and len(types) == 1 else "json"


def keeps_upstream_key(
    topo: Topology, cfg: ProgramConfig, programs: Mapping[str, ir.ProgramIR], partitions_of: Callable[[str], int]
) -> bool:
    """Whether every record program ``cfg`` reads is on the partition of the task that runs its
    group key, as the module docstring says; ``programs``: the compiled programs by name (a
    writer missing there proves nothing)."""
    down = programs.get(cfg.name)
    if down is None or down.key_types is None or not cfg.inputs:
        return False
    types = list(down.key_types)
    home = cfg.inputs[0]
    fmt = input_format(home, types)
    if fmt == "none" or home.partitioner != "murmur2":
        return False
    tasks = max(partitions_of(i.topic) for i in cfg.inputs)
    analysed: dict[str, _Writer] = {}  # (a writer of several inputs: its program read once)
    for inp in cfg.inputs:
        if partitions_of(inp.topic) != tasks or input_format(inp, types) != fmt:
            return False
        writers = [p for p in topo.programs if inp.topic in p.outputs.values() or inp.topic == p.error_topic]
        if not writers:
            return False  # (an external topic: its producers' keys are theirs)
        for w in writers:
            up = programs.get(w.name)
            if (
                up is None
                or inp.topic == w.error_topic
                or up.key_types != down.key_types
                or not w.inputs
                or input_format(w.inputs[0], list(up.key_types)) != fmt
            ):
                return False
            writer = analysed.get(w.name) or analysed.setdefault(w.name, _Writer(up))
            if not _emits_keep_key(writer, w, inp, down):
                return False
    return True


class _Writer:
    """What ``_holds_key`` needs of a writer's program, worked out once: for each variable that
    only markers set (a ``Store`` in a marker's unit, never a ``SetVar``), the inputs whose
    events its markers store; and whether any action sets a structure's field."""

    def __init__(self, program: ir.ProgramIR) -> None:
        self.program = program
        owner: dict[int, ir.Input] = {}  # symbol → the input it classifies
        for inp in program.inputs:
            for node in _nodes(inp.classify):
                if isinstance(node, ir.CaseSymbol):
                    owner[node.symbol] = inp
        stored_by = {m.store: m for m in program.markers if m.store is not None}
        set_vars: set[int] = set()
        self.sets_fields = False
        #: slot → the inputs its markers store (None: set otherwise too, or by a time marker)
        self.stores: dict[int, list[ir.Input] | None] = {}
        for unit in program.units:
            for node in _nodes(unit):
                if isinstance(node, ir.SetVar):
                    set_vars.add(node.slot)
                elif isinstance(node, (ir.SetField, ir.SetIndex)):
                    self.sets_fields = True
                elif isinstance(node, ir.Store):
                    marker = stored_by.get(unit.index)
                    inputs = [owner.get(sym) for sym in marker.symbols] if marker is not None else [None]
                    known = self.stores.get(node.slot, [])
                    self.stores[node.slot] = None if known is None or None in inputs else [*known, *inputs]
        for slot in set_vars:
            self.stores[slot] = None

    def carries_key(self, var: ir.Var, name: str, i: int) -> bool:
        """Whether field ``name`` of variable ``var`` always holds the writer's ``group[i]``."""
        inputs = self.stores.get(var.slot)
        if not inputs or self.sets_fields:
            return False
        for inp in inputs:
            group = inp.group
            if group is None or len(group) <= i:
                return False
            expr = group[i]
            if not (isinstance(expr, ir.Field) and isinstance(expr.obj, ir.EventVal) and expr.name == name):
                return False
        return True


def writes_own_partition(
    cfg: ProgramConfig, program: ir.ProgramIR | None, topic: str, partitions_of: Callable[[str], int]
) -> bool:
    """Whether task ``t`` of the writer ``cfg`` (compiled: ``program``; None proves nothing)
    writes its records on ``topic`` to partition ``t`` only, so that a reader's partition ``t``
    waits on that one writer task, not on all of them (``ProgressPlan.placed``).

    A grouped program's outputs carry its instance's key in its home key format
    (``Routing.out_key``), which its producer places by murmur2 (``kafka/clients.py``); its
    task ``t`` runs only the keys that its home partitioner places on ``t`` among its task count
    (the others are re-published to their task: ``Routing.place``). When that partitioner is
    murmur2 too and ``topic`` has as many partitions as the program has tasks, each output lands
    on its task's partition, whatever the event holds (no emit analysis needed: the record key is
    the instance's). Not the program's error topic (an ``$error`` about a record that reached no
    instance is keyed as that record: anywhere), nor a format without keys (keyless outputs are
    placed by their ids)."""
    if program is None or program.key_types is None or not cfg.inputs or topic == cfg.error_topic:
        return False
    home = cfg.inputs[0]
    if home.partitioner != "murmur2" or input_format(home, list(program.key_types)) == "none":
        return False
    tasks = max(partitions_of(i.topic) for i in cfg.inputs)
    return partitions_of(topic) == tasks


def _emits_keep_key(writer_program: _Writer, writer: ProgramConfig, inp: InputConfig, down: ir.ProgramIR) -> bool:
    """Whether every event the writer emits to ``inp``'s topic carries its group key where
    ``down`` reads its group key from that event."""
    up = writer_program.program
    by_name = {i.name: i for i in down.inputs}
    for emit in _emits(up):
        out = up.outputs[emit.output]
        if writer.output_topic(out.name) != inp.topic:
            continue
        read = by_name.get(inp.event if inp.event is not None else out.name)
        if read is None or read.group is None or len(read.group) != len(up.key_types or ()):
            return False
        for i, expr in enumerate(read.group):
            if not _holds_key(emit.value, expr, i, writer_program):
                return False
    return True


def _holds_key(value: ir.Node, read: ir.Node, i: int, writer: _Writer) -> bool:
    """Whether the group expression ``read`` of the reader, over an event built as ``value``,
    gives the writer's ``group[i]``."""
    if isinstance(read, ir.EventVal):
        return isinstance(value, ir.Key) and value.n == i
    if not (isinstance(read, ir.Field) and isinstance(read.obj, ir.EventVal) and isinstance(value, ir.Build)):
        return False
    built = value.ty
    if not isinstance(built, StructType):
        return False
    k = built.field_index(read.name)
    if k is None:
        return False
    held = value.values[k]
    if isinstance(held, ir.Key):
        return held.n == i
    return isinstance(held, ir.Field) and isinstance(held.obj, ir.Var) and writer.carries_key(held.obj, held.name, i)


def _emits(program: ir.ProgramIR) -> Iterator[ir.Emit]:
    """Every emit in the program's action units (in ``if`` and ``for`` bodies too)."""
    for unit in program.units:
        for node in _nodes(unit):
            if isinstance(node, ir.Emit):
                yield node


def _nodes(node: object) -> Iterator[ir.Node]:
    """``node`` and every node under it (a list: each item's)."""
    if isinstance(node, list):
        for item in node:
            yield from _nodes(item)
    elif isinstance(node, ir.Node):
        yield node
        for f in fields(node):
            child = getattr(node, f.name)
            if isinstance(child, (ir.Node, list)):
                yield from _nodes(child)
