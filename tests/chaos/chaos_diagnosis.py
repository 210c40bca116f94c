"""What a failed chaos run prints beside its verdict, so that a failure seen only in CI (whose
worker logs and brokers are gone) can be studied from the test's output alone: the harness's
steps with their times, and for the first keys with problems their outputs around the first
difference, their changelog records (offset, ``es-pos``, the variables the snapshot holds) and
the workers' log lines about their task in that time.

A changelog record whose ``es-pos`` is behind the one before it, of another owner, is what a
zombie's late write looks like; a restore line (``changelog from offset``) whose task resumed
past a record it did not apply is a restore that ended short.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from kafka_helpers import decode_key

from eventscript.kafka import codec
from eventscript.state.changelog import split_batch_frame

#: Problem keys described, outputs shown either side of the first difference, log lines per key.
KEYS = 2
AROUND = 3
LOG_LINES = 40


def stamp() -> str:
    """Now as the workers' log lines write it (UTC, milliseconds), for the harness's timeline."""
    return datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def _variables(terms: Any, raw: bytes | None) -> str:
    if raw is None:
        return "tombstone"
    try:
        from eventscript.state.query import explain_snapshot

        variables = explain_snapshot(terms, raw).get("variables", [])
        return " ".join(f"{v['name']}={orjson.dumps(v['value']).decode()}" for v in variables)[:160]
    except Exception as exc:  # a diagnosis never fails the run's report
        return f"{len(raw)} bytes ({type(exc).__name__})"


def _input_number(variables: str) -> int:
    """The input number (``t.n``) a snapshot's variables show, -1 if none."""
    m = re.search(r'"n":(-?\d+)', variables)
    return int(m.group(1)) if m else -1


def _first_problem_record(problem: str) -> int | None:
    """The ``last`` field (input number) of the output a key's first difference names."""
    m = re.search(r"'last': (\d+)", problem)
    return int(m.group(1)) if m else None


def diagnose(
    program_text: str,
    problems: dict[str, list[str]],
    inputs: list[Any],
    outputs: list[Any],
    changelog: list[Any],
    logs: list[Path],
    timeline: list[str],
) -> str:
    from eventscript.automata.compile import compile_source
    from eventscript.explain.terms import ProgramTerms

    terms = ProgramTerms(compile_source(program_text, name="chaos").require())
    lines = ["diagnosis:", "  harness steps (UTC):", *(f"    {t}" for t in timeline)]
    partition_of = {orjson.dumps(decode_key(m.key())).decode(): m.partition() for m in inputs if m.key()}
    keys = [k for k in sorted(problems) if k.startswith("[")][:KEYS]
    for key in keys:
        p = partition_of.get(key)
        lines.append(f"  key {key} (input and changelog partition {p}): {problems[key][0][:200]}")
        last = _first_problem_record(problems[key][0])
        copies = []
        for m in sorted(outputs, key=lambda m: (m.partition(), m.offset())):
            if m.key() is None or orjson.dumps(decode_key(m.key())).decode() != key:
                continue
            value = orjson.loads(m.value())
            n = value.get("last", -1)
            if last is None or abs(n - last) <= AROUND * 40:
                rid = (codec.header(m.headers(), codec.HEADER_ID) or b"?").decode()
                raw_time = codec.header(m.headers(), codec.HEADER_TIME)
                at = _utc(int(raw_time) // 1000 if raw_time else m.timestamp()[1])
                copies.append(f"    out {m.partition()}:{m.offset()} {rid} {value} at {at}")
        lines.append(f"   outputs near input {last} (every copy, in topic order):")
        lines.extend(copies[: 4 * AROUND + 8])
        store_key = key.encode()
        records = [m for m in changelog if m.partition() == p and m.key() == store_key]
        shown = [(m, _variables(terms, m.value())) for m in records]
        # from a few records before the problem's input on (later ones show a late, older write)
        first = next(
            (i for i, (_, v) in enumerate(shown) if last is not None and _input_number(v) >= last - AROUND * 40),
            max(0, len(shown) - (4 * AROUND + 8)),
        )
        lines.append(f"   changelog records of the key ({len(records)}; from the one before input {last}):")
        for m, variables in shown[max(0, first - 1) : first + 4 * AROUND + 8]:
            heads = {k: (v or b"").decode(errors="replace") for k, v in m.headers() or ()}
            _, framed_pos, framed_gen = split_batch_frame(m.value(), None, None)  # (before the value)
            pos = heads.pop("es-pos", None) or (framed_pos or b"?").decode(errors="replace")
            if framed_gen is not None:
                heads["es-gen"] = framed_gen.decode(errors="replace")
            heads.pop("es-key", None)
            extra = f" {heads}" if heads else ""
            lines.append(f"    cl {m.offset()} at {_utc(m.timestamp()[1])} es-pos {pos}{extra}: {variables}")
        rx = re.compile(
            rf"task {p}\b|tasks \[[^\]]*\b{p}\b|"
            r"stalled|commit failed|going back|lost|fenced|rejoin|changelog from offset"
        )
        found = [
            f"    {log.name}: {line[11:]}"
            for log in logs
            if log.exists()
            for line in log.read_text(errors="replace").splitlines()
            if rx.search(line)
        ]
        found.sort(key=lambda s: s.split(": ", 1)[1][:12])
        sent = _when_sent(timeline, last)
        if sent is not None:  # from 20 s before the harness step before the input was sent
            found = [f for f in found if _seconds(f.split(": ", 1)[1][:12]) >= _seconds(sent) - 20]
        lines.append(
            f"   worker log lines about task {p} or the group ({len(found)} from 20 s before {sent}; "
            f"the first {LOG_LINES}):"
        )
        lines.extend(found[:LOG_LINES])
    return "\n".join(lines)


def timeline_entry(started: float, what: str, sent: int) -> str:
    """A harness step as the diagnosis lists it: when (UTC, as the workers' logs write it, and
    seconds into the run), what, and how many inputs had been sent (which places the inputs a
    problem names in time)."""
    return f"{stamp()} (+{time.monotonic() - started:.1f} s) {what} (inputs sent: {sent})"


def _when_sent(timeline: list[str], number: int | None) -> str | None:
    """The time (HH:MM:SS.mmm) of the last harness step before input ``number`` was sent."""
    if number is None:
        return None
    when = None
    for entry in timeline:
        m = re.match(r"(\S+) .*\(inputs sent: (\d+)\)$", entry)
        if m and int(m.group(2)) <= number:
            when = m.group(1)
    return when


def _seconds(hms: str) -> float:
    h, m, rest = hms.replace(",", ".").split(":")
    return int(h) * 3600 + int(m) * 60 + float(rest)
