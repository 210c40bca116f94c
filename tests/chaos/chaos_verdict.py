"""The verdict of a chaos run, per key, from what a ``read_committed`` consumer sees on the output
and error topics after the run.

- nothing lost and nothing wrong: a key's outputs, each ``es-id`` once, equal what the engine
  emits for the key's records in one uninterrupted run (record clock: ``kafka_helpers.Oracle``,
  one engine per partition as the worker's tasks; wall clock: ``wall_oracle``, the key's timer
  firing after its last record and wherever the run shows that the key really stalled past its
  quiet period, which a fault may cause: ``wall_stalls`` checks each such stall);
- nothing twice under exactly-once: no ``es-id`` appears twice, on either topic;
- at-least-once repeats are byte-identical copies (key, value, headers, timestamp) under the same
  ``es-id`` (on the wall clock, differing repeats are counted apart: ``Verdict.differing_repeats``);
- every poison record is on the error topic once (after dropping repeats), with its original
  bytes; no good record is;
- every wall-clock timer output once after dropping repeats (the ``Quiet`` outputs: part of the
  per-key comparison).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from kafka_helpers import Line, Oracle, decode_key

from eventscript.kafka import codec


def is_poison(m: Any) -> bool:
    try:
        orjson.loads(m.value())
    except orjson.JSONDecodeError:
        return True
    return False


def wall_oracle(
    program_text: str, event: str, records: list[Any], stalls: dict[str, set[int]] | None = None
) -> dict[str, list[Line]]:
    """Outputs per key of an uninterrupted wall-clock run: the key's records in order, its timer
    firing after the last one and, where ``stalls`` says so (key → numbers of records after
    which the key really stalled past its quiet period in the run), after those."""
    from eventscript.automata.compile import compile_source
    from eventscript.engine.encoding import encode
    from eventscript.engine.engine import Engine
    from eventscript.engine.time_provider import SimulatedTimeProvider

    program = compile_source(program_text, name="oracle").require()
    out: dict[str, list[Line]] = {}
    by_key: dict[str, list[Any]] = {}
    for m in sorted(records, key=lambda m: (m.partition(), m.offset())):
        by_key.setdefault(orjson.dumps(decode_key(m.key())).decode(), []).append(m)

    def sink(e: Any) -> None:
        key = list(e.key) if e.key is not None else None
        out.setdefault(orjson.dumps(key).decode(), []).append((e.name, encode(e.value, e.ty), key))

    for key, msgs in by_key.items():
        clock = SimulatedTimeProvider()
        engine = Engine(program, sink, clock)  # one per key: its timer fires when its time passes
        clock.advance_to(1_000_000)
        after = (stalls or {}).get(key, set())
        for i, m in enumerate(msgs, 1):
            engine.feed_json(event, orjson.loads(m.value()))
            if i in after:
                clock.advance_to(clock.now() + 10**12)
                clock.run_due()
        clock.advance_to(clock.now() + 10**12)
        clock.run_due()
    return out


def _es_time(m: Any) -> int:
    raw = codec.header(m.headers(), codec.HEADER_TIME)
    return int(raw) if raw is not None else m.timestamp()[1] * 1000


def wall_stalls(kept: list[Any], timer_event: str, verdict: Verdict) -> dict[str, set[int]]:
    """Where a key's timer fired mid-stream in a wall-clock run (key → number of records of the
    key processed before): legitimate only where the key's next record was processed at or after
    the timer's deadline (the timer output's time), which the verdict checks."""
    stalls: dict[str, set[int]] = {}
    by_key: dict[str, list[Any]] = {}
    for m in sorted(kept, key=lambda m: (m.partition(), m.offset())):
        by_key.setdefault(orjson.dumps(decode_key(m.key())).decode(), []).append(m)
    for key, msgs in by_key.items():
        records = 0
        for i, m in enumerate(msgs):
            if codec.header(m.headers(), codec.HEADER_EVENT) != timer_event.encode():
                records += 1
                continue
            if i + 1 < len(msgs):
                stalls.setdefault(key, set()).add(records)
                if _es_time(msgs[i + 1]) < _es_time(m):
                    verdict.add(
                        key,
                        f"the timer fired at {_es_time(m)} us, but the next record was processed "
                        f"at {_es_time(msgs[i + 1])} us, before that deadline",
                    )
    return stalls


#: The problems (sentences of ``_first_difference``, ``judge`` and chaos_run.py) that a worker which
#: stopped making progress leaves: nothing wrong was written, something was not written in time.
STALLED = re.compile(
    r"^\d+ outputs lost \(|^poison record \S+ has 0 error records$|^the harness gave up at step \w+: timed out waiting"
)


@dataclass
class Verdict:
    #: Problems per key ("errors" for the error topic), each a sentence.
    problems: dict[str, list[str]] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    #: At-least-once on the wall clock: repeats whose bytes differ from the first copy. A record
    #: processed again after a rewind is processed at another time, which its outputs carry
    #: (es-time header, timestamp, an $error's "time") and which may fire a timer before it; the
    #: verdict then judges the latest copy where the value differs (the history the committed
    #: state follows), the first where only the time does, and counts the difference here, apart
    #: from ``problems``, so that a test can tell it from any other.
    differing_repeats: int = 0
    differing_examples: list[tuple[Any, Any]] = field(default_factory=list)

    def add(self, key: str, problem: str) -> None:
        self.problems.setdefault(key, []).append(problem)

    @property
    def only_stalled(self) -> bool:
        """Every problem is what a worker that stopped making progress leaves behind -- outputs and
        error records that had not come when the harness gave up, or the harness giving up on
        progress -- and none is an output wrong, twice or with other bytes."""
        return bool(self.problems) and all(STALLED.search(p) for ps in self.problems.values() for p in ps)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self, limit: int = 12) -> str:
        # (the run's own problems first: they explain the keys' ones)
        keys = sorted(self.problems, key=lambda k: (k.startswith("["), k))
        lines = [f"{len(keys)} keys with problems:"]
        for key in keys[:limit]:
            lines.extend(f"  {key}: {p[:500]}" for p in self.problems[key][:3])
        if len(keys) > limit:
            lines.append(f"  ... and {len(keys) - limit} more keys")
        return "\n".join(lines)


def _raw(m: Any) -> tuple[Any, ...]:
    return (m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1])


def _timeless(m: Any) -> tuple[Any, ...]:
    """A record's bytes without its emission time (es-time header and record timestamp)."""
    return (m.key(), m.value(), tuple(h for h in m.headers() or () if h[0] != codec.HEADER_TIME))


def _distinct(
    records: list[Any], guarantee: str, verdict: Verdict, topic_kind: str, tolerate_differences: bool
) -> tuple[list[Any], int]:
    """Each es-id once; repeats must be byte-identical (unless ``tolerate_differences``: then the
    difference is counted, and the latest copy kept where its value differs), and under
    exactly-once there must be none.
    Returns the records kept and the number of repeats dropped."""
    kept: dict[bytes, Any] = {}
    repeats = 0
    for m in records:
        rid = codec.header(m.headers(), codec.HEADER_ID)
        key = orjson.dumps(decode_key(m.key())).decode()
        if rid is None:
            verdict.add(key, f"a {topic_kind} record without es-id at {m.partition()}:{m.offset()}")
            continue
        first = kept.get(rid)
        if first is None:
            kept[rid] = m
            continue
        repeats += 1
        if guarantee == "exactly_once":
            verdict.add(
                key,
                f"{topic_kind} {rid.decode()} twice under exactly-once "
                f"({first.partition()}:{first.offset()} and {m.partition()}:{m.offset()})",
            )
        if _raw(first) == _raw(m):
            continue
        if tolerate_differences:
            verdict.differing_repeats += 1
            if len(verdict.differing_examples) < 3:
                verdict.differing_examples.append((_raw(first), _raw(m)))
            if _timeless(first) != _timeless(m):
                # Another value: the record met another state the second time (a timer fired
                # first), and the key's later outputs follow that copy. A copy that differs in
                # its time alone keeps the first one's place (a zombie's late copy, say).
                kept[rid] = m
        else:
            verdict.add(key, f"{topic_kind} {rid.decode()} repeated with different bytes: {_raw(first)} != {_raw(m)}")
    return list(kept.values()), repeats


def _first_difference(got: list[Line], want: list[Line]) -> str:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"output {i} is {g[0]}{g[1]}, the uninterrupted run's is {w[0]}{w[1]}"
    if len(got) < len(want):
        return f"{len(want) - len(got)} outputs lost (got {len(got)} of {len(want)}; first lost: {want[len(got)]})"
    return f"{len(got) - len(want)} outputs too many (first extra: {got[len(want)]})"


def judge(
    program_text: str, clock: str, guarantee: str, inputs: list[Any], outputs: list[Any], errors: list[Any]
) -> Verdict:
    verdict = Verdict()
    good = [m for m in inputs if not is_poison(m)]
    poison = [m for m in inputs if is_poison(m)]
    tolerate = clock == "wall" and guarantee == "at_least_once"
    kept, out_repeats = _distinct(outputs, guarantee, verdict, "output", tolerate)
    want = (
        Oracle(program_text, "Tick", good).outputs
        if clock == "record"
        else wall_oracle(program_text, "Tick", good, wall_stalls(kept, "Quiet", verdict))
    )
    got: dict[str, list[Line]] = {}
    for m in sorted(kept, key=lambda m: (m.partition(), m.offset())):
        event = codec.header(m.headers(), codec.HEADER_EVENT)
        key = decode_key(m.key())
        got.setdefault(orjson.dumps(key).decode(), []).append(((event or b"?").decode(), orjson.loads(m.value()), key))
    for key in sorted(set(want) | set(got)):
        if got.get(key, []) != want.get(key, []):
            verdict.add(key, _first_difference(got.get(key, []), want.get(key, [])))

    kept_errors, err_repeats = _distinct(errors, guarantee, verdict, "error", tolerate)
    about: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for m in kept_errors:
        doc = orjson.loads(m.value())
        src = doc.get("source") or {}
        about.setdefault((src.get("partition", -1), src.get("offset", -1)), []).append(doc)
    for m in poison:
        key = orjson.dumps(decode_key(m.key())).decode()
        docs = about.pop((m.partition(), m.offset()), [])
        if len(docs) != 1:
            verdict.add(key, f"poison record {m.partition()}:{m.offset()} has {len(docs)} error records")
            continue
        if docs[0]["source"].get("value") != base64.b64encode(m.value()).decode():
            verdict.add(
                key,
                f"poison record {m.partition()}:{m.offset()}: the error record's bytes "
                f"{docs[0]['source'].get('value')!r} are not the original's",
            )
    for where, docs in sorted(about.items()):
        verdict.add("errors", f"an error record about {where}, which is no poison record: {docs[0]}")

    verdict.figures.update(
        {
            "records in": len(good),
            "poison in": len(poison),
            "outputs": sum(len(v) for v in got.values()),
            "expected outputs": sum(len(v) for v in want.values()),
            "timer outputs": sum(1 for v in got.values() for line in v if line[0] == "Quiet"),
            "output repeats": out_repeats,
            "differing repeats": verdict.differing_repeats,
            "errors": len(kept_errors),
            "error repeats": err_repeats,
        }
    )
    return verdict
