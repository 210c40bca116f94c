"""Hypothesis strategies: well-typed random programs and timed traces for them.

Programs have two or three ``long`` inputs and sometimes a ``double`` one, ``D`` (``A`` sometimes
classified by a case clause into ``Hi``/``Lo`` or ``Hi``/``Mid``/``Lo``; all of them sometimes
grouped by a key of one or two components computed from the value), markers with and without a
variable, the wildcard, ``elapse`` and ``arrive`` time markers, ``|``, sequence, every multiplier
(nested ones too), ``&`` and ``-``, and action blocks that count, branch on ``long``, ``double``,
``string`` and ``boolean`` conditions, loop, index an array, read group keys, emit several outputs
(a structure among them) and run into ``$error``s (division by zero, a subscript out of bounds, a
variable not yet set). Loops only go around items that cannot match the empty sequence (a cycle of
actions with no marker is a compile error); time markers stay out of the operands of ``&`` and
the right operand of ``-`` (a time event can never be matched by both operands of ``&``, and one
matched by the right operand of ``-`` only ends that operand's paths, if the left one has no
path for it, so such markers are dead code; a few programs have them all the same), and
their amounts are positive (an ``elapse`` of zero in a loop fires for ever at one instant).
Also: comparisons across ``long`` and ``double`` (promotion), 64-bit overflow, string escapes,
``arrive`` with computed or wildcard components (date ones too; out of range is ``$error`` 8),
errors in the initial actions, two structure inputs with the same fields in other orders (the
first with event classes), string group keys, arrays of structures and of arrays, stacked
multipliers, and now and then a program that is its initial block alone; ``programs(inputs=...)``
makes a pipeline's second stage. A trace is kept as data for the reference and rendered as text
for the tester, in any of the spellings the trace format allows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

from .interpreter import Trace, micros_of

START = datetime(2026, 1, 1, tzinfo=UTC)
#: Nesting depth of the regular expressions and the most items of a trace; long runs by hand may
#: raise them (``REFERENCE_DEPTH=3 REFERENCE_TRACE_ITEMS=40``), CI keeps the defaults.
DEPTH = int(os.environ.get("REFERENCE_DEPTH", "2"))
TRACE_ITEMS = int(os.environ.get("REFERENCE_TRACE_ITEMS", "16"))
#: ``REFERENCE_GROUPED=1``: grouped programs only (long runs aimed at the engine's grouped feed).
GROUPED_ONLY = os.environ.get("REFERENCE_GROUPED") == "1"
STATEMENTS = [
    "n = n + 1;",
    "n = n + v;",
    "!>O(n);",
    "!>O(n * 10 + v);",
    "n > 3 ? !>O(-n);",
    "n = n % 7;",
    "!>O(100 / v);",
    "n > 1 ? { !>O(n); n = 0; } : n = n + 2;",
    "d = d + 0.5;",
    "!>P(d * 2.0 + n);",
    's = s + "a";',
    "!>S(s + n);",
    "!>O(millisecondsBetween(t, now()));",
    "t = now();",
    "for (i: 1, n % 3) !>O(i);",
    "v = v * 2;",
    # errors (document 3.1): remainder by zero, subscripts out of bounds, a variable not yet set
    "!>O(n % v);",
    "a[n % 4] = v;",
    "!>O(a[v % 4] + a[0]);",
    "v > 4 ? u = v * 3; : !>O(u);",
    # doubles, strings and booleans in conditions and in text (docs/language.md 6.3: Double.toString)
    "d = d / n;",
    "d = d - 0.25 * v;",
    "!>S(s + d);",
    "!>S(string(d * 1000000.0) + string(d / 3000.0));",
    'd > 1.0 ? s = s + "b";',
    's == "aa" ? !>F(true); : !>F(s < "ab");',
    "n > 2 ? b = v > 4; : !>F(b);",
    "!>F(!(n > 3) || d >= 0.5);",
    "!>R({a: n, b: s});",
    "!>O(long(d * 3.0));",
    "!>O(max(n, v) - min(n, 2) + abs(v - 5));",
    "for (i: v % 3, 2) n = n + i;",
    "!>P(w + d);",
    # the standard library (docs/language.md 8), failures included ($error 5 and 8)
    "!>S(substring(s, 1, 3));",
    '!>O(indexOf(s + "ab", "b") * 10 + length(trim(" x ")));',
    '!>S(toUpperCase(s + "é") + toLowerCase("AB"));',
    '!>F(startsWith(s, "a") && endsWith(s, "b"));',
    '!>O(long(" 12 ") + long(s));',
    '!>P(double(s + "1.5"));',
    "!>P(floor(d / 3.0) + ceil(d / 3.0));",
    "!>P(sqrt(d - 1.0) + log(d));",
    "!>P(pow(d, 0.5) * exp(d / 100.0));",
    "!>O(round(d / 3.0) + round(-2.5));",
    "!>F(isNaN(d));",
    "!>O(hour(t) * 100 + dayOfWeek(t) + daysBetween(t, now()) + hoursBetween(t, now()));",
    "!>M(hoursAfter(1, t));",
    # an emitted value is a snapshot (choice 9): later changes to the array or structure do not show
    "{ r = {a: n, b: s}; !>R(r); r.a = 99; !>R(r); }",
    "{ !>AR(a); a[0] = n + 1; !>AR(a); }",
    "!>AR(new long[v % 3]);",
    # a long operand is promoted to double, in comparisons too (footnote 5 of the language document);
    # times compare chronologically, strings by character, arrays and structures by content (6.2)
    "!>F(v == 9223372036854775807.0 || n < d);",
    "!>F(d == n && n <= 2.5);",
    "!>P(v > 3 ? v : 1.5);",
    "!>F(t < now() || t == now());",
    '!>F(s + "\\u00e9" > "z" || s < "\\uD83D\\uDE00");',
    "!>F(a == c || a != new long[3]);",
    "!>F({a: n, b: s} == {a: v, b: s});",
    # 64-bit wrap-around and Java division (choice 7): the most negative long divided by -1 stays put
    "!>O(v * v * v);",
    "n = n * 1000003 + v;",
    "!>O((-9223372036854775807 - 1) / (v % 2 - 1));",
    "!>O(-9223372036854775808 % v + abs(-9223372036854775808));",
    "!>O(v + 9223372036854775807);",
    "!>P(d % 0.75 - n % 0.5);",
    "!>O(v + 1);",
    "!>O(-5 - v);",
    "!>O(v - 9223372036854775807);",
    # string literals with escapes (docs/language.md 2): tab, quote, backslash, \u, a surrogate pair
    r'!>S("\t\"q\\\u00e9\uD83D\uDE00" + s);',
    r'!>S(trim("\t x\n ") + "|" + length("\uD83D\uDE00"));',
    # the rest of the time functions (docs/language.md 8); a time beyond years 1 to 9999 is $error 8
    # and the epoch (7.7). (timeOfEpochMillis/Micros stay in range: test_known_cases has the rest.)
    "!>O(year(t) * 10000 + month(t) * 100 + day(t) + dayOfYear(now()));",
    "!>O(epochMillis(t) % 100000 + microsecond(now()) + epochMicros(now()) % 1000);",
    "!>M(timeOfEpochMillis(epochMillis(t) + v % 100000));",
    "!>M(timeOfEpochMicros(epochMicros(now()) - v % 1000));",
    '!>M(time("2026-01-01T00:00:0" + v + "Z"));',
    "!>M(secondsAfter(v, t));",
    "!>M(daysAfter(v * 100000, now()));",
    "!>S(string(t) + now());",
    # arrays of structures and of arrays (docs/language.md 4.2, 6.1: nested targets), shared by
    # reference (4.5), compared by content; nested loops; NaN is not equal to itself
    "q[v % 3].a = v;",
    "!>R(q[1]);",
    "{ r = q[0]; r.b = s + v; !>R(q[0]); }",
    "m[v % 2] = new long[v % 4];",
    "{ m[0][1] = v; !>AR(m[0]); }",
    "!>F(q[0] == q[1] && m[0] == m[1]);",
    "for (i: 0, 1) for (j: i, 1) !>O(i * 10 + j + n);",
    "!>F(d != d || d / 0.0 == d / 0.0);",
    "!>O(v > 2 ? v : -v);",
    "!>M(t);",
    "!>O(second(now()) + minute(t) * 100 + millisecond(now()) * 10000);",
    "a = new long[v % 5];",
    "{ c = a; c[1] = n; !>O(a[1]); }",
]
#: A grouped program of these statements (and no initial actions) often comes back to its start
#: state with no variable live: the engine may then release ("retire") the instance, and the key's
#: next event must behave the same on a fresh one. ``v`` may still be read before it is set.
STATELESS = [
    "!>O(v);",
    "!>O(v * 10 + 1);",
    "{ u = v + 1; !>O(u); }",
    "v > 3 ? !>F(true);",
    "!>O(group[0]);",
    "{ x = 5; x = x + 1; !>O(x); }",
    "v > 2 ? x = v; : x = 0; !>O(x);",
    # a constant operand: the engine checks the overflow of + and - on one side only
    "!>O(v + 1);",
    "!>O(-5 - v);",
    "{ u = v - 1; !>O(u + 9223372036854775807); }",
]


@dataclass(frozen=True)
class Extra:
    """An optional input beside the ``long`` ones: its type, the expression its group key is
    computed from, its marker's variable, the statements that read that variable (only in
    programs that declare it) and its trace values (the last does not conform: ``$error`` 6)."""

    ty: str
    key: str
    target: str
    statements: tuple[str, ...]
    values: tuple[Any, ...]


EXTRAS = {
    "D": Extra("double", "long(D)", "w", ("!>P(w + d);", "!>F(w >= v || w == n);"), (0.5, 2, -1.5, 3.25, 7, "x")),
    # a structure, written with its field names or positionally; strings with quotes, backslashes, é
    "E": Extra(
        "{long k; string s;}",
        "E.k",
        "e",
        (
            "!>S(e.s + e.k);",
            "s = s + e.s;",
            "!>S(substring(e.s, 0, 1));",
            "e.k > 2 ? !>O(e.k);",
            "e.k = n;",
            "!>O(length(e.s));",
            '!>F(contains(e.s, "a"));',
            "!>R({a: e.k, b: e.s + s});",
            "!>F(e == {k: h.k, s: h.s});",
            "e = {k: h.k, s: h.s};",
        ),
        ({"k": 3, "s": "a"}, {"k": -4, "s": 'a"b'}, {"k": 7, "s": "é\\"}, {"k": 0, "s": ""}, 5),
    ),
    # a structure with E's fields in the other order, a different type (docs/language.md 4.4); a
    # builder in a trace may name the fields in any order, positional values come in declared order
    "H": Extra(
        "{string s; long k;}",
        "H.k",
        "h",
        (
            "!>S(h.s + h.k);",
            "!>R({a: h.k, b: h.s});",
            "h.k = h.k + n;",
            "!>F(e == {k: h.k, s: h.s});",
            "e = {k: h.k, s: h.s};",
        ),
        ({"s": "b", "k": 2}, {"k": 1, "s": "x"}, {"s": "\u00e9\t", "k": -1}, {"k": "x", "s": "y"}, "s"),
    ),
    # a later pipeline stage's double input: stage 1's P outputs, NaN and infinities among them
    "P": Extra("double", "long(P)", "w", ("!>P(w * 2.0 + n);", "!>F(w > 1.0E300 || isNaN(w));"), (0.5, 2, "x")),
    # the empty structure, a pure signal: G() or G({})
    "G": Extra("{}", "7", "", ("!>Q();", "!>Q({});"), ({}, 5)),
    "L": Extra(
        "long[]",
        "length(L)",
        "l",
        ("!>O(length(l) * 100 + l[0]);", "l[0] = n;", "!>O(l[length(l) - 1]);", "a = l;"),
        ([1, 2, 3], [], [5], [-4, 9], "x"),
    ),
    # times as ISO-8601 text, UTC or with an offset; 5 (epoch milliseconds) and "noon" do not
    # conform: traces are strict (docs/language.md 10.1)
    "W": Extra(
        "time",
        "minute(W)",
        "tw",
        ("!>O(secondsBetween(tw, now()));", "!>M(tw);", "t = tw;"),
        (
            "2026-01-01T00:00:05Z",
            "2026-01-01T01:00:00+01:00",
            "2026-01-01T00:00:00.250Z",
            "2025-12-31T23:59:59.999999Z",
            5,
            "noon",
        ),
    ),
}
STATEMENTS += sorted({x for extra in EXTRAS.values() for x in extra.statements})


@dataclass
class Spec:
    """What the regular expression may refer to."""

    names: list[str]
    markers: list[str]
    grouped: bool
    #: The number of group-key components (0 when not grouped).
    keys: int = 0
    #: The optional inputs (:data:`EXTRAS`) the program declares.
    extras: tuple[str, ...] = ()
    #: Whether actions come from :data:`STATELESS` only (grouped programs, no initial actions).
    stateless: bool = False
    tags: list[int] = field(default_factory=list)
    #: Whether ``&`` and ``-`` may appear.
    products: bool = True
    #: Whether the first key component is a string (docs/language.md 3.3: any type, the same in
    #: every group clause), not a long.
    text_key: bool = False
    #: Event classes of an optional input: class name -> the input (its marker variable's type).
    bases: dict[str, str] = field(default_factory=dict)


@dataclass
class Part:
    text: str
    nullable: bool


@st.composite
def action_block(draw: st.DrawFn, spec: Spec) -> Part:
    if spec.stateless:
        choices = (
            [c for c in STATELESS if c != "!>O(group[0]);"] + ["!>S(group[0]);"] if spec.text_key else list(STATELESS)
        )
    else:
        absent = {x for name, extra in EXTRAS.items() if name not in spec.extras for x in extra.statements}
        choices = [c for c in STATEMENTS if c not in absent]
        choices += [("!>S(group[0] + n);" if spec.text_key else "!>O(group[0] * 1000 + n);")] if spec.grouped else []
        choices += ["!>O(group[1] ? n : -n);", "group[1] ? !>F(group[1]);"] if spec.keys == 2 else []
    statements = draw(st.lists(st.sampled_from(choices), min_size=0, max_size=4))
    spec.tags.append(len(spec.tags) + 1)
    statements.insert(draw(st.integers(0, len(statements))), f"!>T({spec.tags[-1]});")
    return Part("{ " + " ".join(statements) + " }", True)


@st.composite
def atom(draw: st.DrawFn, spec: Spec, depth: int, timed: bool) -> Part:
    kinds = (
        ["marker"] * 6
        + ["wild", "action", "action"]
        + ["group"] * 3 * (depth > 0)
        + ["elapse"] * 2 * timed
        + ["arrive"] * timed
    )
    kind = draw(st.sampled_from(kinds))
    if kind == "marker":
        name = draw(st.sampled_from(spec.markers))
        base = spec.bases.get(name, name)
        target = EXTRAS[base].target if base in EXTRAS else "v"
        return Part(f"{name}({draw(st.sampled_from([target, '']))})", False)
    if kind == "wild":
        return Part(".", False)
    if kind == "elapse":
        amount = draw(
            st.sampled_from(
                [
                    "1 seconds",
                    "2 sec",
                    "3 seconds",
                    "1.5 seconds",
                    "250 msec",
                    "1 minute",
                    "1 hour",
                    # non-finite (d is 0.0 at first) or beyond year 9999: $error 8
                    "(abs(1.0 / d) + 0.5) sec",
                    "(abs(n) * 1.0E15 + 1.0) days",
                    "(n % 3 + 3) seconds",
                    "(abs(n % 4) + 1) sec",
                ][: 11 - 4 * spec.stateless]
            )
        )
        if not spec.stateless and draw(st.integers(0, 40)) == 23:
            # zero or less: in a loop it fires 1,000 times at one instant, then $error 8 (7.7)
            amount = "(n % 2 - 1) sec"
        spelling = draw(st.sampled_from(["elapse", "elapse", "elapsed"]))
        return Part(f"{spelling}[{amount}]({draw(st.sampled_from(['', 't']))})", False)
    if kind == "arrive":
        # An explicit time stores its firing time: at or before entry it fires at once, so a
        # loop through it must move ``t`` on or it would fire for ever at one instant.
        # Computed components (docs/language.md 5.4) out of range are $error 8 and do not fire;
        # wildcards may stand in any place, the date's too. Stateless programs skip the first five.
        pattern = draw(
            st.sampled_from(
                [
                    "(secondsAfter(2, t))](t)",
                    "(secondsAfter(5, t))](t)",
                    "(secondsAfter(1, t))](t)",
                    ".:.:(n % 60)]()",
                    "(n % 25):(n):(abs(n) % 60)](t)",
                    ".:.:30]()",
                    ".:.:15.5](t)",
                    ".:.:00]()",
                    ".:05]()",
                    "00:10](t)",
                    "2026-01-01 00:00:30](t)",
                    "2026-01-01]()",
                    ".:.:(v % 61)](t)",
                    ".-.-01 00:00:20]()",
                    "2026-.-. .:.:45](t)",
                    ".-.-. .:01]()",
                    "2026-01-(v) 00:(v):00]()",
                ][5 * spec.stateless :]
            )
        )
        return Part(f"arrive[{pattern}", False)
    if kind == "action":
        return draw(action_block(spec))
    inner = draw(regex(spec, depth - 1, timed))
    return Part(f"( {inner.text} )", inner.nullable)


@st.composite
def postfix(draw: st.DrawFn, spec: Spec, depth: int, timed: bool) -> Part:
    item = draw(atom(spec, depth, timed))
    ops = ["", "", "", "*", "+", "?", "{0,2}", "{1,2}", "{2}", "{1,}", "{0,}", "{0,1}"]
    if not item.text.startswith("("):  # three copies of a group nested in a product compile slowly
        ops += ["{2,3}", "{3}", "{1,3}"]
    op = draw(st.sampled_from(ops + ["{0}", "{0,0}"] * (draw(st.integers(0, 5)) == 0)))
    part = _multiplied(item, op)
    if draw(st.integers(0, 5)) == 0:  # multipliers stack (docs/language.md 5.1: A(){2}*), left to right
        part = _multiplied(
            part, draw(st.sampled_from(["*", "?", "+"] + ["{2}", "{0,1}"] * (not item.text.startswith("("))))
        )
    return part


def _multiplied(item: Part, op: str) -> Part:
    if op in ("*", "+", "{1,}", "{0,}") and item.nullable:
        op = "?"  # a loop around an item that can match nothing would be a cycle of actions
    return Part(item.text + op, item.nullable or op in ("*", "?", "{0,2}", "{0,}", "{0,1}", "{0}", "{0,0}"))


@st.composite
def sequence(draw: st.DrawFn, spec: Spec, depth: int, timed: bool) -> Part:
    items = draw(st.lists(postfix(spec, depth, timed), min_size=1, max_size=3))
    return Part(" ".join(i.text for i in items), all(i.nullable for i in items))


@st.composite
def regex(draw: st.DrawFn, spec: Spec, depth: int, timed: bool) -> Part:
    first = draw(sequence(spec, depth, timed))
    if spec.products and depth > 0 and draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(["&", "-"]))
        # A time marker in the left operand of ``-`` is live (no path through the right one
        # matches its time event, so they all end); in either operand of ``&`` it is dead code.
        # Now and then dead markers all the same: the engine must ignore them as the reference does.
        dead = timed and draw(st.integers(0, 3)) == 0
        left = first if op == "-" or not timed else draw(sequence(spec, depth, dead))
        right = draw(sequence(spec, depth, dead))
        # Over-approximate nullability: a loop is then never put around an item that may be empty.
        first = Part(f"{left.text} {op} {right.text}", left.nullable)
    alternatives = [first]
    for _ in range(draw(st.integers(0, 2))):
        alternatives.append(draw(sequence(spec, depth, timed)))
    return Part(" | ".join(a.text for a in alternatives), any(a.nullable for a in alternatives))


@st.composite
def programs(draw: st.DrawFn, products: bool = True, inputs: tuple[str, ...] = ()) -> tuple[str, Spec]:
    """A program; ``inputs``: its ``long`` inputs instead of A, B, C and the optional ones (a
    pipeline's later stage reads the ``long`` outputs ``T`` and ``O`` of the one before)."""
    names = list(inputs) or ["A", "B", "C"][: draw(st.integers(2, 3))]
    names += [name for name in EXTRAS if not inputs and name != "P" and draw(st.integers(0, 4)) == 0]
    names += ["P"] if inputs and draw(st.booleans()) else []
    first, second = names[0], names[1]
    keys = draw(st.sampled_from([1, 1, 2] if GROUPED_ONLY else [0, 0, 0, 0, 1, 1, 2]))
    classes = draw(st.sampled_from([[], [], ["Hi", "Lo"], ["Hi", "Mid", "Lo"]]))
    spec = Spec(
        names,
        names + classes,
        keys > 0,
        keys=keys,
        extras=tuple(n for n in names if n in EXTRAS),
        products=products,
        stateless=keys > 0 and draw(st.booleans()),
        text_key=keys > 0 and draw(st.integers(0, 3)) == 0,
    )
    decls = []
    modulus = draw(st.sampled_from([2, 2, 3, 7]))  # more keys, more instances at once
    for name in names:
        value = EXTRAS[name].key if name in EXTRAS else name
        component = f'"k" + ({value} % {modulus})' if spec.text_key else f"{value} % {modulus}"
        group = [component, f"{value} > 3" if name != second else f"6 / {value} > 2"][:keys]
        ty = EXTRAS[name].ty if name in EXTRAS else "long"
        decl = f"{ty} {name}" + (f" group({', '.join(group)})" if keys else "")
        if name == first and len(classes) == 2:
            decl += draw(
                st.sampled_from([" case { A > 4 ? Hi : Lo }", " case { length(string(A)) > 1 ? Hi : Lo }"])
            ).replace("A", first)
        elif name == first and classes:  # a classification may fail too: $error 4, then 12 / 0 is 0
            decl += draw(
                st.sampled_from(
                    [
                        " case { abs(A) > 6 ? Hi : A >= 2 ? Mid : Lo }",
                        " case { A % 3 == 0 ? Hi : A * 1.5 < 0 ? Mid : Lo }",
                        " case { abs(A) > 6 ? Hi : 12 / A >= 3 ? Mid : Lo }",
                    ]
                )
            ).replace("A", first)
        if name == "E" and draw(st.booleans()):  # classes of a structure input (docs/language.md 3.2),
            # reading its fields; the second may fail ($error 4, the event is then EHi)
            decl += draw(
                st.sampled_from([" case { E.k > 2 ? EHi : ELo }", ' case { 6 / E.k < 2 || E.s == "" ? EHi : ELo }'])
            )
            spec.markers += ["EHi", "ELo"]
            spec.bases.update(EHi="E", ELo="E")
        decls.append(decl)
    # A third of the grouped programs have no time marker: the engine runs those on its compact
    # tables (a record per key), the others on contexts with timers.
    body = draw(regex(spec, DEPTH, timed=not keys or draw(st.integers(0, 2)) > 0))
    # Bare, a top-level ``-`` or ``&`` takes the initial block into its left operand.
    forms = ["{}", "( {} )"] if body.nullable else ["( {} )*", "( {} )*", "{}", "( {} )", "( {} )+"]
    if keys:
        forms += [". ( {} )*"] if not body.nullable else [". {}"]
    # an error that depends on the key: 12 / 0, or a string key that is no number ($error 4 or 8)
    key_error = "!>O(long(group[0])); " if spec.text_key else "!>O(12 / group[0]); "
    init = (
        '{ n = 0; d = 0.0; s = ""; t = now(); a = new long[3]; q = new {long a; string b;}[2]; m = new long[2][]; '
        + ("v = 1; " if draw(st.booleans()) else "")
        + ("b = false; " if draw(st.booleans()) else "")
        + draw(
            st.sampled_from(
                ["", "", "", "!>O(u0 + 1); ", "n = 7 % (n - n); ", "!>O(a[5]); "] + [key_error] * (keys > 0)
            )
        )
        + "}"
    )
    if spec.stateless:
        init = draw(st.sampled_from(["", "{ }", "{ x = 1; }", "{ !>T(0); }", "{ n = 0; }", "{ " + key_error + "}"]))
    form = draw(st.sampled_from(forms)) if draw(st.integers(0, 30)) != 17 else ""  # the initial block alone
    src = (
        f"in {', '.join(decls)}\nout long O, double P, string S, long T, boolean F, {{long a; string b;}} R, time M, "
        f"{{}} Q, long[] AR\n"
        f"{init}\n{form.format(body.text)}\n"
    )
    return src, spec


@st.composite
def traces(draw: st.DrawFn, spec: Spec) -> tuple[Trace, str]:
    """A trace as data and as tester text; it ends a minute after its last event."""
    start = micros_of(START)
    ms = 0
    items: list[tuple[Any, ...]] = [("time", start)]
    for _ in range(draw(st.integers(1, TRACE_ITEMS))):
        if draw(st.integers(0, 2)) == 0:
            ms += draw(st.sampled_from([0, 250, 400, 1000, 1000, 1500, 2000, 3000, 5000, 30_000, 60_000]))
            items.append(("time", start + ms * 1000))
        else:
            name = draw(st.sampled_from([*spec.names, *spec.names, "Z"]))
            if name in EXTRAS:  # a structure written with its field names or positionally
                items.append(("event", name, draw(st.sampled_from(EXTRAS[name].values)), draw(st.booleans())))
                continue
            values = [0, 1, 2, 3, 5, 6, 7, 9, -4, "x", 2**63 - 1, -(2**63), 4.0]
            items.append(("event", name, draw(st.sampled_from(values))))
    items.append(("time", start + (ms + 65_000) * 1000))
    return Trace(items), render(items, start, draw(st.integers(0, 7)))


def render(items: list[tuple[Any, ...]], start: int, style: int = 0) -> str:
    """The trace as text in one of the spellings docs/language.md 10.1 allows (``style`` bits):
    1, later timestamps without their date; 2, milliseconds after a colon, none when zero, hours
    without a leading zero; 4, the events between two timestamps on one line, and comments."""
    parts = []
    for i, item in enumerate(items):
        if item[0] == "time":
            ms = (item[1] - start) // 1000
            s, milli = divmod(ms, 1000)
            m, s = divmod(s, 60)
            h, m = divmod(m, 60)
            date = "" if style & 1 and i > 0 else "2026-01-01 "
            if style & 2:
                clock = f"{h}:{m:02d}:{s:02d}" + (f":{milli:03d}" if milli else "")
            else:
                clock = f"{h:02d}:{m:02d}:{s:02d}.{milli:03d}"
            parts.append(("\n" if style & 4 else "") + f"[{date}{clock}]" + (" // t" if style & 4 else ""))
        else:
            parts.append(f"{item[1]}({_literal(item[2], positional=len(item) > 3 and item[3])})")
    return ("\n" if not style & 4 else " ").join(parts).replace("// t ", "// t\n") + "\n"


def _literal(value: Any, *, positional: bool = False) -> str:
    """A trace value: strings JSON-quoted (backslash escapes), structures as builders or positionally."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        fields = [(k, _literal(v)) for k, v in value.items()]
        return ", ".join(v for _, v in fields) if positional else "{" + ", ".join(f"{k}: {v}" for k, v in fields) + "}"
    return str(value)
