"""The programs of the language document, read from it at test time, and the conformance suite.

Every complete program of the document must check without errors, except a short, explicit
list of typos in the document itself; each gets the error its typo deserves, and the corrected
program checks cleanly. The warnings the document says a program gets (ambiguity,
nontermination of a grouped program, simultaneous time markers) are asserted, and every other
complete program must check without any diagnostic at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langdoc import DocProgram, complete_programs, find, programs

from conftest import CASES, LANGUAGE_DOCUMENT, check_source, run_program
from eventscript.automata.compile import compile_file
from eventscript.language.diagnostics import Diagnostic, Severity

pytestmark = pytest.mark.skipif(LANGUAGE_DOCUMENT is None, reason="../shared (the language document) is absent")


def kind(d: Diagnostic) -> str:
    m = d.message
    if m.startswith("ambiguous regular expression"):
        return "ambiguous"
    if m.startswith("this grouped program"):
        return "nonterminating"
    if m.endswith("may fire at the same instant"):
        return "simultaneous"
    if m.endswith("may be read before it is set"):
        return "read-before-set"
    if m.startswith("variable ") and m.endswith("is set but never read"):
        return "unused"
    if m.startswith("arrive[") and " is read as hours:minutes" in m:
        return "ambiguous-pattern"
    return m


def warning_kinds(text: str) -> set[str]:
    comp = check_source(text)
    assert not comp.diagnostics.errors, [str(e) for e in comp.diagnostics.errors]
    return {kind(w) for w in comp.diagnostics.warnings}


# Known typos of the document: a distinctive substring of the program, the errors the typo
# must produce (message, and the text at the reported position), and the correction.
TYPOS: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
    # Distance debouncing (section 4.2): "(.-DefinitelyCold()* DefinitelyCold()" opens a
    # parenthesis that is never closed (and so does the ...Warm line): the intended loop is
    # "(.-DefinitelyCold())*". The parser runs off the end of the program.
    "(.-DefinitelyCold()*": (
        [("expected ')', found the end of the file", "")],
        [("(.-DefinitelyCold()*", "(.-DefinitelyCold())*"), ("(.-DefinitelyWarm()*", "(.-DefinitelyWarm())*")],
    ),
    # The DFA blow-up example (section 6.4): ".{k}" uses k as a placeholder for an integer
    # constant, so "{k}" is an action block, not a multiplier; and "{ !>Z({})i }" has an OCR
    # "i" where the emit action's ";" belongs.
    ".{k}": (
        [("expected '=' or '?' after the expression, found '}'", "}"), ("expected ';', found 'i'", "i")],
        [(".{k}", ".{3}"), ("!>Z({})i", "!>Z({});")],
    ),
}


def _text_at(d: Diagnostic) -> str:
    line = d.pos.source.line_text(d.pos.line)
    return line[d.pos.col - 1 : d.pos.col]


def _typo_of(p: DocProgram) -> str | None:
    found = [t for t in TYPOS if t in p.text]
    assert len(found) <= 1
    return found[0] if found else None


# What the document says about each program's warnings, by a distinctive substring. The
# programs of the document not listed here get no warning at all.
EXPECTED_WARNINGS: dict[str, set[str]] = {
    # Fig. 3 and Fig. 4: ambiguous (section 3.3.1).
    "{x=2;}": {"ambiguous"},
    "{!>B(2);}": {"ambiguous"},
    # The greedy-action example: an A matches the start of either alternative.
    "{!>Z({});} C()": {"ambiguous"},
    # "The regular expression in this program is ambiguous" (the keypad, twice in the document).
    "K0() K0() K7()": {"ambiguous"},
    # "... is ambiguous because, after an even number of A events ..."
    "EvenSeen": {"ambiguous"},
    # Coupon and software: two alternatives followed in parallel (ambiguous), grouped by an
    # open-ended customer key and never terminating.
    "GiveCoupon": {"ambiguous", "nonterminating"},
    # Footnotes 12 and 13: count and time debouncing are ambiguous.
    "RawOn(){0,4}": {"ambiguous"},
    "RawOn()+ RawOff()": {"ambiguous"},
    # Second stage of the windows alarm: like count debouncing, AbnormalWindow(){0,2} and
    # AbnormalWindow(){3} both match the first abnormal windows.
    "AbnormalWindow(){3}": {"ambiguous"},
    # The one-stage three-big-trades program keeps an instance per (trader, company) forever.
    "BigTrade(bt1)": {"nonterminating"},
    # Keyboard debouncing: "Although this computation is nonterminating, ..."
    "KeyPress": {"nonterminating"},
    # Radiation: "Both stages of this pipeline are nonterminating".
    "EmployeeLocation(e)": {"nonterminating"},
    "ExposureLimit": {"nonterminating"},
    # Start of hour / minute: both arrive markers fire at hh:00:00 (section 3.3.2).
    "{!>StartOfMinute(": {"simultaneous"},
    # Windows of section 4.5: arrive[.:00]() ends an hourly window, as H:MM reads it; the two-
    # component form with a wildcard hour is warned about all the same.
    "arrive[.:00]() // (0,N)": {"ambiguous-pattern"},
    "arrive[.:00]() { !>NormalWindow": {"ambiguous-pattern"},
    # Unaccompanied visitor: hostDeadline and visitorDeadline start equal, so the two arrive
    # markers may well fire at the same instant.
    "UnaccompaniedVisitor": {"simultaneous"},
}


def _expected_warnings(p: DocProgram) -> set[str]:
    return set().union(*(w for t, w in EXPECTED_WARNINGS.items() if t in p.text))


def _id(p: DocProgram) -> str:
    return f"line{p.line}"


# ---------------------------------------------------------------------------------------
# Finding the programs


def test_the_document_has_its_programs() -> None:
    complete = complete_programs()
    assert len(complete) >= 45
    assert all(p.text.count("\n") >= 2 for p in complete)
    # Programs split over two blocks are joined: declarations in one, the expression in the next.
    joined = [p for p in complete if len(p.blocks) == 2]
    assert len(joined) >= 5
    trades = find("BigTrade(bt1)")
    assert trades.complete and len(trades.blocks) == 2 and "group(Trade.traderID, Trade.company)" in trades.text
    keypad = find("No zeroes pending")
    assert keypad.complete and keypad.text.lstrip().startswith("in long Key")
    # Elided text and fragments are not programs.
    assert not find("..., {}Z").complete
    fragment = find("? !>Average(sum/N);", complete=False).text.strip()
    assert fragment.endswith("? !>Average(sum/N);") and "\n" not in fragment
    assert not any(p.complete for p in programs() if p.text.lstrip().startswith("public"))


def test_every_typo_and_expectation_names_a_program() -> None:
    texts = [p.text for p in complete_programs()]
    for substring in [*TYPOS, *EXPECTED_WARNINGS]:
        assert any(substring in t for t in texts), substring


# ---------------------------------------------------------------------------------------
# Complete programs


@pytest.mark.parametrize("program", complete_programs(), ids=_id)
def test_document_program(program: DocProgram) -> None:
    comp = check_source(program.text)
    typo = _typo_of(program)
    errs = comp.diagnostics.errors
    if typo is None:
        assert not errs, [str(e) for e in errs]
        assert {kind(w) for w in comp.diagnostics.warnings} == _expected_warnings(program), [
            str(w) for w in comp.diagnostics.warnings
        ]
        return
    expected, _ = TYPOS[typo]
    assert [(e.message, _text_at(e)) for e in errs] == expected


@pytest.mark.parametrize("typo", list(TYPOS))
def test_corrected_typos_check_cleanly(typo: str) -> None:
    text = find(typo).text
    _, corrections = TYPOS[typo]
    for wrong, right in corrections:
        assert wrong in text
        text = text.replace(wrong, right)
    comp = check_source(text)
    assert not comp.diagnostics.errors, [str(e) for e in comp.diagnostics.errors]


def test_unclosed_parenthesis_hint_points_at_it() -> None:
    text = find("(.-DefinitelyCold()*").text
    (err,) = check_source(text).diagnostics.errors
    assert err.hint is not None
    m = re.fullmatch(r"the '\(' at (\d+):(\d+) is not closed", err.hint)
    assert m, err.hint
    line, col = int(m.group(1)), int(m.group(2))
    # The last ')*' closes the ...Warm parenthesis, so the ...Cold one is left open.
    assert text.split("\n")[line - 1][col - 1 :].startswith("(.-DefinitelyCold()*")


def test_distance_debouncing_corrected_runs() -> None:
    text = find("(.-DefinitelyCold()*").text
    for wrong, right in TYPOS["(.-DefinitelyCold()*"][1]:
        text = text.replace(wrong, right)
    out = run_program(
        text,
        "[2026-01-01 00:00:00] Temperature(41.0) Temperature(36.0) Temperature(34.0) "
        "Temperature(44.0) Temperature(46.0)",
    )
    assert [o["event"] for o in out] == ["Warm", "Cold", "Warm"]


@pytest.mark.parametrize("k", [2, 3, 5])
def test_dfa_blowup_has_at_least_two_to_the_k_plus_one_states(k: int) -> None:
    # Section 6.4: the DFA must remember the k+1 most recent events: at least 2^(k+1) states.
    text = find(".{k}").text.replace(".{k}", f".{{{k}}}").replace("!>Z({})i", "!>Z({});")
    comp = check_source(text)
    assert comp.ok and comp.dfa_states is not None
    assert comp.dfa_states >= 2 ** (k + 1)


# ---------------------------------------------------------------------------------------
# Fragments: declarations, alternative regular expressions and actions, checked in context


def _declaration_fragments() -> list[DocProgram]:
    return [
        p
        for p in programs()
        if not p.complete and "..." not in p.text and re.match(r"\s*(in|out|type|function)\b", p.text)
    ]


def test_declaration_fragments() -> None:
    fragments = _declaration_fragments()
    assert len(fragments) >= 7
    for p in fragments:
        text = p.text
        if "number exposure" in text:
            # The block also caught the sentence "the action" that follows it in the document.
            assert "\nthe action" in text
            text = text.replace("\nthe action", "")
        comp = check_source(text + "\nin {} Go__\nGo__()")
        errs = [(e.message, p.text[e.pos.offset : e.pos.offset + 6]) for e in comp.diagnostics.errors]
        if "number exposure" in p.text:
            # Typo: 'number' is not a type of the language (section 2.1); the field is a double.
            assert errs == [("unknown type 'number'", "number")]
        else:  # (the envVar declaration too: see the next test)
            assert errs == [], p.text


def test_the_documents_envVar_declaration_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # Section 2.2 declares envVar by a Java class name, "eslib.systemFuncs.EnvVar", and section 6.6
    # implements it with System.getenv: the declaration, copied as it is, reads the environment
    # (eventscript.eslib); a variable that is not set is the function's failure, $error 7, and "".
    decl = next(p.text for p in _declaration_fragments() if "systemFuncs" in p.text).strip()
    assert decl == 'function string envVar(string): "eslib.systemFuncs.EnvVar"'
    monkeypatch.setenv("ES_DOC_HOME", "/home/es")
    monkeypatch.delenv("ES_DOC_UNSET", raising=False)
    out = run_program(
        f"{decl}\nin string Ask\nout string Got\n( Ask(name) {{ !>Got(envVar(name)); }} )*",
        '[2026-01-01 00:00:00] Ask("ES_DOC_HOME") Ask("ES_DOC_UNSET")',
    )
    assert [(o["event"], o["value"]) for o in out] == [
        ("Got", "/home/es"),
        (
            "$error",
            {
                "code": 7,
                "message": "external function envVar failed: LookupError: the environment variable"
                " 'ES_DOC_UNSET' is not set",
            },
        ),
        ("Got", ""),
    ]


def test_type_names_are_synonyms() -> None:
    # Section 2.2: the program beginning with the Point/Polygon definitions "is equivalent to"
    # the one with the structure written out.
    named = find("Polygon boundary").text
    spelled = find("}[] boundary").text
    types = []
    for text in (named, spelled):
        comp = check_source(text + "\nout {} Z\nSetZone()")
        assert comp.ok, [str(e) for e in comp.diagnostics.errors]
        assert comp.checked is not None
        types.append(comp.checked.inputs["SetZone"].ty)
    assert types[0] == types[1]


def test_emit_of_a_structure_builder_fragment() -> None:
    decl = find("number exposure").text.split("\n")[0].replace("number", "double")
    emit = find("!>EmployeeExposure(").text.strip()
    out = run_program(f"{decl}\nin {{}} Go\n( Go() {{ {emit} }} )*", "[2026-01-01 00:00:00] Go()")
    assert out == [
        {
            "time": "2026-01-01T00:00:00.000000Z",
            "event": "EmployeeExposure",
            "value": {"employeeID": "771803", "exposure": 10.3},
        }
    ]


def _declarations(text: str) -> str:
    """The declaration lines of a program (up to the first line that starts its expression)."""
    lines = text.strip().split("\n")
    out = []
    for line in lines:
        if re.match(r"\s*[({.]|\s*[A-Z]\w*\(", line) and out and not re.match(r"\s*(in|out)\b", line):
            break
        out.append(line)
    return "\n".join(out)


def test_guarded_repetition_alternative() -> None:
    # Section 3.3.1: "the regular expression should be written as follows instead".
    decls = _declarations(find("( { !>Y").text)
    better = find("( B() { !>Y").text
    text = f"{decls}\n{better}"
    assert warning_kinds(text) == set()
    out = run_program(text, "[2026-01-01 00:00:00] A() B() B() C()")
    assert [o["event"] for o in out] == ["Y", "Y", "Z"]


def test_less_tricky_start_of_hour() -> None:
    decls = _declarations(find("{!>StartOfMinute(").text)
    text = f"{decls}\n{find('minute(t)==0 ?').text}"
    # arrive[.:00](t), meant as "every minute", is read as H:MM (conformance choice 1): warned.
    assert warning_kinds(text) == {"ambiguous-pattern"}
    trace = "[2026-01-01 00:58:30] [2026-01-01 01:01:30]"
    # As printed, arrive[.:00] is an H:MM pattern: the top of every hour, like the windows of
    # section 4.5, so minute(t) is always 0 and only StartOfHour is ever emitted. The document
    # means arrive[.:.:00], the start of every minute.
    out = run_program(text, trace)
    assert [(o["time"][11:19], o["event"]) for o in out] == [("01:00:00", "StartOfHour")]
    out = run_program(text.replace("arrive[.:00](t)", "arrive[.:.:00](t)"), trace)
    assert [(o["time"][11:19], o["event"]) for o in out] == [
        ("00:59:00", "StartOfMinute"),
        ("01:00:00", "StartOfHour"),
        ("01:01:00", "StartOfMinute"),
    ]


def test_inspection_alternatives() -> None:
    decls = _declarations(find("// Version 1:").text)
    wildcard = f"{decls}\n{find('( . | Use()').text}"
    difference = f"{decls}\n{find('.* - (').text}"
    # "One way to do this is with an ambiguous set of alternatives"
    assert warning_kinds(wildcard) == {"ambiguous"}
    assert warning_kinds(difference) == set()
    trace = "[2026-01-01 00:00:00] Use() Inspection() Use() Use() Use() Inspection()"
    for text in (wildcard, difference):
        assert [o["event"] for o in run_program(text, trace)] == ["Violation", "Violation"]


def test_factored_unaccompanied_visitor() -> None:
    # Section 4.4: the repetition of the initial version, factored; same machine.
    initial = find("UnaccompaniedVisitor", complete=True).text
    factored_repetition = next(p.text for p in programs() if not p.complete and "HostLocation(h)" in p.text).strip()
    start = initial.index("(\n  HostLocation(h)")
    end = initial.rindex("Unregister()")
    factored = initial[:start] + factored_repetition + "\n" + initial[end:]
    assert warning_kinds(factored) == warning_kinds(initial) == {"simultaneous"}
    trace = (
        '[2026-01-01 00:00:00] HostLocation({visitorID: "v1", x: 3.5, y: 7.2}) '
        'VisitorLocation({visitorID: "v1", x: 30.0, y: 7.2}) [00:00:30] '
        'HostLocation({visitorID: "v1", x: 3.5, y: 7.2}) [00:02:00] Unregister("v1") [00:05:00]'
    )
    assert run_program(factored, trace) == run_program(initial, trace)


def test_repeated_action_fragment_needs_a_double_literal() -> None:
    # Section 2.5 shows the repeated action "history[i] = 0;" on its own, while the program
    # writes 0.0: in the program, 0 is a long stored into a double array, which footnote 5 says
    # is a type error.
    program = find("SetWindowSize(N)").text
    fragment = find("history[i] = 0;", complete=False).text.strip()
    assert "history[i] = 0.0;" in program
    line = next(x for x in program.split("\n") if "for (i: 0, N-1)" in x)
    text = program.replace(line.strip(), fragment)
    comp = check_source(text)
    (err,) = comp.diagnostics.errors
    assert err.message == "cannot assign 'long' to this target, which is 'double'"
    assert err.hint == "write 0.0 for a double constant"


# ---------------------------------------------------------------------------------------
# The conformance suite


def _conformance_programs() -> list[Path]:
    return sorted(CASES.glob("*/*.es")) if CASES.exists() else []


@pytest.mark.parametrize("path", _conformance_programs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conformance_program_compiles(path: Path) -> None:
    comp = compile_file(path)
    assert not comp.diagnostics.errors, [str(e) for e in comp.diagnostics.errors]
    assert comp.program is not None
    for w in comp.diagnostics.warnings:
        assert w.severity is Severity.WARNING and w.pos.line >= 1


def test_conformance_suite_is_there() -> None:
    if not CASES.exists():
        pytest.skip("../shared/conformance is absent")
    assert len(_conformance_programs()) >= 50
