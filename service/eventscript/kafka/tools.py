"""``eventscript produce`` and ``eventscript tail``: traces into topics, topics into JSON lines.

``produce`` publishes a timed trace to a program's input topics: each event becomes a record on
the topic its name maps to, with the trace time as record timestamp, keyed and placed as the
topic's producers would (its key format and partitioner: kafka/keys.py), so it lands on the
partition of its instance; on partition 0 for an ungrouped program. Each timestamp also becomes a
*tick* — a record with an ``es-tick`` header on every partition of each of the program's input
topics — so that with ``clock: record`` time advances and timers fire exactly where the tester
would fire them, also when no event follows, and a partition with no event does not hold back
the progress of the tasks downstream (task/progress.py). Each event record carries its position
in the trace (header ``es-seq``): events of one time on different partitions are then taken in
the trace's order, as the tester takes them (task/streams.py).

``tail`` prints records in the conformance JSON-lines encoding (``time``, ``event``, ``value``,
``key``), using the headers the worker writes; ``$error`` records are printed with their code
and message; progress markers and a trace's ticks only with ``--markers`` (as JSON lines of
their own). ``--dedupe`` drops records whose ``es-id`` was already seen (outputs are idempotent
by id; needed on brokers that expose aborted transactions).
"""

from __future__ import annotations

import difflib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO, cast

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from ..automata.compiled import CompiledProgram
from ..engine.encoding import DecodeError, decode, encode
from ..engine.timeutil import format_time
from ..task import codec
from ..task.codec import record_to_json
from ..task.keys import scheme_for
from ..task.progress import IDLE, read_marker, read_reached
from ..tester.trace import Timestamp, TraceEvent, TraceItem, event_argument, typed_argument
from ..topology.config import InputConfig, KafkaConfig, ProgramConfig
from ..topology.headers import HEADER_PROGRESS
from . import clients


class ProduceError(Exception):
    pass


def _input_for(cfg: ProgramConfig, name: str) -> InputConfig | None:
    for inp in cfg.inputs:
        if inp.event == name:
            return inp
    for inp in cfg.inputs:
        if inp.event is None:
            return inp  # names from a header, a field or CloudEvents: any name fits
    return None


#: Kafka 4's default ``log.message.timestamp.after.max.ms``: records stamped further ahead of the
#: broker's clock are refused (INVALID_TIMESTAMP).
FUTURE_LIMIT_MS = 3_600_000


def _refusal(err: KafkaError, msg: Any, ahead_ms: int) -> str:
    """A delivery error in words. Kafka 4 refuses a record stamped too far ahead with
    INVALID_RECORD ("failed to validate record", measured on 4.1.1; older brokers say
    INVALID_TIMESTAMP), and a failed delivery carries no timestamp: when the trace reaches ahead of
    this machine's clock (``ahead_ms``), say which setting refused it and what to do."""
    if err.code() == KafkaError.INVALID_TIMESTAMP or (err.code() == KafkaError.INVALID_RECORD and ahead_ms > 60_000):
        where = f"{msg.topic()}:{msg.partition()}" if msg is not None else "the topic"
        return (
            f"{where}: the broker refused a record ({err.str()}); the trace reaches {ahead_ms / 3_600_000:.1f} h "
            f"ahead of this machine's clock, and brokers refuse records stamped more than the topic's "
            f"message.timestamp.after.max.ms ahead of theirs (1 hour by default on Kafka 4): raise that topic "
            f"setting (kafka-configs --alter --entity-type topics --add-config message.timestamp.after.max.ms=...) "
            f"or shift the trace's times"
        )
    return str(err)


def produce_trace(
    kafka: KafkaConfig,
    cfg: ProgramConfig,
    program: CompiledProgram,
    items: list[TraceItem],
    partitions: int,
    warn: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
    producer: Any = None,
) -> int:
    """Publish a trace; returns the number of event records (ticks not counted). ``producer``:
    anything with confluent-kafka's produce/poll/flush (``eventscript export`` writes a file)."""
    to_kafka = producer is None
    producer = producer if producer is not None else Producer(clients.producer_config(kafka))
    types = {i.name: i.ty for i in program.program.inputs}
    key_types = program.program.key_types
    # Every input topic: a task's time waits on all its input partitions (task/progress.py).
    tick_topics = list(dict.fromkeys(i.topic for i in cfg.inputs))
    sent = 0
    position = 0  # the event's position in the trace (es-seq)
    now_ms = 0
    from ..engine.engine import Engine

    engine = Engine(program)  # only for group keys
    errors: list[str] = []

    ahead_ms = max((i.time // 1000 for i in items if isinstance(i, Timestamp)), default=0) - int(time.time() * 1000)

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(_refusal(err, msg, ahead_ms))

    if to_kafka and ahead_ms > FUTURE_LIMIT_MS:
        warn(
            f"the trace's times reach {ahead_ms / 3_600_000:.1f} h ahead of this machine's clock: Kafka 4 brokers "
            f"refuse records stamped more than {FUTURE_LIMIT_MS // 3_600_000} h ahead unless the topic's "
            f"message.timestamp.after.max.ms (or the broker's log.message.timestamp.after.max.ms) allows it"
        )

    for item in items:
        if isinstance(item, Timestamp):
            now_ms = item.time // 1000
            for tick_topic in tick_topics:
                for p in range(partitions):
                    producer.produce(
                        tick_topic,
                        value=b"{}",
                        partition=p,
                        timestamp=now_ms,
                        headers=[(codec.HEADER_TICK, b"1")],
                        on_delivery=delivered,
                    )
            continue
        assert isinstance(item, TraceEvent)
        position += 1
        inp = _input_for(cfg, item.name)
        if inp is None:
            warn(
                f"{item.pos}: {item.name} is not an input of program {cfg.name} and no input takes event "
                f"names from records; skipped"
            )
            continue
        raw = event_argument(item)
        ty = types.get(item.name)
        payload: Any = raw
        key: bytes | None = None
        partition: int | None = None
        if ty is not None:
            try:
                raw = typed_argument(raw, ty)
                value = decode(raw, ty)
                payload = encode(value, ty)
                if key_types is not None:
                    group_key = engine.group_key(item.name, value)
                    if group_key is not None:
                        # As the topic's producers would: the key in its format, placed by its
                        # partitioner (kafka/keys.py).
                        scheme = scheme_for(cfg, key_types, inp)
                        key = scheme.key_bytes(group_key)
                        partition = scheme.partition(scheme.routing_bytes(group_key), partitions)
                else:
                    partition = 0
            except DecodeError as exc:  # published as written: the worker decodes it by the input's rules
                warn(
                    f"{item.pos}: {item.name}: {exc}; published as written (the tester would report $error 6, "
                    f"the worker decodes it as the input's settings say)"
                )
                payload = raw
        if partition is None:
            partition = 0
        value_bytes, headers = codec.input_record(inp, item.name, payload)
        headers.append((codec.HEADER_SEQ, b"%d" % position))  # the trace's order, across partitions
        producer.produce(
            inp.topic,
            value=value_bytes,
            key=key,
            partition=partition,
            timestamp=now_ms,
            headers=headers,
            on_delivery=delivered,
        )
        sent += 1
        producer.poll(0)
    producer.flush(30)
    if errors:
        raise ProduceError(f"{len(errors)} record(s) could not be produced: {errors[0]}")
    return sent


# ---------------------------------------------------------------------------------------------
# tail


def read_topic(
    kafka: KafkaConfig,
    topic: str,
    *,
    idle: float = 2.0,
    limit: int | None = None,
    dedupe: bool = False,
    timeout: float = 120.0,
    markers: bool = False,
) -> Iterator[Any]:
    """Records of every partition of a topic from the beginning, read_committed, until every
    partition has reported its end and nothing new came for ``idle`` seconds. Progress markers
    (task/progress.py) are left out unless ``markers``."""
    consumer = Consumer(clients.consumer_config(kafka, f"eventscript-tail-{time.time_ns()}"))
    try:
        md = consumer.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise ProduceError(_no_such_topic(topic, set(consumer.list_topics(timeout=10).topics)))
        parts = sorted(t.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        at_end: set[int] = set()
        seen: set[bytes] = set()
        count = 0
        last = time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msgs = consumer.consume(1000, 0.2)
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF and (p := m.partition()) is not None:
                        at_end.add(p)
                    continue
                at_end.discard(m.partition())
                last = time.monotonic()
                if not markers and codec.header(m.headers(), HEADER_PROGRESS) is not None:
                    continue
                if dedupe:
                    # a consumed record's headers are (str, bytes) pairs (the stub's union is produce's argument)
                    rid = codec.header(cast(codec.Headers | None, m.headers()), codec.HEADER_ID)
                    if rid is not None:
                        if rid in seen:
                            continue
                        seen.add(rid)
                yield m
                count += 1
                if limit is not None and count >= limit:
                    return
            if len(at_end) == len(parts) and time.monotonic() - last >= idle:
                return
    finally:
        consumer.close()


def progress_json(writer: str, progress_ms: int, headers: Any) -> dict[str, Any]:
    """A progress marker as ``tail --markers`` shows it: its writer and time; an idle one (which
    holds nothing back) says so, with the time its writer's clock reached."""
    if progress_ms < IDLE:
        return {"writer": writer, "time": format_time(progress_ms * 1000)}
    reached = read_reached(headers)
    return {"writer": writer, "idle": True, **({"time": format_time(reached * 1000)} if reached is not None else {})}


def _no_such_topic(topic: str, existing: set[str]) -> str:
    """The message for a topic the broker does not have: the names closest to it (a misspelt
    ``alerts``), else the topics there are, so the user need not guess."""
    shown = sorted(t for t in existing if not t.startswith("__"))
    close = difflib.get_close_matches(topic, shown, n=3, cutoff=0.6)
    if close:
        return f"topic {topic} does not exist; did you mean {' or '.join(close)}?"
    if not shown:
        return f"topic {topic} does not exist: the broker has no topics yet"
    listed = ", ".join(shown[:20]) + (f" and {len(shown) - 20} more" if len(shown) > 20 else "")
    return f"topic {topic} does not exist; the broker has: {listed}"


def tail(
    kafka: KafkaConfig,
    topic: str,
    out: TextIO,
    *,
    reader: InputConfig | None = None,
    input_types: dict[str, Any] | None = None,
    unnamed: Callable[[], None] | None = None,
    **kwargs: Any,
) -> int:
    """Print ``topic``'s records as JSON lines; returns how many. A trace's ticks (``produce``'s
    time records, ``es-tick``) are left out with the progress markers unless ``markers``: they
    printed as events named null, which ``test --trace`` then refused. ``reader``: the input
    setting of a program that reads the topic, which says where a record's event name is when
    no ``es-event`` header carries it (records written by producers outside the topology), and
    what of the record's value is the event's (``input_types``: its program's input types);
    ``unnamed`` is called for each record printed with no event name all the same."""
    n = 0
    for m in read_topic(kafka, topic, **kwargs):
        marker = read_marker(m.headers())
        if marker is not None:
            line = {"progress": progress_json(*marker, m.headers()), "partition": m.partition()}
        elif codec.header(m.headers(), codec.HEADER_TICK) is not None:
            if not kwargs.get("markers"):
                continue
            line = {"tick": format_time(m.timestamp()[1] * 1000), "partition": m.partition()}
        else:
            line = record_to_json(m)
            if line["event"] is None and reader is not None:
                line["event"], line["value"] = _as_read(m, line["value"], reader, input_types or {})
            if line["event"] is None and unnamed is not None:
                unnamed()
        out.write(orjson.dumps(line).decode() + "\n")
        out.flush()
        n += 1
    return n


def _as_read(msg: Any, value: Any, reader: InputConfig, input_types: dict[str, Any]) -> tuple[str | None, Any]:
    """The event name and value of a record as ``reader`` (a program's input setting) reads them
    (``codec.named_payload``: a structured CloudEvent's ``data``, a named wrapper's ``value``),
    so that ``test --trace`` takes the line; a structure named by one of its fields is printed
    without that field (the event's type does not declare it). (None, the value as it is) where
    the record names no event."""
    try:
        name, payload = codec.named_payload(reader, value, msg.headers(), input_types)
    except codec.BadRecord:
        return None, value
    field = reader.event_from.field if reader.event_from is not None and reader.format != "cloudevents" else None
    if field is not None and payload is value and isinstance(value, dict):
        payload = {k: v for k, v in value.items() if k != field}
    return name, payload
