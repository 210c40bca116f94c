"""Fuzzing the front end: whatever the text, ``compile_source`` returns diagnostics and never
raises, and a program that does not compile has at least one error at a sane position.

Inputs: random sequences of the language's tokens, random grammar-shaped programs (which also
exercise the checker and the automata analyses), mutations and truncations of the conformance
programs, deep nesting, and random text and bytes. Regression tests for the crashes found this
way sit at the end.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CASES
from eventscript.automata.compile import Compilation, compile_source
from eventscript.language.diagnostics import Severity
from eventscript.language.lexer import KEYWORDS, PUNCTUATION
from eventscript.language.source import SourceFile

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Includes resolve relative to the program's file: keep them inside an empty scratch directory
# with one real file in it.
_SCRATCH = Path(tempfile.mkdtemp(prefix="es-fuzz-"))
atexit.register(shutil.rmtree, _SCRATCH, True)
(_SCRATCH / "inc.es").write_text("type T = {long a; string b;}\nin T Inc\n")


def compile_text(text: str, **kwargs) -> Compilation:  # type: ignore[no-untyped-def]
    """Compile as if from a file in the scratch directory; assert the diagnostics are sane."""
    source = SourceFile("fuzz.es", text, path=_SCRATCH / "fuzz.es")
    comp = compile_source(source, **kwargs)
    check_sane(comp, source)
    return comp


def check_sane(comp: Compilation, source: SourceFile) -> None:
    ds = list(comp.diagnostics)
    if comp.program is None:
        assert comp.diagnostics.errors, "no program and no error"
    else:
        assert not comp.diagnostics.errors
    for d in ds:
        assert d.severity in (Severity.ERROR, Severity.WARNING)
        assert d.message
        src = d.pos.source
        if src is source:
            n_lines = source.text.count("\n") + 1
            assert 0 <= d.pos.offset <= len(source.text)
            assert 1 <= d.pos.line <= n_lines
            assert 1 <= d.pos.col <= len(source.line_text(d.pos.line)) + 1
            assert source.line_col(d.pos.offset) == (d.pos.line, d.pos.col)
        else:  # an included file
            assert Path(src.name).name == "inc.es" or src.name == "<builtin>"
        d.render()  # rendering never fails


# ---------------------------------------------------------------------------------------
# Random token sequences

WORDS = (
    sorted(KEYWORDS)
    + list(PUNCTUATION)
    + [
        "A",
        "B",
        "C",
        "x",
        "y",
        "n",
        "T",
        "long",
        "double",
        "boolean",
        "string",
        "time",
        "object",
        "{}",
        "0",
        "1",
        "42",
        "2.5",
        "1e3",
        "9223372036854775808",
        '"s"',
        '"a\\n"',
        "sec",
        "minutes",
        "msec",
        "days",
        "now()",
        "group[0]",
        "A()",
        "A(x)",
        "B(y)",
        ".",
        ".*",
        "9:00",
        ".:00:00",
        "2038-01-19",
        "Hi",
        "Lo",
        "//c\n",
        "/*c*/",
        "\n",
        '#include "inc.es"\n',
        '#include "missing.es"\n',
        "#",
        "@",
        "\\",
        "'",
        "$x",
    ]
)


@FUZZ
@given(st.lists(st.sampled_from(WORDS), max_size=60), st.sampled_from([" ", "", "\n"]))
def test_random_token_sequences(words: list[str], sep: str) -> None:
    compile_text(sep.join(words))


@FUZZ
@given(st.lists(st.sampled_from(WORDS), max_size=40))
def test_random_tokens_after_valid_declarations(words: list[str]) -> None:
    compile_text("in long A, {} B, double C case { C > 0.0 ? Hi : Lo }\nout long O, {} Z\n" + " ".join(words))


# ---------------------------------------------------------------------------------------
# Grammar-shaped random programs


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    leaves = st.sampled_from(
        [
            "0",
            "1",
            "-3",
            "2.5",
            "x",
            "y",
            "n",
            "true",
            "false",
            '"s"',
            "now()",
            "group[0]",
            "group[1]",
            "a[0]",
            "s.f",
            "{}",
            "A",
        ]
    )
    if depth > 3:
        return draw(leaves)
    k = draw(st.integers(0, 9))
    sub = expressions(depth + 1)
    if k == 0:
        return (
            f"({draw(sub)} {draw(st.sampled_from(['+', '-', '*', '/', '%', '==', '!=', '<', '>=', '&&', '||']))} "
            f"{draw(sub)})"
        )
    if k == 1:
        return f"{draw(st.sampled_from(['!', '-']))}{draw(sub)}"
    if k == 2:
        return f"{draw(sub)} ? {draw(sub)} : {draw(sub)}"
    if k == 3:
        fn = draw(
            st.sampled_from(
                ["secondsAfter", "min", "max", "long", "double", "string", "length", "abs", "hour", "f", "nosuch"]
            )
        )
        return f"{fn}({', '.join(draw(st.lists(sub, max_size=3)))})"
    if k == 4:
        return f"{{f: {draw(sub)}, g: {draw(sub)}}}"
    if k == 5:
        return f"new {draw(st.sampled_from(['long', 'double', '{long f;}', 'T']))}[{draw(sub)}]"
    if k == 6:
        return f"{draw(sub)}[{draw(sub)}]"
    if k == 7:
        return f"{draw(sub)}.{draw(st.sampled_from(['f', 'g', 'a']))}"
    return draw(leaves)


@st.composite
def actions(draw: st.DrawFn, depth: int = 0) -> str:
    e = expressions()
    k = draw(st.integers(0, 6 if depth < 2 else 2))
    if k == 0:
        return f"{draw(st.sampled_from(['x', 'y', 'n', 'a[0]', 's.f', 'group[0]']))} = {draw(e)};"
    if k == 1:
        return f"!>{draw(st.sampled_from(['O', 'Z', 'P', 'A']))}({draw(st.one_of(st.just(''), e))});"
    if k == 2:
        return ";"
    if k == 3:
        rest = f" : {draw(actions(depth + 1))}" if draw(st.booleans()) else ""
        return f"{draw(e)} ? {draw(actions(depth + 1))}{rest}"
    if k == 4:
        return f"for (i: {draw(e)}, {draw(e)}) {draw(actions(depth + 1))}"
    return "{ " + " ".join(draw(st.lists(actions(depth + 1), max_size=3))) + " }"


@st.composite
def regexes(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 4:
        return draw(st.sampled_from(["A()", "B(x)", "C(y)", ".", "Hi()", "Lo()"]))
    k = draw(st.integers(0, 10))
    sub = regexes(depth + 1)
    if k == 0:
        return draw(st.sampled_from(["A()", "A(n)", "B(x)", "C(y)", ".", "Hi()", "Lo(y)", "Z()", "Inc()"]))
    if k == 1:
        return "{ " + " ".join(draw(st.lists(actions(), max_size=3))) + " }"
    if k == 2:
        amount = draw(expressions(3))
        unit = draw(st.sampled_from(["sec", "minutes", "msec", "usec", "days", "hour"]))
        return f"elapse[{amount} {unit}]({draw(st.sampled_from(['', 't']))})"
    if k == 3:
        pattern = draw(
            st.sampled_from(
                [
                    "9:00",
                    ".:00",
                    ".:.:30",
                    "(t)",
                    "t",
                    "2030-01-01 1:2:3",
                    "(x):(n)",
                    "25:00",
                    "2026-02-30",
                    ".-.-. .:.:.",
                    "0:00:01.5",
                ]
            )
        )
        return f"arrive[{pattern}]({draw(st.sampled_from(['', 't']))})"
    if k == 4:
        return " ".join(draw(st.lists(sub, min_size=1, max_size=3)))
    if k == 5:
        return " | ".join(draw(st.lists(sub, min_size=2, max_size=3)))
    if k == 6:
        mult = draw(st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{0,}", "{3,1}", "{0}"]))
        return f"({draw(sub)}){mult}"
    if k == 7:
        return f"({draw(sub)} {draw(st.sampled_from(['&', '-']))} {draw(sub)})"
    return f"({draw(sub)})"


TYPES = ["long", "double", "boolean", "string", "time", "{}", "{long f; double g;}", "long[]", "T", "object"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    grouped = draw(st.booleans())
    decls = []
    if draw(st.booleans()):
        decls.append('#include "inc.es"')
    if draw(st.booleans()):
        decls.append("type T = {long f; double g;}")
    if draw(st.booleans()):
        decls.append('function long f(long): "math:floor"')
    ins = []
    for name in ("A", "B", "C"):
        if draw(st.integers(0, 4)):
            entry = f"{draw(st.sampled_from(TYPES))} {name}"
            if grouped:
                key = draw(st.sampled_from([name, "1", '"k"', name + ".f", "x", name + ", 2"]))
                entry += f" group({key})"
            if name == "A" and draw(st.booleans()):
                entry += f" case {{ {draw(expressions(2))} ? Hi : Lo }}"
            ins.append(entry)
    if ins:
        decls.append("in " + ", ".join(ins))
    outs = [f"{draw(st.sampled_from(TYPES))} {n}" for n in ("O", "Z", "P") if draw(st.integers(0, 3))]
    if outs:
        decls.append("out " + ", ".join(outs))
    return "\n".join(decls) + "\n" + draw(regexes())


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs(text: str) -> None:
    compile_text(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_on_the_lazy_dfa(text: str) -> None:
    compile_text(text, force_lazy=True, state_limit=50)


# ---------------------------------------------------------------------------------------
# Mutations of real programs


def _conformance_texts() -> list[str]:
    return [p.read_text() for p in sorted(CASES.glob("*/*.es"))] if CASES.exists() else []


REAL = _conformance_texts() or [
    "in long A group(A)\nout long B\n( A(x) { n = 0; for (i: 0, x) n = n + i; x > 1 ? !>B(n); : !>B(-n); } )*",
]
SNIPPETS = [
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    ",",
    ":",
    "?",
    "*",
    "|",
    "&",
    "-",
    ".",
    "!>",
    "=",
    "==",
    '"',
    "/*",
    "//",
    "\n",
    "{3}",
    "{2,}",
    "A()",
    "x",
    "1",
    "1.5",
    "group[0]",
    "elapse[1 sec]()",
    "arrive[9:00]()",
    "in long Q\n",
    "out long Q\n",
    "type Q = long\n",
    "case { x ? P : Q }",
    "group(x)",
    "\x00",
    "²",
    "é",
    '#include "inc.es"\n',
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(REAL))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 4))
        i = draw(st.integers(0, len(text)))
        if op == 0:  # truncate
            text = text[:i]
        elif op == 1:  # delete a span
            text = text[:i] + text[i + draw(st.integers(1, 12)) :]
        elif op == 2:  # insert a snippet
            text = text[:i] + draw(st.sampled_from(SNIPPETS)) + text[i:]
        elif op == 3:  # duplicate a span
            j = draw(st.integers(i, min(len(text), i + 40)))
            text = text[:j] + text[i:j] + text[j:]
        else:  # replace a character
            text = text[:i] + draw(st.characters(codec="utf-8")) + text[i + 1 :]
    return text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_conformance_programs(text: str) -> None:
    compile_text(text)


@FUZZ
@given(st.sampled_from(REAL), st.data())
def test_every_prefix_of_a_real_program(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    comp = compile_text(text[:cut])
    if cut < len(text.rstrip()) and comp.program is None:
        assert comp.diagnostics.errors


# ---------------------------------------------------------------------------------------
# Deep nesting and random text


OPENERS = [
    ("(", ")"),
    ("{", "}"),
    ("[", "]"),
    ("A() (", ")*"),
    ("!>O(", ");"),
    ("-", ""),
    ("!", ""),
    ("x ? ", " : y"),
    ("{a: ", "}"),
    ("f(", ")"),
    ("new long[", "]"),
    ("x > 1 ? { ", " }"),
]


@st.composite
def nestings(draw: st.DrawFn) -> list[tuple[str, str]]:
    depth = draw(st.integers(0, 700))
    kinds = draw(st.lists(st.sampled_from(OPENERS), min_size=1, max_size=3))
    return [kinds[draw(st.integers(0, len(kinds) - 1))] if i % 7 == 0 else kinds[0] for i in range(depth)]


@FUZZ
@given(
    nestings(),
    st.sampled_from(["A()", "x", "1", ""]),
    st.sampled_from(["in long A\nout long O\n", "in long A\nout long O\nA(x) { y = ", ""]),
    st.booleans(),
)
def test_deep_nesting(nest: list[tuple[str, str]], core: str, prefix: str, closed: bool) -> None:
    text = prefix + "".join(o for o, _ in nest) + core + ("".join(c for _, c in reversed(nest)) if closed else "")
    compile_text(text)


@FUZZ
@given(st.text(max_size=300))
def test_random_unicode_text(text: str) -> None:
    compile_text(text)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    compile_text(data.decode("utf-8", errors="replace"))
    compile_text(data.decode("latin-1"))


@FUZZ
@given(st.text(alphabet=st.sampled_from(list('(){}[];:?.*+|&-!>=<,0123456789Ax \n"/#')), max_size=200))
def test_random_punctuation_soup(text: str) -> None:
    compile_text(text)


# ---------------------------------------------------------------------------------------
# Regressions found by fuzzing


@pytest.mark.parametrize(
    "text",
    [
        "in long A\nout long B\n( A(x) { !>B(²); } )*",  # ValueError: int('²') in the lexer
        "in long A\nout long B\n( A(x) { !>B(1²); } )*",
        '#include "a\x00b"\nin {} A\nout {} B\nA()',  # ValueError: embedded null byte
        "in long A\nout long B\n A() { !>B(" + "(" * 150 + "1" + ")" * 150 + "); }",  # RecursionError
        "in long A\nout long B\n " + "(" * 300 + "A()" + ")" * 300,
        "in long A\nout long B\n A() { !>B(" + "+".join(["1"] * 5000) + "); }",
        "in long A\nout long B\n A(x) { !>B(x" + ".f" * 3000 + "); }",
        "in long A\nout long B\n A(x) { !>B(x" + "[0]" * 3000 + "); }",
        "in long A\nout long B\n A()" + "*" * 3000,
        "in long" + "[]" * 3000 + " A\nout long B\n A()",
        "in " + "{" * 600 + "long x;" + "} y;" * 599 + "} A\nout long B\n A()",
        "in long A case { f() ? Hi : Lo }\nA()",  # AttributeError in the lowering
        "in long A group(nosuch(A))\nout {} Z\nA()",
    ],
)
def test_crash_regressions(text: str) -> None:
    comp = compile_text(text)
    assert comp.diagnostics.errors


@pytest.mark.timeout(120)
@pytest.mark.parametrize("n", [40, 80])
def test_checking_is_not_exponential_in_operator_nesting(n: int) -> None:
    # Regression: each level of '&&', '||', '!', subscripts and array sizes synthesized its
    # operands twice, so an 18-term '&&' chain took 9 s and 20 nested '!' about 30 s.
    chains = [
        "in long A\nout boolean B\n( A(x) { !>B(" + " && ".join(f"x > {i}" for i in range(n)) + "); } )*",
        "in long A\nout boolean B\n( A(x) { !>B(" + " || ".join(f"x > {i}" for i in range(n)) + "); } )*",
        "in long A\nout boolean B\n( A(x) { !>B(" + "!" * n + "(x > 1)); } )*",
        "in long A\nout long B\n( A(x) { a = new long[3]; !>B(" + "a[" * (n // 2) + "0" + "]" * (n // 2) + "); } )*",
        "in long A\nout long B\n( A(x) { !>B(" + "(x > 1 ? " * (n // 2) + "x" + " : x)" * (n // 2) + "); } )*",
    ]
    for text in chains:
        start = time.perf_counter()
        comp = compile_text(text)
        elapsed = time.perf_counter() - start
        assert comp.ok, [str(e) for e in comp.diagnostics.errors]
        assert elapsed < 2.0, f"{elapsed:.1f}s for {text[:60]}..."
