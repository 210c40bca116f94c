"""The embedding API: compile a program, run it, feed events, move time.

    from eventscript import compile_program, Engine, SimulatedTimeProvider

    program = compile_program('''
        in double Reading
        out double Average
        { n = 0; sum = 0.0; }
        ( Reading(x) { n = n + 1; sum = sum + x; !>Average(sum / n); } )*
    ''')
    clock = SimulatedTimeProvider(start=0)
    engine = Engine(program, consumer=print, time=clock)
    engine.start()
    engine.feed_json("Reading", 3.5)      # JSON-shaped values are checked and converted
    clock.advance_to(60_000_000)          # microseconds; fires due timers

``Engine.feed(name, value)`` takes values already in run-time form (see engine.values) and is
the fast path; ``feed_json`` converts from JSON-shaped Python values and reports a value that
does not fit the declared type as ``$error`` 6.
"""

from __future__ import annotations

from pathlib import Path

from .automata.compile import DEFAULT_STATE_LIMIT, Compilation, compile_file, compile_source
from .automata.compiled import FORMAT as COMPILED_FORMAT
from .automata.compiled import CompiledProgram
from .engine.encoding import DecodeError, decode, encode
from .engine.engine import Engine, EngineError
from .engine.events import ERROR_EVENT, Emitted, ErrorCode
from .engine.time_provider import SimulatedTimeProvider, TimeProvider, WallClockTimeProvider
from .engine.timeutil import format_time, parse_time
from .language.diagnostics import CompileError, Diagnostic, Diagnostics


def compile_program(source: str, *, name: str = "program", state_limit: int = DEFAULT_STATE_LIMIT) -> CompiledProgram:
    """Compile program text; raises :class:`CompileError` (with all diagnostics) on errors."""
    return compile_source(source, name=name, state_limit=state_limit).require()


def looks_compiled(path: str | Path, text: str) -> bool:
    """Whether a program file is the JSON ``eventscript compile`` writes rather than source.

    By extension (``.json``) or by content (a JSON object with the compiled format's marker), so
    a compiled program renamed without its extension still loads. Source text never starts with
    ``{"format"``: an initial action block opens with a statement, not a string.
    """
    if Path(path).suffix.lower() == ".json":
        return True
    head = text.lstrip()[:64]
    return head.startswith("{") and f'"{COMPILED_FORMAT}"' in head


def load_program(path: str | Path, *, state_limit: int = DEFAULT_STATE_LIMIT) -> CompiledProgram:
    """A program from a source file or a compiled JSON file (see :func:`looks_compiled`)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if looks_compiled(p, text):
        return CompiledProgram.loads(text)
    return compile_file(p, state_limit=state_limit).require()


__all__ = [
    "ERROR_EVENT",
    "Compilation",
    "CompileError",
    "CompiledProgram",
    "DecodeError",
    "Diagnostic",
    "Diagnostics",
    "Emitted",
    "Engine",
    "EngineError",
    "ErrorCode",
    "SimulatedTimeProvider",
    "TimeProvider",
    "WallClockTimeProvider",
    "compile_file",
    "compile_program",
    "compile_source",
    "decode",
    "encode",
    "format_time",
    "load_program",
    "looks_compiled",
    "parse_time",
]
