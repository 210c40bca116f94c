"""Timed event traces (language document §6.5; format in the conformance README).

A trace is a sequence of timestamps ``[2026-01-01 09:00:00]`` (the date may be left out to keep
the previous one; milliseconds may follow a dot or a colon; ``[2026-01-01T09:00:00Z]``, the form
outputs print, is read too) and events ``Name(value)``, several
per line allowed, ``//`` comments. Values are EventScript literals: numbers, strings, booleans,
structure builders ``{f: v}``, arrays ``[v, ...]``, or several positional arguments for a
structure type. Values stay untyped here; the runner converts them to the declared types.

Whatever a trace file holds, reading it either succeeds or raises :class:`TraceError` with a
position (rendered as a program's diagnostics are): timestamps are checked with the clock's own
rule (``check_clock_time``), values may nest at most as deeply as program constructs, strings
may not hold lone UTF-16 surrogates (no output encoding could carry them), and a file that is
not UTF-8 names the bad byte.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..engine.encoding import DecodeError, lone_surrogate_at
from ..engine.timeutil import check_clock_time, check_components, from_datetime
from ..language.diagnostics import Diagnostic, Diagnostics, Severity
from ..language.lexer import BARE_POINT, Lexer, Token, touching
from ..language.parser import MAX_NESTING
from ..language.source import Pos, SourceFile
from ..language.types import BOOLEAN, DOUBLE, LONG, OBJECT, STRING, TIME, ArrayType, StructType


class TraceError(Exception):
    """A mistake in a trace, at ``pos``. It reads as a program's diagnostic does (``str``): the
    ``file:line:col: error: message`` line, the trace's line with a caret, and the hint if any."""

    def __init__(self, pos: Pos, message: str, hint: str | None = None) -> None:
        super().__init__(f"{pos}: error: {message}")
        self.pos = pos
        self.message = message
        self.hint = hint

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(Severity.ERROR, self.pos, self.message, self.hint)

    def __str__(self) -> str:
        return self.diagnostic().render()


@dataclass(slots=True)
class Timestamp:
    time: int  # microseconds since the epoch
    pos: Pos


#: Where a value sits inside an event's arguments: the argument's index, then a structure's
#: field names and arrays' indices as written (``(0, "readings", 2)``).
ValuePath = tuple[int | str, ...]
#: The last step of the path of a field's *name* (``(0, "speed", FIELD_NAME)``), beside its value's.
FIELD_NAME = "\x00name"


@dataclass(slots=True)
class TraceEvent:
    name: str
    args: list[Any]  # parsed literal arguments (0, 1 or several)
    pos: Pos
    #: Whether the event was read from a trace file's text at ``pos``, where :func:`event_places`
    #: can read the places of its values again (not from JSON lines, nor made by a program).
    written: bool = field(default=False, compare=False, repr=False)
    #: Where each value inside ``args`` was written, once :func:`event_places` has read them: a
    #: trace of many events keeps none (a dictionary and a position per value made up most of the
    #: memory a read trace held), and a value of the wrong type is rare.
    places: dict[ValuePath, Pos] | None = field(default=None, compare=False, repr=False)


TraceItem = Timestamp | TraceEvent


class _Positional(list):
    """Several arguments: a structure written positionally."""


#: The hour of an ISO-8601 time after its date, as the lexer reads it: ``T09`` in ``2026-01-01T09:00``.
_ISO_HOUR = re.compile(r"T[0-9]+")
#: The forms a timestamp may take (the hint of a timestamp that is none of them).
TIMESTAMP_HINT = (
    "write [2026-01-01 09:30:00] (or [2026-01-01T09:30:00Z], as outputs print it; times are UTC), "
    "a later time of the same date as [09:30:05.250]"
)

#: Seconds written with a fraction: digits, a dot, digits (not ``1e3``, which the lexer also
#: reads as a number).
_SECONDS_WITH_FRACTION = re.compile(r"[0-9]+\.[0-9]+")


class TraceParser:
    """Reads the tokens as they come (a list or the lexer's :meth:`~Lexer.tokens`), looking at
    most one token ahead, so that the tokens of a big trace are not all alive at once."""

    def __init__(self, tokens: Iterable[Token], *, record_places: bool = False) -> None:
        self._rest = iter(tokens)
        self._next = self._rest.__next__
        self.tok: Token = self._next()
        self._after: Token | None = None  # the token after ``tok``, once asked for
        self.date: tuple[int, int, int] | None = None
        self.depth = 0
        #: The current event's value places (``TraceEvent.places``), when recorded.
        self.places: dict[ValuePath, Pos] | None = {} if record_places else None

    def advance(self) -> Token:
        t = self.tok
        if t.kind != "EOF":
            after = self._after
            if after is None:
                self.tok = self._next()
            else:
                self.tok, self._after = after, None
        return t

    def following(self) -> Token | None:
        """The token after the current one (None after the end)."""
        if self.tok.kind == "EOF":
            return None
        if self._after is None:
            self._after = self._next()
        return self._after

    def read_to_end(self) -> None:
        """Read the rest of the tokens (so that the lexer has seen the whole text)."""
        for _ in self._rest:
            pass

    def expect(self, kind: str, what: str, hint: str | None = None) -> Token:
        t = self.tok
        if t.kind != kind:
            raise TraceError(t.pos, f"expected {what}, found {t.text or 'the end of the trace'!r}", hint)
        return self.advance()

    def parse(self) -> list[TraceItem]:
        items: list[TraceItem] = []
        while self.tok.kind != "EOF":
            if self.tok.kind == "[":
                items.append(self.timestamp())
            elif self.tok.kind == "IDENT":
                items.append(self.event())
            else:
                raise TraceError(
                    self.tok.pos,
                    f"expected a [timestamp] or an event Name(value), found {self.tok.text!r}",
                    self._item_hint(),
                )
        return items

    def _item_hint(self) -> str | None:
        """What a newcomer most likely meant by a token that starts no item: a separator between
        events (as in a program), or a date without its brackets."""
        t = self.tok
        if t.kind in (";", ","):
            return (
                f"nothing separates events: remove the '{t.text}' and write them side by side or one a line, "
                "e.g. A(1) B(2)"
            )
        if t.kind == "INT":
            return "a timestamp is written in square brackets: [2026-01-01 09:30:00], or [09:30:05] later that day"
        return None

    def _int(self, what: str) -> int:
        """A number of a timestamp."""
        return self.expect("INT", what, TIMESTAMP_HINT).int_value()

    def _hour_after_date(self) -> int:
        """The hour after a date: ``09`` in ``[2026-01-01 09:00]``, or in the ISO-8601 form the
        output prints, ``[2026-01-01T09:00:00Z]``, where the lexer reads ``T09`` as one name."""
        t = self.tok
        if t.kind == "IDENT" and _ISO_HOUR.fullmatch(t.text):
            self.advance()
            return int(t.text[1:])
        return self._int("an hour")

    def timestamp(self) -> Timestamp:
        open_ = self.advance()
        first = self._int("a date or a time")
        if self.tok.kind == "-":
            self.advance()
            month = self._int("a month")
            self.expect("-", "'-'", TIMESTAMP_HINT)
            day = self._int("a day")
            self.date = (first, month, day)
            if self.tok.kind == "]":
                self.advance()
                return Timestamp(self._make(open_.pos, 0, 0, 0, 0), open_.pos)
            hour = self._hour_after_date()
        else:
            hour = first
        if self.date is None:
            raise TraceError(open_.pos, "the first timestamp needs a date, e.g. [2026-01-01 09:00:00]")
        self.expect(":", "':'", TIMESTAMP_HINT)
        minute = self._int("minutes")
        second, micro = 0, 0
        if self.tok.kind == ":":
            self.advance()
            t = self.tok
            if t.kind == "FLOAT":
                if not _SECONDS_WITH_FRACTION.fullmatch(t.text):
                    raise TraceError(
                        t.pos,
                        f"seconds must be digits with an optional fraction after a dot, "
                        f"e.g. 05 or 05.250, not {t.text!r}",
                    )
                self.advance()
                whole, _, frac = t.text.partition(".")
                second, micro = int(whole), int(frac[:6].ljust(6, "0"))
            else:
                second = self._int("seconds")
                if self.tok.kind == ":":  # milliseconds after a colon, as in the document
                    self.advance()
                    ms = self.expect("INT", "milliseconds")
                    if ms.int_value() > 999:
                        raise TraceError(ms.pos, "milliseconds after a colon must be 0 to 999")
                    micro = ms.int_value() * 1000
        if self.tok.kind == "IDENT" and self.tok.text == "Z":  # ISO-8601's UTC, as the output writes it
            self.advance()
        self.expect("]", "']'", TIMESTAMP_HINT)
        return Timestamp(self._make(open_.pos, hour, minute, second, micro), open_.pos)

    def _make(self, pos: Pos, hour: int, minute: int, second: int, micro: int) -> int:
        assert self.date is not None
        try:
            check_components((*self.date, hour, minute, second))  # before datetime: 10**20 overflows it
            dt = datetime(*self.date, hour, minute, second, micro, tzinfo=UTC)
            return check_clock_time(from_datetime(dt))
        except (ValueError, OverflowError) as exc:
            raise TraceError(
                pos, f"invalid timestamp: {exc}; write a date of years 1 to 9999 and a time of day like 09:30:00"
            ) from None

    def event(self) -> TraceEvent:
        name = self.advance()
        self.expect(
            "(",
            f"'(' after the event name {name.text}",
            f"every event has parentheses: {name.text}() for a pure signal, {name.text}(value) otherwise",
        )
        args: list[Any] = []
        if self.places is not None:
            self.places = {}
        if self.tok.kind != ")":
            args.append(self.value((0,)))
            while self.tok.kind == ",":
                self.advance()
                args.append(self.value((len(args),)))
        self.expect(")", "')'")
        return TraceEvent(name.text, args, name.pos, written=True)

    def value(self, at: ValuePath) -> Any:
        """One literal; arrays and structure builders may nest MAX_NESTING levels, as in programs
        (deeper input would exhaust Python's stack here and in every stage after the reader)."""
        t = self.tok
        if self.places is not None:
            self.places[at] = t.pos
        if t.kind in ("[", "{"):
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise TraceError(
                    t.pos,
                    f"the value nests too deeply: at most {MAX_NESTING} levels of arrays and structures are allowed",
                )
            try:
                return self._value(at)
            finally:
                self.depth -= 1
        return self._value(at)

    @staticmethod
    def _finite(t: Token) -> Any:
        """A number token's value; a decimal beyond a double's range (``1e400``) is refused, where
        it would silently become Infinity."""
        if t.kind == "FLOAT" and not math.isfinite(t.value):  # type: ignore[arg-type]
            raise TraceError(t.pos, f"{t.text} is beyond the range of a double (at most about 1.8e308)")
        return t.value

    def _string(self, t: Token) -> str:
        """The lexer has refused lone surrogates and joined pairs; this is the reader's guard
        should a string token ever carry one (no output could)."""
        text = str(t.value)
        at = lone_surrogate_at(text)
        if at is not None:
            raise TraceError(t.pos, f"lone surrogate \\u{ord(text[at]):04X} in a string: it is not a character")
        return text

    def _refuse_bare_point(self, number: Token | None = None) -> None:
        """A number written with a bare point, as the program's parser says it: ``.5`` (at the
        current token) or ``1.`` (``number``, just read, and the current token). Only a current
        token ``.`` can be one: callers ask only then (a call for each value cost a tenth of the
        parse)."""
        t = self.tok
        if number is not None:
            if number.kind == "INT" and t.kind == "." and touching(number, t):
                raise TraceError(number.pos, BARE_POINT, f"write {number.text}.0")
        elif t.kind == ".":
            after = self.following()
            if after is not None and after.kind == "INT" and touching(t, after):
                raise TraceError(t.pos, BARE_POINT, f"write 0.{after.text}")

    def _value(self, at: ValuePath) -> Any:
        t = self.tok
        if t.kind == ".":
            self._refuse_bare_point()
        if t.kind == "-":
            self.advance()
            n = self.tok
            if n.kind == ".":
                self._refuse_bare_point()
            if n.kind in ("INT", "FLOAT"):
                self.advance()
                if self.tok.kind == ".":
                    self._refuse_bare_point(n)
                return -self._finite(n)
            raise TraceError(n.pos, "expected a number after '-'")
        if t.kind == "STRING":
            self.advance()
            return self._string(t)
        if t.kind in ("INT", "FLOAT"):
            self.advance()
            if self.tok.kind == ".":
                self._refuse_bare_point(t)
            return self._finite(t)
        if t.kind in ("true", "false"):
            self.advance()
            return t.kind == "true"
        if t.kind == "{":
            self.advance()
            obj: dict[str, Any] = {}
            if self.tok.kind != "}":
                while True:
                    key = self.tok
                    if key.kind not in ("IDENT", "STRING") and key.kind.isalpha() is False:
                        raise TraceError(key.pos, "expected a field name")
                    self.advance()
                    self.expect(":", "':' after the field name")
                    # (one string for a name however many events write it)
                    name = sys.intern(self._string(key) if key.kind == "STRING" else key.text)
                    if self.places is not None:
                        self.places[(*at, name, FIELD_NAME)] = key.pos
                    obj[name] = self.value((*at, name))
                    if self.tok.kind != ",":
                        break
                    self.advance()
            self.expect("}", "'}'")
            return obj
        if t.kind == "[":
            self.advance()
            items: list[Any] = []
            if self.tok.kind != "]":
                items.append(self.value((*at, 0)))
                while self.tok.kind == ",":
                    self.advance()
                    items.append(self.value((*at, len(items))))
            self.expect("]", "']'")
            return items
        if t.kind == "IDENT":  # a newcomer's S(front): text is quoted, in traces as in programs
            raise TraceError(t.pos, f"expected a value, found {t.text!r}", self._name_hint(t))
        raise TraceError(t.pos, f"expected a value, found {t.text or 'the end of the trace'!r}")

    def _name_hint(self, name: Token) -> str:
        """A bare name where a value stands: a field name outside braces (``S(door: "a")``, a
        structure's fields are in a builder) or text without its quotes (``S(front)``)."""
        following = self.following()
        if following is not None and following.kind == ":":
            return (
                f"a structure's fields are written in braces: {{{name.text}: ...}}, "
                "or its values in declared order without names"
            )
        return f'text is written in double quotes: "{name.text}"'


def parse_trace(source: SourceFile) -> list[TraceItem]:
    """The items of a trace. The parser reads the tokens as the lexer makes them; a mistake the
    lexer finds anywhere in the text is the one reported, before any the parser finds."""
    d = Diagnostics()
    parser = TraceParser(Lexer(d, allow_include=False).tokens(source))
    try:
        items = parser.parse()
    except TraceError:
        parser.read_to_end()
        _raise_first_error(d)
        raise
    _raise_first_error(d)
    if items and not isinstance(items[0], Timestamp):
        raise TraceError(
            items[0].pos,
            "a trace must start with a [timestamp]",
            "begin with the time the run starts, e.g. [2026-01-01 09:00:00] on the first line",
        )
    _check_order(items)
    return items


def _raise_first_error(diagnostics: Diagnostics) -> None:
    if diagnostics.has_errors:
        first = diagnostics.errors[0]
        raise TraceError(first.pos, first.message, first.hint)


def event_places(event: TraceEvent) -> dict[ValuePath, Pos]:
    """Where each value inside ``event.args`` was written (see ``ValuePath``): read again from the
    trace's text at the event, the first time they are asked for, and kept with the event."""
    if event.places is None:
        event.places = {}
        if event.written:
            source = event.pos.source
            parser = TraceParser(
                Lexer(Diagnostics(), allow_include=False).tokens(source, event.pos.offset), record_places=True
            )
            parser.event()
            event.places = parser.places or {}
    return event.places


#: JSON lines out of time order are most often ``eventscript tail`` of a topic of several
#: partitions, which prints one partition after the other: what to do about it.
TAIL_ORDER_HINT = (
    "'eventscript tail' prints a topic of several partitions one partition after the other: "
    "sort its lines by time first, e.g. jq -c -s 'sort_by(.time)[]' FILE"
)


def _check_order(items: list[TraceItem], hint: str | None = None) -> None:
    """Timestamps never go backwards (the clock's rule, ``check_clock_time``): checked here, where
    every command reads traces (``test``, ``dev``, ``produce``), so that they all accept the same
    files and a bad one is refused before anything runs. ``hint`` is the error's hint."""
    last: Timestamp | None = None
    for item in items:
        if isinstance(item, Timestamp):
            if last is not None:
                try:
                    check_clock_time(item.time, last.time)
                except ValueError as exc:
                    raise TraceError(
                        item.pos,
                        f"{exc}; a timestamp may not be earlier than the one before it (line {last.pos.line})",
                        hint,
                    ) from None
            last = item


def read_trace(path: str | Path) -> list[TraceItem]:
    """Read and parse a trace file, in the trace format or as JSON lines (see :func:`is_json_lines`);
    OSError if it cannot be read, TraceError for anything in it."""
    try:
        source = SourceFile.read(path)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    return parse_json_lines(source) if is_json_lines(source) else parse_trace(source)


def is_json_lines(source: SourceFile) -> bool:
    """Whether a trace file is JSON lines, as ``eventscript tail`` prints records: its first
    character that is not white space is ``{`` (a trace starts with ``[`` or a comment)."""
    return source.text.lstrip().startswith("{")


def parse_json_lines(source: SourceFile) -> list[TraceItem]:
    """Captured traffic as a trace: one JSON object per line with ``time`` (ISO-8601) and ``event``
    (its name) and ``value`` (other fields, such as ``key`` or ``topic``, are ignored). A line's
    time becomes a timestamp when it differs from the line before; times may not go backwards
    (``tail`` prints each partition in turn: sort several partitions' lines by time first)."""
    import orjson

    from ..engine.timeutil import TimeRangeError, parse_time

    items: list[TraceItem] = []
    last_time: int | None = None
    offset = 0
    for line in source.text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if not line.strip():
            continue
        pos = source.pos(start + len(line) - len(line.lstrip()))
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise TraceError(
                pos,
                f"not a JSON object: {exc}; each line of a JSON-lines trace is one record as "
                f"'eventscript tail' prints it",
            ) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("time"), str) or not isinstance(obj.get("event"), str):
            raise TraceError(
                pos,
                'expected an object with "time" (ISO-8601 text), "event" (a name) and "value", '
                "as 'eventscript tail' prints records",
            )
        try:
            when = check_clock_time(parse_time(obj["time"]))
        except (ValueError, TimeRangeError) as exc:
            raise TraceError(pos, f"invalid time {obj['time']!r}: {exc}") from None
        if _nesting(obj.get("value")) > MAX_NESTING:
            raise TraceError(
                pos, f"the value nests too deeply: at most {MAX_NESTING} levels of arrays and structures are allowed"
            )
        if when != last_time:
            items.append(Timestamp(when, pos))
            last_time = when
        items.append(TraceEvent(obj["event"], [] if "value" not in obj else [obj["value"]], pos))
    _check_order(items, TAIL_ORDER_HINT)
    return items


def _nesting(value: Any) -> int:
    """How deeply arrays and objects nest in a JSON value (without recursion: the value may be
    as deep as orjson allows, deeper than Python's stack)."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, (list, dict)):
            depth += 1
            deepest = max(deepest, depth)
            todo.extend((child, depth) for child in (v.values() if isinstance(v, dict) else v))
    return deepest


def _not_utf8(path: str | Path, exc: UnicodeDecodeError) -> TraceError:
    """Where the first byte that is not UTF-8 is, as a position and a byte offset."""
    data = exc.object if isinstance(exc.object, bytes) else Path(path).read_bytes()
    good = data[: exc.start].decode("utf-8", errors="replace")
    source = SourceFile(name=str(path), text=good, path=Path(path))
    bad = data[exc.start : exc.start + 1].hex().upper()
    return TraceError(
        source.pos(len(good)),
        f"the trace is not UTF-8 text: byte 0x{bad} at byte offset {exc.start} ({exc.reason}); save the file as UTF-8",
    )


class TraceValueError(DecodeError):
    """A trace value that does not conform to its declared type (the runner's ``$error`` 6), with
    where it sits in the event's value as written (``at``: see ``ValuePath``)."""

    def __init__(self, path: str, message: str, at: ValuePath) -> None:
        super().__init__(path, message)
        self.at = at


def typed_argument(raw: Any, ty: Any) -> Any:
    """A trace value shaped for its declared type, and checked against it with the trace format's
    strict rule (conformance README, "The trace format"): a structure with one field may be written
    positionally, ``A("b")`` for ``{string k;} A`` (a mapping of its field names is taken as is).

    :class:`TraceValueError` (the runner's ``$error`` 6) for a value that does not conform; see
    :func:`check_trace_value`."""
    one_field = isinstance(ty, StructType) and len(ty.fields) == 1
    # A mapping for a one-field structure is a builder unless that field could itself hold a
    # mapping (a structure or an object): then only a mapping of exactly its field name is.
    holds_mapping = one_field and (isinstance(ty.fields[0][1], StructType) or ty.fields[0][1] == OBJECT)
    as_written = isinstance(raw, list) or (
        isinstance(raw, dict) and one_field and (set(raw) == set(ty.names) or not holds_mapping)
    )
    if one_field and not as_written:  # (the value as written is the field's)
        field_name, field_type = ty.fields[0]
        check_trace_value(raw, field_type, field_name)
        return [raw]
    check_trace_value(raw, ty)
    return raw


def check_trace_value(obj: Any, ty: Any, path: str = "", at: ValuePath = ()) -> None:
    """Raise :class:`TraceValueError` unless ``obj`` conforms to ``ty`` as a trace writes it.

    Traces are written by people, so they are read strictly, more so than Kafka records (whose
    producers add fields over time; ``engine.encoding.decode`` converts what it can): an integer
    is promoted where a ``double`` is declared and nothing else is converted — no ``3.0`` for a
    ``long``, a ``time`` only as ISO-8601 text, no field a structure does not declare. A double
    may also be ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``, as the output writes them (no
    literal can: a trace or a captured output must be able to carry them). ``path`` names the
    value in the declared type's terms (``readings[2].v``), ``at`` where it was written.
    """

    def fail(expected: str) -> None:
        raise TraceValueError(path, f"expected {expected}, got {_written(obj)}", at)

    if ty == LONG:
        if type(obj) is not int:
            fail("a long (an integer such as 3)")
    elif ty == DOUBLE:
        if type(obj) not in (int, float) and obj not in _NON_FINITE:
            fail('a double (a number such as 1.5, or "NaN", "Infinity", "-Infinity")')
    elif ty == BOOLEAN:
        if type(obj) is not bool:
            fail("a boolean (true or false)")
    elif ty == STRING:
        if type(obj) is not str:
            fail("a string in double quotes")
    elif ty == TIME:
        if type(obj) is not str:
            fail('a time as ISO-8601 text, e.g. "2026-01-01T09:00:00Z"')
    elif isinstance(ty, ArrayType):
        if type(obj) is not list:
            fail(f"an array {ty}")
        for i, v in enumerate(obj):
            check_trace_value(v, ty.element, f"{path}[{i}]", (*at, i))
    elif isinstance(ty, StructType):
        if type(obj) is dict:
            extra = [k for k in obj if k not in ty.names]
            if extra:
                raise TraceValueError(
                    path,
                    f"unknown field {extra[0]!r}: the structure {ty} has {', '.join(ty.names) or 'no fields'}",
                    (*at, extra[0], FIELD_NAME),
                )
            for name, ft in ty.fields:
                if name in obj:  # a missing field: decode says so
                    check_trace_value(obj[name], ft, f"{path}.{name}" if path else name, (*at, name))
        elif type(obj) is list and len(obj) == len(ty.fields):
            for i, (v, (name, ft)) in enumerate(zip(obj, ty.fields, strict=True)):
                check_trace_value(v, ft, f"{path}.{name}" if path else name, (*at, i))
        else:
            fail(f"a structure {ty}")


def value_place(event: TraceEvent, at: ValuePath) -> Pos:
    """Where the value at ``at`` of ``event_argument(event)`` was written, or the event's own
    place where that is not known (a JSON-lines trace, a missing field)."""
    full = (0, *at) if len(event.args) == 1 else at
    return event_places(event).get(full, event.pos)


#: How the output writes the doubles no number literal can (conformance README, output format).
_NON_FINITE = ("NaN", "Infinity", "-Infinity")


def _written(obj: Any) -> str:
    """A trace value as it was written, for messages."""
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, str):
        return f"the string {obj[:60]!r}"
    if isinstance(obj, list):
        return "an array"
    if isinstance(obj, dict):
        return "a structure"
    return f"the number {obj!r}"


def event_argument(event: TraceEvent) -> Any:
    """The event's value as one untyped object: nothing → {}, one argument → itself,
    several → a positional structure."""
    if not event.args:
        return {}
    if len(event.args) == 1:
        return event.args[0]
    return list(event.args)
