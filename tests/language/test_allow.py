"""Warning codes, and ``// eventscript: allow CODE`` comments that accept a warning where it is
meant (language/allow.py): the shipped topologies' programs draw warnings that are right for them,
and ``topology check --strict`` failed on them with no way to say so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eventscript.automata.compile import compile_source
from eventscript.cli.main import main as cli_main
from eventscript.language.allow import WARNING_CODES, allows_in
from eventscript.language.source import SourceFile

DOCS = Path(__file__).resolve().parents[2] / "docs" / "language.md"

#: A grouped program that never ends an instance (warned at 3:3, the first marker).
FOREVER = "in long A group(A)\nout long L\n( A(x) { !>L(x); } )*\n"
#: One program per warning code the compiler gives, with the line the warning points at.
WARNED: dict[str, tuple[str, int]] = {
    "never-emitted": ("in long A\nout long L, long M\n( A(x) { !>L(x); } )*\n", 2),
    "never-read": ("in long A\nout long L\n( A(x) { y = x; !>L(x); } )*\n", 3),
    "never-set": ("in long A\nout long L\n( A() { !>L(y + 1); } )*\n", 3),
    "maybe-unset": ("in long A, long B\nout long L\n( A() { !>L(c); } | B() { c = 1; } )*\n", 3),
    "ambiguous": ("in {} A, {} B\nout long L\n( A() { !>L(1); } B() | A() { !>L(2); } A() )*\n", 3),
    "same-instant": ("in {} A\nout long L\n( A() ( elapse[1 sec]() { !>L(1); } | elapse[1 sec]() ) )*\n", 3),
    "never-ends": (FOREVER, 3),
    "matches-nothing": ("in {} A, {} B\nout long L\nA() & B()\n", 3),
    "hours-minutes": ("in {} A\nout long L\n( A() | arrive[.:00]() { !>L(1); } )*\n", 3),
    "out-of-range": ("in {} A\nout long L\n( A() | arrive[(24):00]() { !>L(1); } )*\n", 3),
}


def _codes(text: str) -> list[str]:
    comp = compile_source(text, name="p")
    assert comp.ok, [str(d) for d in comp.diagnostics.errors]
    return [d.code for d in comp.diagnostics.warnings]


def _allowed(text: str, line: int, comment: str) -> str:
    """``text`` with ``comment`` at the end of line ``line``."""
    lines = text.split("\n")
    lines[line - 1] += " " + comment
    return "\n".join(lines)


@pytest.mark.parametrize("code", sorted(WARNED))
def test_every_compiler_warning_has_its_code_and_an_allow_on_its_line_accepts_it(code: str) -> None:
    text, line = WARNED[code]
    assert code in _codes(text)
    assert code not in _codes(_allowed(text, line, f"// eventscript: allow {code}"))


def test_the_codes_are_the_ones_the_docs_list() -> None:
    """docs/language.md's table of warnings names each code, and the compiler gives no other."""
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", DOCS.read_text(encoding="utf-8"), re.M))
    assert set(WARNING_CODES) <= documented
    assert set(WARNED) | {"unknown-allow", "unused-allow"} == set(WARNING_CODES)


def test_check_prints_the_code_and_counts_the_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warned, allowed = tmp_path / "warned.es", tmp_path / "allowed.es"
    warned.write_text(FOREVER, encoding="utf-8")
    allowed.write_text(_allowed(FOREVER, 3, "// a fixed set of keys: eventscript: allow never-ends"), encoding="utf-8")
    assert cli_main(["check", str(warned), str(allowed)]) == 0
    out = capsys.readouterr().out
    assert re.search(
        rf"^{re.escape(str(warned))}:3:3: warning: this grouped program never ends .*\[never-ends\]$", out, re.M
    )
    assert f"{warned}: ok, 1 warning\n" in out
    assert f"{allowed}: ok, 1 warning accepted\n" in out and f"{allowed}:3" not in out


def test_an_allow_alone_on_the_line_before_accepts_the_next_line_s_warnings() -> None:
    """The line before, past other comment lines (a reason on its own line above the allow)."""
    lines = FOREVER.split("\n")
    before = "\n".join([*lines[:2], "// keys are few:", "// eventscript: allow never-ends", *lines[2:]])
    assert _codes(before) == []
    blank_between = "\n".join([*lines[:2], "// eventscript: allow never-ends", "", *lines[2:]])
    assert sorted(_codes(blank_between)) == ["never-ends", "unused-allow"]


def test_an_allow_of_another_code_does_not_hide_the_warning() -> None:
    text = _allowed(FOREVER, 3, "// eventscript: allow ambiguous")
    assert sorted(_codes(text)) == ["never-ends", "unused-allow"]


def test_an_allow_on_another_line_does_not_hide_the_warning() -> None:
    text = _allowed(FOREVER, 2, "// eventscript: allow never-ends")
    assert sorted(_codes(text)) == ["never-ends", "unused-allow"]


def test_an_unknown_code_is_warned_with_the_close_one_and_the_known_ones() -> None:
    comp = compile_source(_allowed(FOREVER, 3, "// eventscript: allow never-end"), name="p")
    unknown, kept = sorted(comp.diagnostics.warnings, key=lambda d: d.code != "unknown-allow")
    assert (unknown.code, kept.code) == ("unknown-allow", "never-ends")
    assert (unknown.pos.line, unknown.pos.col) == (3, 45)  # at the code in the comment
    assert "'never-end' is not a warning's code" in unknown.message
    assert unknown.hint is not None and unknown.hint.startswith("did you mean 'never-ends'? Otherwise, write one of")
    assert all(code in unknown.hint for code in WARNING_CODES)


def test_an_allow_naming_no_code_is_warned() -> None:
    (d,) = compile_source(
        _allowed("in long A\nout long L\n( A(x) { !>L(x); } )*\n", 3, "// eventscript: allow"), name="p"
    ).diagnostics.warnings
    assert d.code == "unknown-allow" and "names no warning code" in d.message


def test_unused_allows_are_not_told_when_the_program_has_errors() -> None:
    """The analyses that would have warned did not run: the allow may well be needed."""
    text = _allowed(FOREVER.replace("!>L(x)", "!>L(q(x))"), 3, "// eventscript: allow never-ends")
    comp = compile_source(text, name="p")
    assert comp.diagnostics.has_errors and comp.diagnostics.warnings == []


def test_comments_that_only_mention_eventscript_are_comments() -> None:
    source = SourceFile("p.es", "// eventscript: a note\n// allow never-ends\nin long A // eventscript: allowed\n")
    assert allows_in(source) == []


def test_test_w_leaves_out_the_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program, trace = tmp_path / "p.es", tmp_path / "t.trace"
    trace.write_text("[2026-01-01 00:00:00]\nA(1)\n", encoding="utf-8")
    program.write_text(FOREVER, encoding="utf-8")
    assert cli_main(["test", "-W", "--trace", str(trace), str(program)]) == 0
    assert "[never-ends]" in capsys.readouterr().err
    program.write_text(_allowed(FOREVER, 3, "// eventscript: allow never-ends"), encoding="utf-8")
    assert cli_main(["test", "-W", "--trace", str(trace), str(program)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_allow_written_in_a_string_literal_is_text_not_a_comment() -> None:
    """Only what the lexer reads as a comment can accept a warning: an emitted message that
    quotes an allow comment accepts nothing."""
    text = FOREVER.replace("out long L", "out long L, string S").replace(
        "!>L(x);", '!>L(x); !>S("// eventscript: allow never-ends");'
    )
    assert _codes(text) == ["never-ends"]
    assert allows_in(SourceFile("p.es", text)) == []


def test_allows_in_an_included_file_work_there_and_are_warned_of_at_their_own_place(tmp_path: Path) -> None:
    """An included file's allows accept its warnings, and one naming an unknown code (or
    accepting nothing) is warned of at the included file's file:line:col, even when no other
    warning points into that file."""
    (tmp_path / "decls.es").write_text(
        "in long A group(A) // eventscript: allow never-endz\nout long L // eventscript: allow ambiguous\n",
        encoding="utf-8",
    )
    (tmp_path / "body.es").write_text("( A(x) { !>L(x); } )* // eventscript: allow never-ends\n", encoding="utf-8")
    (tmp_path / "p.es").write_text('#include "decls.es"\n#include "body.es"\n', encoding="utf-8")
    comp = compile_source(SourceFile.read(tmp_path / "p.es"))
    assert comp.accepted == 1
    found = sorted((d.code, str(d.pos)) for d in comp.diagnostics.warnings)
    assert found == [
        ("unknown-allow", f"{tmp_path / 'decls.es'}:1:42"),
        ("unused-allow", f"{tmp_path / 'decls.es'}:2:34"),
    ]


def test_the_never_ends_hint_gives_the_allow_comment_that_accepts_it() -> None:
    comp = compile_source(FOREVER, name="p")
    (w,) = comp.diagnostics.warnings
    assert w.hint is not None
    comment = w.hint[w.hint.index("// eventscript:") :].removesuffix(" on this line")
    assert comment == "// eventscript: allow never-ends"
    assert _codes(_allowed(FOREVER, w.pos.line, comment)) == []
