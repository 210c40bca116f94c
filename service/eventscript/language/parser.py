"""A recursive-descent parser for EventScript.

Grammar, loosest binding first::

    program     := decl* regex EOF
    decl        := 'in' input (',' input)* | 'out' type NAME (',' type NAME)*
                 | 'type' NAME '=' type | 'function' type NAME '(' types ')' ':' STRING
    input       := type NAME ('group' '(' exprs ')' | 'case' '{' expr '}')*
    regex       := inter ('|' inter)*                   alternatives
    inter       := seq (('&' | '-') seq)*               intersection, difference
    seq         := postfix+                             sequence
    postfix     := atom ('*' | '+' | '?' | '{' i '}' | '{' i ',' j? '}')*
    atom        := '(' regex ')' | block | NAME '(' NAME? ')' | '.'
                 | ('elapse' | 'elapsed') '[' expr UNIT ']' '(' NAME? ')'
                 | 'arrive' '[' pattern ']' '(' NAME? ')'
    action      := block | '!>' NAME '(' expr? ')' ';' | 'for' '(' NAME ':' expr ',' expr ')' action
                 | or-expr '=' expr ';' | or-expr '?' action (':' action)?

Expressions are Java-like: ``?:``, ``||``, ``&&``, equality, relational, additive,
multiplicative, unary ``!``/``-``, then postfix subscripts, field access and calls.
A ``{`` after a regular-expression element starts a multiplier when an integer and ``}`` or
``,`` follow it, and an action block otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from . import ast
from .check_hints import SIZE_FIELDS
from .diagnostics import Diagnostics
from .lexer import BARE_POINT, KEYWORDS, Token, tokenize, touching
from .source import Pos, SourceFile

#: How deeply constructs may nest: parentheses, blocks, unary operators, subscripts, type
#: constructors. Far beyond any real program; the limit keeps every stage of the compiler within
#: Python's recursion limit. A chain of binary operators (``a + b + c``) is one level, however long.
MAX_NESTING = 100
NESTING_HINT = f"at most {MAX_NESTING} levels of nesting are allowed"
#: How deep an expression's operator tree may be, counting every nesting level and every
#: operator of a chain (``a + b + c`` is a tree of depth two: later stages, and the Python code
#: generated from it, nest one level per operator, and Python compiles at most 200 nested
#: parentheses).
MAX_EXPRESSION_DEPTH = 150
EXPRESSION_DEPTH_HINT = (
    f"an expression may have at most {MAX_EXPRESSION_DEPTH} operators in a chain, counting "
    "enclosing parentheses and operators; sum the parts in separate assignments: "
    "s = a + b + ...; s = s + ...;"
)

#: Where a ``case { ... }`` clause belongs, for one written anywhere else (in an action, after a
#: marker, after an output): a user who meant to classify events is shown the declaration form.
CASE_HINT = (
    "a case clause classifies an input's events where the input is declared, after its name: "
    "in double Temp case { Temp < 0.0 ? Freezing : Warm }; the regular expression then matches "
    "the classes as markers: Freezing(t)"
)

FIELDS_HINT = "structure fields are separated by ';': { string name; double value; }"
COMMA_FIELDS_HINT = "structure fields are separated by ';', not ',': { string name; double value; }"

TIME_UNITS: dict[str, str] = {
    "day": "day",
    "days": "day",
    "hour": "hour",
    "hours": "hour",
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "mins": "minute",
    "second": "second",
    "seconds": "second",
    "sec": "second",
    "secs": "second",
    "millisecond": "millisecond",
    "milliseconds": "millisecond",
    "msec": "millisecond",
    "msecs": "millisecond",
    "microsecond": "microsecond",
    "microseconds": "microsecond",
    "usec": "microsecond",
    "usecs": "microsecond",
}

#: How many for loops may enclose one another: each becomes a Python for statement, and Python
#: compiles at most 20 statically nested blocks.
MAX_FOR_NESTING = 20

#: The hidden variable a marker stores its value in when its target is ``a[e]`` or ``s.f``: this,
#: then the target as written without spaces (not a name a program can write; the same after an
#: edit elsewhere in the program, so that an upgrade sees the same variable).
MARKER_STORE_PREFIX = "$marker:"

#: Words some languages use for the logical operators, and the operators EventScript writes.
WORD_OPERATORS = {"and": "&&", "or": "||", "not": "!"}
WORD_OPERATORS_HINT = "conditions are combined with && (and), || (or) and ! (not): x > 1 && !done"

#: Time zones written after an arrive pattern's time (``arrive[06:00 UTC]``), which is in UTC.
TIME_ZONES = frozenset(("UTC", "GMT", "Z", "UT"))

#: For ``if (c) action``, which the language writes ``c ? action``.
#: The language document, 4.2: "the number n in ... R{n} must be a constant". Given where a
#: multiplier with a computed count ({n}, {n,5}, {2,n}) or a bad one ({-1}, {1.5}) was meant.
MULTIPLIER_HINT = (
    "a multiplier's bounds are integer constants, 0 or more: {3}, {2,5} or {2,}; to repeat a number "
    "of times known only when the program runs, count in a variable: ( R { k = k + 1; k == n ? ... } )*"
)
#: The tokens that end a regular-expression element, so that a '{' after one of them could have
#: been meant as its multiplier.
_ELEMENT_ENDS = (")", ".", "*", "+", "?")
IF_MESSAGE = "there is no 'if' statement: a conditional action is written `condition ? action`"

DECL_KEYWORDS = ("in", "out", "type", "function")
_ATOM_START = ("(", "{", "IDENT", ".", "arrive", "elapse", "elapsed")


class ParseError(Exception):
    def __init__(self, pos: Pos, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.hint = hint


class AssignmentInBranch(ParseError):
    """``c ? m = 1 : m = 2`` read as an expression: an assignment where a branch's value is
    expected. Carries where the conditional expression is, so that an enclosing assignment
    (``n = 3 ? m = 1 : m = 2;``, with '=' for '==') can say what the whole action should be."""

    def __init__(self, pos: Pos, hint: str, cond: ast.Expr, cond_start: int, question: int) -> None:
        super().__init__(pos, "an assignment cannot be a branch of a conditional expression", hint)
        self.cond = cond
        self.cond_start = cond_start
        self.question = question


#: Operators whose result is a boolean: a condition written with one of them (``x = a > 3 ? ...``)
#: is not read as the slip ``x == ...``.
_BOOLEAN_OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "&&", "||", "!")


def _reads_as_condition(e: ast.Expr) -> bool:
    """Whether ``e`` looks like a condition as written: a comparison, a logical operation or a
    boolean literal (the parser knows no types)."""
    return isinstance(e, ast.BoolLit) or (isinstance(e, (ast.Binary, ast.Unary)) and e.op in _BOOLEAN_OPERATORS)


def _stored(marker: ast.Regex, store: ast.RActions | None) -> ast.Regex:
    """The marker, followed by the assignment of its subscripted or field target if it has one
    (``Parser.parse_marker_target``)."""
    return marker if store is None else ast.RSeq(marker.pos, [marker, store])


def _names_a_field(tok: Token) -> bool:
    return tok.kind == "IDENT" or tok.kind in KEYWORDS


def _written_as(first: Token, last: Token, edits: Sequence[tuple[Token, str]]) -> str | None:
    """The text from token ``first`` through token ``last``, on one line, with each token of
    ``edits`` written as its replacement (``n = 3`` with '==' for the '=' gives ``n == 3``): what
    the user should have typed, quoted in a hint. None across an include (no one text)."""
    source = first.pos.source
    if any(t.pos.source is not source for t in (last, *(tok for tok, _ in edits))):
        return None
    pieces: list[str] = []
    at = first.pos.offset
    for tok, replacement in sorted(edits, key=lambda edit: edit[0].pos.offset):
        pieces += [source.text[at : tok.pos.offset], replacement]
        at = tok.pos.offset + len(tok.text)
    pieces.append(source.text[at : last.pos.offset + len(last.text)])
    return " ".join("".join(pieces).split())


def _as_comparison(first: Token, eq: Token, last: Token) -> str:
    """The condition as written from token ``first`` through token ``last``, with '==' for the
    '=' ``eq`` (``n = 3`` gives ``n == 3``)."""
    return _written_as(first, last, [(eq, "==")]) or "x == 3"


def _kind(tok: Token) -> str:
    """An operator token as the tree names it: its kind."""
    return tok.kind


def _misplaced_case(tok: Token, where: str) -> ParseError:
    """A ``case`` clause written ``where`` it cannot stand (only an input's declaration has one)."""
    return ParseError(tok.pos, f"a case clause cannot stand {where}: it belongs to an input's declaration", CASE_HINT)


def _describe(tok: Token) -> str:
    if tok.kind == "EOF":
        return "the end of the file"
    if tok.kind in ("IDENT", "INT", "FLOAT", "STRING"):
        return f"{tok.text!r}"
    return f"'{tok.text}'"


#: Tokens a value ends with: a '.' right after one is not the start of a number.
_VALUE_ENDS = frozenset(("IDENT", "INT", "FLOAT", "STRING", ")", "]", "}"))


class Parser:
    def __init__(self, tokens: list[Token], diagnostics: Diagnostics) -> None:
        self.toks = tokens
        self.i = 0
        self.diagnostics = diagnostics
        self.depth = 0
        #: Binary operators enclosing the current point (see MAX_EXPRESSION_DEPTH).
        self.operators = 0
        #: For loops enclosing the current point (see MAX_FOR_NESTING).
        self.loops = 0
        #: The output events declared so far: ``B(x);`` with B one of them is an emit without '!>'.
        self.outputs: set[str] = set()
        #: How equality operators are read: parse_eq, or while a parenthesis that failed at '='
        #: is read again, a reading that takes '=' for '==' (``_comparison_in_parentheses``).
        self.equality: Callable[[], ast.Expr] = self.parse_eq

    # -- token helpers ----------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        j = min(self.i + k, len(self.toks) - 1)
        return self.toks[j]

    def at(self, *kinds: str) -> bool:
        return self.tok.kind in kinds

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def accept(self, kind: str) -> Token | None:
        if self.tok.kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, what: str | None = None, hint: str | None = None) -> Token:
        if self.tok.kind == kind:
            return self.advance()
        wanted = what or (f"'{kind}'" if kind not in ("IDENT", "INT", "STRING") else kind.lower())
        raise ParseError(self.tok.pos, f"expected {wanted}, found {_describe(self.tok)}", hint)

    def expect_field_name(self) -> Token:
        """A field name: an identifier, or a keyword, which cannot mean anything else where a
        field name is expected (after a field's type, before a builder's ':', after '.'). The
        language document reserves no words, and natural field names such as ``type``, ``in``
        or ``new`` are keywords here."""
        if _names_a_field(self.tok):
            return self.advance()
        return self.expect("IDENT", "a field name")

    def _enter(self, pos: Pos) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ParseError(pos, "nesting is too deep", NESTING_HINT)

    def _leave(self) -> None:
        self.depth -= 1

    def _operator(self, pos: Pos) -> None:
        """One more binary operator in a chain: not a nesting level, but a level of the tree."""
        self.operators += 1
        if self.depth + self.operators > MAX_EXPRESSION_DEPTH:
            raise ParseError(pos, "this expression is too deep", EXPRESSION_DEPTH_HINT)

    # -- program ----------------------------------------------------------------------

    def parse_program(self) -> ast.Program:
        start = self.tok.pos
        decls: list[ast.Decl] = []
        try:
            return self._parse_program(start, decls)
        except RecursionError:
            # Deep parentheses in expressions cost many Python frames per level; report them as
            # too deep rather than let the interpreter's limit escape as an exception.
            self.diagnostics.error(self.tok.pos, "nesting is too deep", NESTING_HINT)
            return ast.Program(decls, None, start)

    def _parse_program(self, start: Pos, decls: list[ast.Decl]) -> ast.Program:
        failed = False
        while self.at(*DECL_KEYWORDS):
            self.depth = self.operators = 0
            first = self.i
            try:
                decls.append(self.parse_decl())
                self._declaration_semicolon()
            except ParseError as e:
                self._report(e)
                self._skip_to_decl(first)
                failed = True
        regex: ast.Regex | None = None
        if self.at("EOF") and failed:
            # The failed declaration's recovery skipped to the end: the regular expression is
            # most likely in what was skipped, and "no regular expression" would be bogus.
            return ast.Program(decls, None, start)
        if self.at("EOF"):
            self.diagnostics.error(
                self.tok.pos,
                "the program has no regular expression",
                "after the declarations, write the regular expression of events to match",
            )
            return ast.Program(decls, None, start)
        try:
            self.depth = self.operators = 0
            if self.at("case"):
                raise self._case_after_declarations(decls)
            regex = self.parse_regex()
            if self.at(*DECL_KEYWORDS):
                raise ParseError(
                    self.tok.pos,
                    "declarations must come before the regular expression",
                    f"move this '{self.tok.text}' declaration above the regular expression",
                )
            if not self.at("EOF"):
                raise ParseError(
                    self.tok.pos, f"unexpected {_describe(self.tok)} in the regular expression", self._regex_hint()
                )
        except ParseError as e:
            self.diagnostics.error(e.pos, e.message, e.hint)
        return ast.Program(decls, regex, start)

    def _report(self, e: ParseError) -> None:
        """Report a parse error, or, where it is at a number written with a bare point (``.5``,
        ``1.``: the language wants digits on both sides) or at a word written for an operator
        (``a and b``), say that instead."""
        slip = self._bare_point(e) or self._word_operator(e) or self._size_method(e)
        self.diagnostics.error(*((e.pos, e.message, e.hint) if slip is None else slip))

    def _word_operator(self, e: ParseError) -> tuple[Pos, str, str] | None:
        """(where, what, hint) when the error is at ``and`` or ``or`` written for '&&' or '||'
        (``x > 1 and x < 5``), or just after ``not`` written for '!' (``not done``): the parser
        reads such a word as a name, and fails at the next token."""
        word = self.toks[self.i]
        if word.pos != e.pos:
            return None
        if word.kind != "IDENT" or word.text not in WORD_OPERATORS:
            word = self.toks[self.i - 1] if self.i > 0 else word
            if word.kind != "IDENT" or word.text != "not":
                return None
        symbol = WORD_OPERATORS[word.text]
        return word.pos, f"'{word.text}' is not an operator: write {symbol}", WORD_OPERATORS_HINT

    def _size_method(self, e: ParseError) -> tuple[Pos, str, str] | None:
        """(where, what, hint) when the error is at the '(' of ``a.length()`` (or ``.size()``,
        ``.count()``, ``.len()``): a method call, which the language does not have; the size is
        the library function ``length``."""
        i = self.i
        if i < 3 or self.toks[i].kind != "(" or self.toks[i].pos != e.pos:
            return None
        name, dot = self.toks[i - 1], self.toks[i - 2]
        if name.kind != "IDENT" or name.text not in SIZE_FIELDS or dot.kind != ".":
            return None
        return (
            name.pos,
            f"'.{name.text}()' calls a method, and EventScript has none",
            f"the number of elements (of a string, characters) is length({self._names_before(i - 3)})",
        )

    def _names_before(self, last: int) -> str:
        """The value ending at token ``last`` when it is a name or a chain of fields (``x``,
        ``x.v``), as written; ``a`` otherwise (it ends with a subscript or a call)."""
        first = last
        while first >= 2 and self.toks[first - 1].kind == "." and self.toks[first - 2].kind == "IDENT":
            first -= 2
        written = None
        if self.toks[last].kind == "IDENT" and (first == 0 or self.toks[first - 1].kind not in (".", "]", ")")):
            written = _written_as(self.toks[first], self.toks[last], [])
        return written or "a"

    def _bare_point(self, e: ParseError) -> tuple[Pos, str, str] | None:
        """(where, what, hint) when the error's token is a '.' glued to a number on one side only:
        ``.5`` (an INT right after it, and no value right before: ``x.5`` is another slip) or ``1.``
        (an INT right before it, no digit after)."""
        i = self.i
        dot = self.toks[i]
        if dot.kind != "." or dot.pos != e.pos:
            return None
        after = self.toks[i + 1] if i + 1 < len(self.toks) else None
        before = self.toks[i - 1] if i > 0 else None
        ends_value = before is not None and before.kind in _VALUE_ENDS and touching(before, dot)
        if after is not None and after.kind == "INT" and touching(dot, after) and not ends_value:
            number = f"0.{after.text}"
        elif before is not None and before.kind == "INT" and touching(before, dot):
            number, dot = f"{before.text}.0", before
        else:
            return None
        return dot.pos, BARE_POINT, f"write {number}"

    def _case_after_declarations(self, decls: list[ast.Decl]) -> ParseError:
        """``case`` where the regular expression starts: after an output's name (outputs are not
        classified), or on a line of its own."""
        if decls and isinstance(decls[-1], ast.OutputDecl) and self.tok.pos.line == self.toks[self.i - 1].pos.line:
            return ParseError(
                self.tok.pos,
                "an output event has no case clause: a case clause classifies an input's events",
                CASE_HINT,
            )
        return _misplaced_case(self.tok, "on its own, after the declarations")

    def _regex_hint(self) -> str | None:
        t = self.tok
        if t.kind == ")":
            return "this parenthesis has no matching '('"
        if t.kind == "}":
            return "this brace has no matching '{'"
        return None

    def _declaration_semicolon(self) -> None:
        """A ';' after a declaration (``in long A;``, as C ends one) is reported where it is, and
        skipped: without this it would be read as the start of the regular expression, with a
        hint about event markers."""
        while self.at(";"):
            self.diagnostics.error(
                self.tok.pos,
                "a declaration ends without ';': remove it",
                "declarations are not terminated: in long A, long B on one line, out double C on the next, "
                "then the regular expression",
            )
            self.advance()

    def _skip_to_decl(self, start: int) -> None:
        if self.i == start:
            self.advance()
        # The failed declaration may have stopped at the next one's keyword: keep that one.
        while not self.at("EOF", *DECL_KEYWORDS):
            self.advance()

    # -- declarations -----------------------------------------------------------------

    def parse_decl(self) -> ast.Decl:
        t = self.advance()
        if t.kind == "in":
            entries = [self.parse_input_entry()]
            while self._another_entry(t, self.parse_input_entry):
                entries.append(self.parse_input_entry())
            return ast.InputDecl(entries, t.pos)
        if t.kind == "out":
            entries_out = [self.parse_output_entry()]
            while self._another_entry(t, self.parse_output_entry):
                entries_out.append(self.parse_output_entry())
            self.outputs.update(entry.name for entry in entries_out)
            return ast.OutputDecl(entries_out, t.pos)
        if t.kind == "type":
            name = self.expect("IDENT", "a type name")
            self.expect("=", hint="write: type Name = { ... }")
            ty = self.parse_type()
            return ast.TypeDecl(name.text, ty, name.pos)
        # function
        result = self.parse_type()
        name = self.expect("IDENT", "a function name")
        self.expect("(")
        params: list[ast.TypeExpr] = []
        if not self.at(")"):
            params.append(self.parse_param())
            while self.accept(","):
                params.append(self.parse_param())
        self.expect(")")
        self.expect(":", hint='write: function string f(string): "package.module:attribute"')
        impl = self.expect(
            "STRING", "a string naming the implementation", 'write the Python callable as "package.module:attribute"'
        )
        return ast.FunctionDecl(result, name.text, params, str(impl.value), impl.pos, name.pos)

    def _another_entry(self, keyword: Token, parse_entry: Callable[[], object]) -> bool:
        """Whether another event of the declaration follows: after ',', or after a ';' written
        for it (``in long A; long B``, as C separates declarations), which is reported with the
        declaration as it should be written and skipped, so that ``long B`` is read as the next
        event rather than as a marker ``long`` missing its '('."""
        if self.accept(","):
            return True
        if not self.at(";"):
            return False
        semicolon = self.tok
        last = self._entry_after_semicolon(parse_entry)
        if last is None:
            return False
        written = _written_as(keyword, last, [(semicolon, ",")])
        self.diagnostics.error(
            semicolon.pos,
            "a declaration ends without ';': write ',' between its events",
            f"write {written}" if written else "write in long A, long B",
        )
        self.advance()
        return True

    def _entry_after_semicolon(self, parse_entry: Callable[[], object]) -> Token | None:
        """The last token of the event declared after the ';' at the current token, if the text
        after it reads as one (a type, a name and clauses; but ``{} B()``, an empty action block
        and a marker, starts the regular expression, which may start with '(' after any other
        event); None otherwise. The position is kept: used only at a ';', which no valid
        declaration has."""
        semicolon = self.i
        last = None
        with self._trial(semicolon + 1) as trial:
            parse_entry()
            marker = self.toks[semicolon + 1].kind == "{" and self.at("(")
            if not (trial.has_errors or marker):
                last = self.toks[self.i - 1]
        self.i = semicolon
        return last

    def parse_param(self) -> ast.TypeExpr:
        ty = self.parse_type()
        if self.at("IDENT") and self.peek().kind in (",", ")"):
            self.advance()  # an optional parameter name, for documentation only
        return ty

    def parse_input_entry(self) -> ast.InputEntry:
        if self.at("case"):
            raise self._case_before_input()
        ty = self.parse_type()
        if self.at("case"):
            raise ParseError(self.tok.pos, "a case clause comes after the input's name, not before it", CASE_HINT)
        name = self.expect("IDENT", "an input event name")
        entry = ast.InputEntry(ty, name.text, name.pos)
        while self.at("group", "case"):
            t = self.advance()
            if t.kind == "group":
                if entry.group is not None:
                    raise ParseError(t.pos, f"{name.text} has two group clauses")
                self.expect("(", hint=f"write: group({name.text}.field)")
                exprs = [self.parse_expr()]
                while self.accept(","):
                    exprs.append(self.parse_expr())
                self.expect(")")
                entry.group, entry.group_pos = exprs, t.pos
            else:
                if entry.case is not None:
                    raise ParseError(t.pos, f"{name.text} has two case clauses")
                self.expect("{", hint=f"write: case {{ {name.text} > 0 ? Positive : Other }}")
                e = self.parse_expr()
                self.expect("}")
                entry.case, entry.case_pos = self._case_node(e), t.pos
        return entry

    def _case_before_input(self) -> ParseError:
        """``case`` where an input's type is expected: after ``in``, or after a ',' that ends the
        input it was meant for (``in double Temp, case { ... }``)."""
        if self.toks[self.i - 1].kind == ",":
            message = "a case clause follows its input's name without a ',' (a ',' starts the next input)"
        else:
            message = "a case clause comes after the input's type and name, not before them"
        return ParseError(self.tok.pos, message, CASE_HINT)

    def _case_node(self, e: ast.Expr) -> ast.CaseNode:
        if isinstance(e, ast.Name):
            return ast.CaseName(e.name, e.pos)
        if isinstance(e, ast.CondExpr):
            return ast.CaseArm(e.cond, self._case_node(e.then), self._case_node(e.otherwise), e.pos)
        raise ParseError(
            e.pos,
            "an event-case arm must be an event name or another 'condition ? Name : ...'",
            "write: case { X > 0 ? Positive : Other }",
        )

    def parse_output_entry(self) -> ast.OutputEntry:
        ty = self.parse_type()
        name = self.expect("IDENT", "an output event name")
        return ast.OutputEntry(ty, name.text, name.pos)

    # -- types ------------------------------------------------------------------------

    def parse_type(self) -> ast.TypeExpr:
        ty = self.parse_base_type()
        depth = self.depth
        try:
            while self.at("[") and self.peek().kind == "]":
                pos = self.advance().pos
                self._enter(pos)  # each [] nests the type one level deeper
                self.advance()
                ty = ast.ArrayTypeExpr(ty, pos)
            return ty
        finally:
            self.depth = depth

    def parse_base_type(self) -> ast.TypeExpr:
        t = self.tok
        if t.kind == "IDENT":
            self.advance()
            return ast.TypeName(t.text, t.pos)
        if t.kind == "{":
            self.advance()
            self._enter(t.pos)
            fields: list[ast.StructField] = []
            comma_reported = False
            while not self.at("}"):
                fty = self.parse_type()
                fname = self.expect_field_name()
                fields.append(ast.StructField(fty, fname.text, fname.pos))
                if self.at(",") and self.peek().kind != "}":
                    # { string a, string b }: the separator of builders and lists. Report the
                    # first and read on, so that the declaration and the program after it are
                    # still parsed (and not reported as missing).
                    if not comma_reported:
                        self.diagnostics.error(
                            self.tok.pos, f"expected ';' after field {fname.text}", COMMA_FIELDS_HINT
                        )
                        comma_reported = True
                    self.advance()
                elif not self.accept(";") and not self.at("}"):
                    raise ParseError(self.tok.pos, f"expected ';' after field {fname.text}", FIELDS_HINT)
            self.expect("}")
            self._leave()
            return ast.StructTypeExpr(fields, t.pos)
        raise ParseError(
            t.pos,
            f"expected a type, found {_describe(t)}",
            "types are boolean, double, long, string, time, object, T[], { T name; ... } or a name defined with 'type'",
        )

    # -- regular expressions ----------------------------------------------------------

    def parse_regex(self) -> ast.Regex:
        self._enter(self.tok.pos)
        first = self.parse_inter()
        items = [first]
        while self.accept("|"):
            items.append(self.parse_inter())
        self._leave()
        return first if len(items) == 1 else ast.RAlt(first.pos, items)

    def parse_inter(self) -> ast.Regex:
        left = self.parse_seq()
        while self.at("&", "-"):
            op = self.advance()
            right = self.parse_seq()
            left = ast.RInter(op.pos, left, right) if op.kind == "&" else ast.RDiff(op.pos, left, right)
        return left

    def parse_seq(self) -> ast.Regex:
        if self.at("case"):
            raise _misplaced_case(self.tok, "in the regular expression")
        if not self.at(*_ATOM_START):
            raise ParseError(
                self.tok.pos,
                f"expected an event marker, '(' or an action block, found {_describe(self.tok)}",
                "event markers are written Name() or Name(variable)",
            )
        items = [self.parse_postfix()]
        while self.at(*_ATOM_START):
            items.append(self.parse_postfix())
        if self.at("case"):  # (nothing else in the language follows a marker with 'case')
            raise _misplaced_case(self.tok, "in the regular expression")
        return items[0] if len(items) == 1 else ast.RSeq(items[0].pos, items)

    def _at_multiplier(self) -> bool:
        return self.at("{") and self.peek().kind == "INT" and self.peek(2).kind in ("}", ",")

    def _at_unclosed_multiplier(self) -> bool:
        """``{3`` followed by what cannot continue an expression (``)``, ``|``, a marker, the end):
        a multiplier missing its ``}``, not an action block (which would be reported as unclosed)."""
        return (
            self.at("{")
            and self.peek().kind == "INT"
            and self.peek(2).kind in (")", "(", "|", "EOF", "IDENT", "elapse", "elapsed", "arrive")
        )

    def parse_postfix(self) -> ast.Regex:
        item = self.parse_atom()
        depth = self.depth
        try:
            return self._multipliers(item)
        finally:
            self.depth = depth  # each multiplier nests the item one level deeper

    def _multipliers(self, item: ast.Regex) -> ast.Regex:
        while True:
            if self.at("*", "+", "?"):
                op = self.advance()
                self._enter(op.pos)
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[op.kind]
                item = ast.RRepeat(item.pos, item, low, high, op.pos)
            elif self.at("{") and self.peek().kind == "," and self.peek(2).kind == "INT":
                high_text = self.peek(2).text
                raise ParseError(
                    self.peek().pos,
                    "a multiplier needs its lower bound before ','",
                    f"write {{0,{high_text}}} for at most {high_text} repetitions",
                )
            elif self._at_unclosed_multiplier():
                raise ParseError(
                    self.tok.pos, "this multiplier is not closed", "multipliers are written {i}, {i,j} or {i,}"
                )
            elif self._at_multiplier():
                op = self.advance()
                self._enter(op.pos)
                low = self.advance().int_value()
                high = low
                if self.accept(","):
                    high = None
                    if self.at("INT"):
                        high = self.advance().int_value()
                self.expect("}", hint=MULTIPLIER_HINT)
                if high is not None and high < low:
                    raise ParseError(
                        op.pos,
                        f"in {{{low},{high}}} the upper bound is below the lower bound",
                        f"write the smaller bound first: {{{high},{low}}}",
                    )
                item = ast.RRepeat(item.pos, item, low, high, op.pos)
            else:
                return item

    def parse_atom(self) -> ast.Regex:
        t = self.tok
        if t.kind == "(":
            self.advance()
            if self.at(")"):
                raise ParseError(
                    self.tok.pos,
                    "empty parentheses in the regular expression",
                    "an event marker needs its name: Name()",
                )
            inner = self.parse_regex()
            self.expect(")", hint=f"the '(' at {t.pos.line}:{t.pos.col} is not closed")
            return inner
        if t.kind == "{":
            block = self.parse_block()
            return ast.RActions(t.pos, block, order=t.index)
        if t.kind == ".":
            self.advance()
            if self.at("(") and self.peek().kind == ")":
                raise ParseError(
                    t.pos, "the wildcard '.' takes no parentheses", "write '.' alone: its value has no single type"
                )
            return ast.RWildcard(t.pos)
        if t.kind in ("elapse", "elapsed"):
            self.advance()
            self.expect("[", hint="write elapse[10 seconds]()")
            amount = self.parse_expr()
            if isinstance(amount, ast.Name) and amount.name in TIME_UNITS and self.at("INT", "FLOAT"):
                raise ParseError(
                    amount.pos,
                    "an elapse marker gives the amount before the unit",
                    f"write {t.text}[{self.tok.text} {amount.name}]()",
                )
            unit = self.expect("IDENT", "a time unit (days, hours, minutes, seconds, msec, usec)")
            if unit.text not in TIME_UNITS:
                raise ParseError(
                    unit.pos,
                    f"unknown time unit {unit.text!r}",
                    "use day(s), hour(s), minute(s), second(s)/sec, millisecond(s)/msec or microsecond(s)/usec",
                )
            self.expect("]")
            target, tpos, store = self.parse_marker_target(self._written_since(t))
            return _stored(
                ast.RElapse(t.pos, amount, TIME_UNITS[unit.text], unit.pos, target, tpos, order=t.index), store
            )
        if t.kind == "arrive":
            self.advance()
            self.expect("[", hint="write arrive[9:00]() or arrive[(deadline)]()")
            pattern = self.parse_arrive_pattern()
            self.expect("]")
            target, tpos, store = self.parse_marker_target(self._written_since(t))
            return _stored(ast.RArrive(t.pos, pattern, target, tpos, order=t.index), store)
        if t.kind == "IDENT":
            self.advance()
            if self.at("["):
                raise self._not_a_time_marker(t)
            if not self.at("("):
                raise ParseError(
                    self.tok.pos,
                    f"expected '(' after event name {t.text}",
                    f"write {t.text}() to match the event, or {t.text}(x) to keep its value in x",
                )
            target, tpos, store = self.parse_marker_target(t.text)
            return _stored(ast.RMarker(t.pos, t.text, target, tpos, order=t.index), store)
        raise ParseError(t.pos, f"expected an event marker, found {_describe(t)}")

    def _not_a_time_marker(self, name: Token) -> ParseError:
        """``after[5 minutes]()``: a name followed by '[', as only the time markers are written.
        The hint is the elapse marker when the brackets hold an amount and a time unit, with the
        marker's target as written, else both time markers' forms. The position is kept."""
        message = f"{name.text!r} is not a time marker: the time markers are elapse[...] and arrive[...]"
        i = self.i
        amount, unit, close = (self.toks[min(i + k, len(self.toks) - 1)] for k in (1, 2, 3))
        duration = amount.kind in ("INT", "FLOAT") and unit.text in TIME_UNITS and close.kind == "]"
        if not duration:
            return ParseError(name.pos, message, "write elapse[5 minutes]() or arrive[9:00]()")
        target = "()"
        if self.peek(4).kind == "(" and self.peek(5).kind == "IDENT" and self.peek(6).kind == ")":
            target = f"({self.peek(5).text})"
        return ParseError(name.pos, message, f"write elapse[{amount.text} {unit.text}]{target}")

    def _written_since(self, t: Token) -> str:
        """The source text from token ``t`` to the current token, on one line (``elapse[1 hour]``),
        so that a hint shows the marker as the user wrote it."""
        text = t.pos.source.text[t.pos.offset : self.tok.pos.offset]
        return " ".join(text.split()) if self.tok.pos.source is t.pos.source else t.text

    def parse_marker_target(self, what: str) -> tuple[str | None, Pos | None, ast.RActions | None]:
        """The marker's target variable: a name, or ``a[e]`` / ``s.f`` (language document 2.3 and
        2.5: a marker stores the event's value "in a variable", and a variable may be
        subscripted or a structure field). Such a target is stored in a hidden variable named
        after it, and assigned from it by the action returned third, placed right after the
        marker (``_stored``) at the target's place in the program text: what an action block
        written there would do."""
        opened = self.expect("(", hint=f"write {what}() or {what}(variable)")
        unclosed = f"the '(' of {what} at {opened.pos.line}:{opened.pos.col} is not closed: write {what}() or {what}(x)"
        if self.at("IDENT") and self.peek().kind in ("[", "."):
            first = self.tok
            target = self.parse_postfix_expr()
            written = "".join(self._written_since(first).split())
            self.expect(")", hint="an event marker holds one variable: x, a[i] or s.f")
            if not isinstance(target, (ast.Index, ast.FieldAccess)):  # (a call's result, as f(x).y)
                raise ParseError(target.pos, "an event marker stores its value in a variable: x, a[i] or s.f")
            hidden = MARKER_STORE_PREFIX + written
            store = ast.RActions(
                first.pos,
                ast.Block(first.pos, [ast.Assign(first.pos, target, ast.Name(first.pos, hidden))]),
                order=first.index,
            )
            return hidden, first.pos, store
        if self.at("IDENT"):
            v = self.advance()
            self.expect(")", hint="an event marker holds one variable: x, a[i] or s.f")
            return v.text, v.pos, None
        self.expect(")", "')' or a variable name", hint=unclosed)
        return None, None, None

    def parse_arrive_pattern(self) -> ast.ArrivePattern:
        start = self.tok.pos
        # A whole-pattern time expression: arrive[t] or arrive[(expr)].
        if self.at("IDENT") and self.peek().kind == "]":
            t = self.advance()
            return ast.ArrivePattern(start, time_expr=ast.Name(t.pos, t.text))
        first = self.parse_pattern_component()
        if isinstance(first, ast.Expr) and self.at("]") and not isinstance(first, (ast.IntLit, ast.FloatLit)):
            return ast.ArrivePattern(start, time_expr=first)
        date: list[ast.PatternComponent] | None = None
        if self.at("-"):
            self.advance()
            month = self.parse_pattern_component()
            self.expect("-", hint="dates are written YYYY-MM-DD")
            day = self.parse_pattern_component()
            date = [first, month, day]
            if self.at("]"):
                return ast.ArrivePattern(start, date=date, time=None)
            first = self.parse_pattern_component()
        times = [first]
        while self.accept(":"):
            times.append(self.parse_pattern_component())
        if len(times) < 2 or len(times) > 3:
            raise ParseError(
                start,
                "a time pattern has two (H:MM) or three (H:MM:SS) components",
                "write arrive[9:00](), arrive[.:00:00]() or arrive[(someTime)]()",
            )
        if self.at("IDENT") and self.tok.text.upper() in TIME_ZONES:
            raise ParseError(
                self.tok.pos,
                f"an arrive pattern names no time zone: remove {self.tok.text!r}",
                "patterns are matched in UTC (a host may configure another zone): "
                f"write arrive[{self._pattern_as_written(start)}]()",
            )
        if not self.at("]"):
            raise ParseError(self.tok.pos, f"unexpected {_describe(self.tok)} in the arrive pattern")
        return ast.ArrivePattern(start, date=date, time=times)

    def _pattern_as_written(self, start: Pos) -> str:
        """The arrive pattern from ``start`` to the token before the current one, as written on
        one line (``06:00``); ``9:00`` across an include."""
        last = self.toks[self.i - 1]
        if last.pos.source is not start.source:
            return "9:00"
        return " ".join(start.source.text[start.offset : last.pos.offset + len(last.text)].split())

    def parse_pattern_component(self) -> ast.PatternComponent:
        t = self.tok
        if t.kind == ".":
            self.advance()
            return ast.Wild(t.pos)
        if t.kind == "INT":
            self.advance()
            return ast.IntLit(t.pos, t.int_value())
        if t.kind == "FLOAT":
            self.advance()
            return ast.FloatLit(t.pos, t.float_value())
        if t.kind == "(":
            self.advance()
            e = self.parse_expr()
            self.expect(")")
            if isinstance(e, ast.IntLit | ast.FloatLit):
                e.parenthesized = True
            return e
        raise ParseError(
            t.pos, f"expected a number, '.' or a parenthesized expression in the arrive pattern, found {_describe(t)}"
        )

    # -- actions ----------------------------------------------------------------------

    def parse_block(self) -> ast.Block:
        open_ = self.expect("{")
        depth = self.depth
        self._enter(open_.pos)
        actions: list[ast.Action] = []
        try:
            while not self.at("}"):
                if self.at("EOF"):
                    raise ParseError(open_.pos, "this action block is not closed", "add '}'")
                try:
                    a = self.parse_action()
                    if a is not None:
                        actions.append(a)
                except ParseError as e:
                    self.depth = depth + 1  # what the failed action entered is left
                    self._report(e)
                    self._recover_in_block()
            self.expect("}")
        finally:
            self.depth = depth
        return ast.Block(open_.pos, actions)

    def _recover_in_block(self) -> None:
        depth = 0
        while not self.at("EOF"):
            k = self.tok.kind
            if k in ("{", "(", "["):
                depth += 1
            elif k in (")", "]"):
                depth = max(0, depth - 1)
            elif k == "}":
                if depth == 0:
                    return
                depth -= 1
            elif k == ";" and depth == 0:
                self.advance()
                return
            self.advance()

    def parse_action(self) -> ast.Action | None:
        start = self.i
        t = self.tok
        if t.kind == ";":
            self.advance()
            return None
        if t.kind == "{":
            return self.parse_block()
        if t.kind == "!>":
            self.advance()
            name = self.expect("IDENT", "an output event name after '!>'")
            self.expect("(", hint=f"write !>{name.text}(value);")
            value = None if self.at(")") else self.parse_expr()
            self.expect(")")
            self.expect(";", hint="every emit action ends with ';'")
            return ast.Emit(t.pos, name.text, name.pos, value)
        if t.kind == "for":
            self.advance()
            self.expect("(", hint="write for (i: 0, n-1) action")
            var = self.expect("IDENT", "a loop variable")
            self.expect(":", hint="write for (i: 0, n-1) action")
            low = self.parse_expr()
            self.expect(",", hint="write for (i: 0, n-1) action")
            high = self.parse_expr()
            self.expect(")")
            if self.loops >= MAX_FOR_NESTING:
                raise ParseError(
                    t.pos,
                    "for loops are nested too deeply",
                    f"at most {MAX_FOR_NESTING} for loops may enclose one another",
                )
            self._enter(t.pos)
            self.loops += 1
            try:
                body = self.parse_action()
            finally:
                self.loops -= 1
            self._leave()
            if body is None:
                body = ast.Block(t.pos, [])
            return ast.ForAction(t.pos, var.text, var.pos, low, high, body)
        self._enter(t.pos)
        try:
            e = self.parse_or()
            if self.at("="):
                eq = self.advance()
                if not isinstance(e, (ast.Name, ast.Index, ast.FieldAccess)):
                    raise ParseError(
                        e.pos,
                        "cannot assign to this expression",
                        "the left side of '=' must be a variable, a[i] or s.f",
                    )
                return self._assignment_or_slip(t, e, eq)
            if self.at("?"):
                return self._conditional_action(e)
            if self.at("=="):
                raise ParseError(self.tok.pos, "expected '=' or '?' after the expression")
            raise self._action_slip(start, e) or ParseError(
                self.tok.pos,
                f"expected '=' or '?' after the expression, found {_describe(self.tok)}",
                "an action is an assignment x = e;, an emit !>Name(e);, a conditional c ? action or a for loop",
            )
        finally:
            self._leave()

    def _action_slip(self, start: int, e: ast.Expr) -> ParseError | None:
        """The error for an action that read as the expression ``e`` (from token ``start``) and
        then failed, when it is a slip from another language: ``if (c) action`` (read as a call
        of ``if``), or ``B(x);`` for an output B (an emit without its '!>'). None otherwise."""
        first = self.toks[start]
        if isinstance(e, ast.Call) and e.name == "if" and len(e.args) == 1 and not self.at(";"):
            return self._if_statement(start)
        if isinstance(e, ast.Name) and e.name == "if":
            return ParseError(first.pos, IF_MESSAGE, "write the condition, then '?' and the action: x > 1 ? !>B(x);")
        if isinstance(e, ast.Call) and e.name in self.outputs and self.at(";"):
            written = _written_as(first, self.tok, []) or f"{e.name}(x);"
            return ParseError(first.pos, f"{e.name} is an output event: emit it with !>", f"write !>{written}")
        if self.at("}", ",") and self._block_follows_an_element(start):
            return ParseError(
                self.tok.pos,
                f"expected '=' or '?' after the expression, found {_describe(self.tok)}",
                f"{MULTIPLIER_HINT}; an action block holds actions such as x = e; or !>Name(e);",
            )
        return None

    def _block_follows_an_element(self, start: int) -> bool:
        """Whether token ``start`` opens an action block right after a regular-expression element,
        where ``A() {n}`` or ``A() {n, 3}`` was a multiplier with a computed count."""
        return start >= 2 and self.toks[start - 1].kind == "{" and self.toks[start - 2].kind in _ELEMENT_ENDS

    def _if_statement(self, start: int) -> ParseError:
        """``if (c) action``: the conditional action it means, ``c ? action``, with the user's own
        condition and action in the hint. The position is kept (at the action after the ')')."""
        condition = _written_as(self.toks[start + 2], self.toks[self.i - 2], [])
        action = None
        resume = self.i
        with self._trial(resume) as trial:
            self.parse_action()
            if not trial.has_errors:
                action = _written_as(self.toks[resume], self.toks[self.i - 1], [])
        self.i = resume
        meant = f"{condition} ? {action}" if condition and action else "x > 1 ? !>B(x);"
        return ParseError(self.toks[start].pos, IF_MESSAGE, f"write {meant}")

    def _assignment_or_slip(self, first: Token, target: ast.Expr, eq: Token) -> ast.Action:
        """The rest of ``target = value;``; or, when that fails to parse but the text after the
        '=' reads as a conditional action (``n = 3 ? { !>L(n); }``), the conditional action the
        user meant, reported as "did you mean '=='?" and kept (with '==') so that the rest of the
        block is still parsed and checked. Only a value that is not an expression is taken
        for a slip: ``n = 3 ? 1 : 2;`` stays an assignment."""
        after_eq = self.i
        try:
            value = self.parse_expr()
            self.expect(";", hint="every assignment ends with ';'")
            return ast.Assign(eq.pos, target, value)
        except ParseError as error:
            failed_at = self.i
            slip = self._comparison_slip(after_eq, target, eq)
            if slip is None:
                self.i = failed_at
                raise self._with_condition_meant(error, first, eq, after_eq) from None
        meant, last = slip
        self.diagnostics.error(
            eq.pos,
            "'=' assigns a value, but a conditional action follows: did you mean '=='?",
            f"a condition compares with '==': write {_as_comparison(first, eq, last)} ? ...",
        )
        return meant

    def _with_condition_meant(self, error: ParseError, first: Token, eq: Token, after_eq: int) -> ParseError:
        """``error``, or for ``n = 3 ? m = 1 : m = 2;`` (an assignment in a branch of the
        conditional expression just after the '=' ``eq``, whose condition is no comparison) the
        same error with a hint that reads ``n = 3`` as the condition ``n == 3`` it must have
        been."""
        if not (
            isinstance(error, AssignmentInBranch)
            and error.cond_start == after_eq
            and not _reads_as_condition(error.cond)
        ):
            return error
        condition = _as_comparison(first, eq, self.toks[error.question - 1])
        hint = self._branch_assignment_hint(condition, error.question) + " (a condition compares with '==')"
        return AssignmentInBranch(error.pos, hint, error.cond, error.cond_start, error.question)

    def _comparison_slip(self, start: int, left: ast.Expr, eq: Token) -> tuple[ast.IfAction, Token] | None:
        """``left == right ? action (: action)?``, read from token ``start`` (just after the '='),
        and the last token before its '?'; None, with nothing reported, if the text does not
        read so. Used only after a parse has failed, to tell this slip from other errors."""
        with self._trial(start) as trial:
            right = self.parse_or()
            if not self.at("?"):
                return None
            last = self.toks[self.i - 1]
            meant = self._conditional_action(ast.Binary(eq.pos, "==", left, right))
            return None if trial.has_errors else (meant, last)
        return None  # the attempt raised a syntax error

    @contextmanager
    def _trial(self, start: int) -> Iterator[Diagnostics]:
        """Read from token ``start`` as something a slip would have meant, after a parse has
        failed: the errors of the attempt go to the diagnostics yielded, which only tell that it
        failed, and a syntax error it raises ends the ``with`` block (the statement after it
        runs). The nesting counters are restored; the position is the caller's to set."""
        self.i = start
        reported = self.diagnostics
        self.diagnostics = Diagnostics()
        depth, operators, loops = self.depth, self.operators, self.loops
        equality = self.equality
        try:
            yield self.diagnostics
        except (ParseError, RecursionError):
            pass
        finally:
            self.diagnostics = reported
            self.depth, self.operators, self.loops = depth, operators, loops
            self.equality = equality

    def _conditional_action(self, cond: ast.Expr) -> ast.IfAction:
        """The rest of ``cond ? action (: action)?``, from the '?'."""
        q = self.expect("?")
        then = self.parse_action() or ast.Block(q.pos, [])
        otherwise = None
        if self.accept(":"):
            otherwise = self.parse_action() or ast.Block(q.pos, [])
        return ast.IfAction(cond.pos, cond, then, otherwise)

    # -- expressions ------------------------------------------------------------------

    def parse_expr(self) -> ast.Expr:
        self._enter(self.tok.pos)
        try:
            cond_start = self.i
            cond = self.parse_or()
            if self.at("?"):
                question = self.i
                self.advance()
                then = self.parse_expr()
                if self.at("="):  # a syntax error: ':' is expected
                    self._no_assignment_after(then, cond, cond_start, question)
                self.expect(":", hint="a conditional expression is written c ? a : b")
                otherwise = self.parse_expr()
                if self.at("="):  # a syntax error wherever the expression is
                    self._no_assignment_after(otherwise, cond, cond_start, question)
                return ast.CondExpr(cond.pos, cond, then, otherwise)
            return cond
        finally:
            self._leave()

    def _no_assignment_after(self, branch: ast.Expr, cond: ast.Expr, cond_start: int, question: int) -> None:
        """Raise AssignmentInBranch if the branch ``branch`` of a conditional expression, followed
        by a '=', could be assigned to (``c ? m = 1 : m = 2``). Called only at that '=', which
        never follows an expression read by parse_expr in a valid program."""
        if isinstance(branch, (ast.Name, ast.Index, ast.FieldAccess)):
            condition = _written_as(self.toks[cond_start], self.toks[question - 1], []) or "c"
            hint = self._branch_assignment_hint(condition, question)
            raise AssignmentInBranch(self.tok.pos, hint, cond, cond_start, question)

    def _branch_assignment_hint(self, condition: str, question: int) -> str:
        """What to write instead of ``condition ? m = 1 : m = 2``: ``m = condition ? 1 : 2;``
        when both branches assign the same variable, else the conditional action that does
        what the text says (each of its actions ends with ';')."""
        branches = self._assigning_branches(question)
        if branches is None:
            return (
                "a conditional expression chooses between values, not actions: assign the value chosen, "
                f"m = {condition} ? 1 : 2;, or write a conditional action, {condition} ? m = 1; : k = 2;"
            )
        (then_target, then_value), (else_target, else_value) = branches
        if then_target == else_target:
            chosen = f"{condition} ? {then_value} : {else_value}"
            return f"a conditional expression chooses a value: write {then_target} = {chosen};"
        return (
            "to choose between assignments, use a conditional action (its actions end with ';'): "
            f"{condition} ? {then_target} = {then_value}; : {else_target} = {else_value};"
        )

    def _assigning_branches(self, question: int) -> tuple[tuple[str, str], tuple[str, str]] | None:
        """The targets and values, as written, of ``? m = 1 : k = 2`` from the '?' at token
        ``question``; None if the text does not read so. The position is kept."""
        resume = self.i
        branches = None
        with self._trial(question + 1) as trial:
            then = self._assignment_as_written()
            self.expect(":")
            otherwise = self._assignment_as_written()
            if not trial.has_errors:
                branches = (then, otherwise)
        self.i = resume
        return branches

    def _assignment_as_written(self) -> tuple[str, str]:
        """``target = value`` read from the current token: the texts of both sides."""
        start = self.i
        self.parse_or()
        target_end = self.i - 1
        eq = self.expect("=")
        value_start = self.i
        self.parse_expr()
        target = _written_as(self.toks[start], self.toks[target_end], [])
        value = _written_as(self.toks[value_start], self.toks[self.i - 1], [])
        if target is None or value is None:
            raise ParseError(eq.pos, "no one text")  # across an include: only a generic hint
        return target, value

    def _binary(
        self, ops: tuple[str, ...], sub: Callable[[], ast.Expr], read: Callable[[Token], str] = _kind
    ) -> ast.Expr:
        """A left-associated chain of ``sub``s joined by the operators ``ops``, each read as
        ``read`` says (its own kind; '==' for '=' while a slip is read again:
        ``_equality_reading_equals``)."""
        left = sub()
        operators = self.operators
        try:
            while self.at(*ops):
                op = self.advance()
                self._operator(op.pos)  # a+b+c is a tree of depth two, at one level of nesting
                right = sub()
                left = ast.Binary(op.pos, read(op), left, right)
            return left
        finally:
            self.operators = operators

    def parse_or(self) -> ast.Expr:
        return self._binary(("||",), self.parse_and)

    def parse_and(self) -> ast.Expr:
        return self._binary(("&&",), self.equality)

    def parse_eq(self) -> ast.Expr:
        return self._binary(("==", "!="), self.parse_rel)

    def parse_rel(self) -> ast.Expr:
        return self._binary(("<", "<=", ">", ">="), self.parse_add)

    def parse_add(self) -> ast.Expr:
        return self._binary(("+", "-"), self.parse_mul)

    def parse_mul(self) -> ast.Expr:
        return self._binary(("*", "/", "%"), self.parse_unary)

    def parse_unary(self) -> ast.Expr:
        if self.at("!", "-"):
            op = self.advance()
            self._enter(op.pos)
            try:
                operand = self.parse_unary()
            finally:
                self._leave()
            if op.kind == "-" and isinstance(operand, ast.IntLit) and operand.value >= 0 and not operand.negated:
                lit = ast.IntLit(op.pos, -operand.value)
                lit.negated = True
                return lit
            if op.kind == "-" and isinstance(operand, ast.FloatLit):
                return ast.FloatLit(op.pos, -operand.value)
            return ast.Unary(op.pos, op.kind, operand)
        return self.parse_postfix_expr()

    def parse_postfix_expr(self) -> ast.Expr:
        e = self.parse_primary()
        depth = self.depth
        try:
            while True:
                if self.at("["):
                    b = self.advance()
                    self._enter(b.pos)
                    idx = self.parse_expr()
                    self.expect("]")
                    e = ast.Index(b.pos, e, idx)
                elif self.at(".") and _names_a_field(self.peek()):
                    self._enter(self.advance().pos)
                    name = self.advance()
                    e = ast.FieldAccess(name.pos, e, name.text, name.pos)
                else:
                    return e
        finally:
            self.depth = depth

    def parse_primary(self) -> ast.Expr:
        t = self.tok
        k = t.kind
        if k == "INT":
            self.advance()
            return ast.IntLit(t.pos, t.int_value())
        if k == "FLOAT":
            self.advance()
            return ast.FloatLit(t.pos, t.float_value())
        if k == "STRING":
            self.advance()
            return ast.StrLit(t.pos, str(t.value))
        if k in ("true", "false"):
            self.advance()
            return ast.BoolLit(t.pos, k == "true")
        if k == "IDENT":
            self.advance()
            if self.at("("):
                self.advance()
                args: list[ast.Expr] = []
                if not self.at(")"):
                    args.append(self.parse_expr())
                    while self.accept(","):
                        args.append(self.parse_expr())
                self.expect(")", hint=f"close the argument list of {t.text}(...)")
                return ast.Call(t.pos, t.text, args)
            return ast.Name(t.pos, t.text)
        if k == "group":
            self.advance()
            self.expect("[", hint="the group key is read as group[0], group[1], ...")
            idx = self.parse_expr()
            self.expect("]")
            return ast.GroupRef(t.pos, idx)
        if k == "(":
            self.advance()
            inside = self.i
            e = self.parse_expr()
            if self.at("="):  # a syntax error: ')' is expected
                meant = self._comparison_in_parentheses(t, inside)
                if meant is not None:
                    return meant
            self.expect(")", hint=f"the '(' at {t.pos.line}:{t.pos.col} is not closed")
            return e
        if k == "{":
            self.advance()
            fields: list[ast.FieldInit] = []
            if not self.at("}"):
                fields.append(self.parse_field_init())
                while self.accept(","):
                    fields.append(self.parse_field_init())
            self.expect("}", hint="a structure is written {name: value, ...}")
            return ast.StructBuild(t.pos, fields)
        if k == "new":
            self.advance()
            elem = self.parse_base_type()
            self.expect("[", hint="write new double[n]")
            size = self.parse_expr()
            self.expect("]")
            while self.at("[") and self.peek().kind == "]":
                pos = self.advance().pos
                self.advance()
                elem = ast.ArrayTypeExpr(elem, pos)
            return ast.NewArray(t.pos, elem, size)
        if k == "!>":
            raise ParseError(t.pos, "an emit action cannot be used as a value")
        if k == "case":
            raise _misplaced_case(t, "in an action or an expression")
        raise ParseError(t.pos, f"expected an expression, found {_describe(t)}")

    def _comparison_in_parentheses(self, open_: Token, inside: int) -> ast.Expr | None:
        """The parenthesised expression opened by ``open_`` read again from token ``inside``
        with '=' for '==' (``(a = 3) ? ...``: inside parentheses '=' can assign nothing), if it
        then reads to its ')': reported as "did you mean '=='?" with the parentheses as they
        should be written, and kept with '==' so that the rest of the program is still parsed.
        None, with nothing reported and the position kept, if it does not read so."""
        failed_at = self.i
        equals: list[Token] = []
        meant = None
        with self._trial(inside) as trial:
            self.equality = lambda: self._equality_reading_equals(equals)
            e = self.parse_expr()
            close = self.expect(")")
            if not trial.has_errors:
                meant = e
        if meant is None:
            self.i = failed_at
            return None
        written = _written_as(open_, close, [(eq, "==") for eq in equals]) or "(x == 3)"
        self.diagnostics.error(
            equals[0].pos,
            "'=' assigns a value, but this is inside an expression's parentheses: did you mean '=='?",
            f"a condition compares with '==': write {written}",
        )
        return meant

    def _equality_reading_equals(self, equals: list[Token]) -> ast.Expr:
        """parse_eq, but taking '=' for '==' and adding each such '=' to ``equals``."""

        def read(op: Token) -> str:
            if op.kind == "=":
                equals.append(op)
                return "=="
            return op.kind

        return self._binary(("==", "!=", "="), self.parse_rel, read)

    def parse_field_init(self) -> ast.FieldInit:
        name = self.expect_field_name()
        self.expect(":", hint="a structure is written {name: value, ...}")
        return ast.FieldInit(name.text, self.parse_expr(), name.pos)


def parse(
    source: SourceFile, diagnostics: Diagnostics, *, on_line_comment: Callable[[Pos, str], None] | None = None
) -> ast.Program:
    """Parse a program (resolving includes); syntax errors go to ``diagnostics``, and each line
    comment to ``on_line_comment`` (the lexer's: allow comments, language/allow.py)."""
    tokens = tokenize(source, diagnostics, on_line_comment=on_line_comment)
    return Parser(tokens, diagnostics).parse_program()
