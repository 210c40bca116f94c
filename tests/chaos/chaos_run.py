"""One chaos run on a three-broker Apache Kafka cluster: three workers, a steady producer with
poison records, the faults of ``ChaosPlan.steps`` one after the other, each once the workers
have made progress since the previous one; then every output is awaited, the workers stopped as
an operator would, and the topics judged (``chaos_verdict.judge``).

Every wait is for a condition (new outputs, a rebalance seen in the logs, a broker listed again),
bounded by a timeout that only a stuck run meets.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos_diagnosis import diagnose, timeline_entry
from chaos_fleet import Fleet, PoisonedProducer, log_lines, wedged
from chaos_plan import ChaosPlan
from chaos_verdict import Verdict, judge
from kafka_helpers import Broker, TopicWatcher, read_many, topology, unique, wait_for

#: A stuck run fails after these (seconds); a healthy one meets none of them.
PROGRESS_TIMEOUT = 120.0
DRAIN_TIMEOUT = 240.0


@dataclass
class ChaosRun:
    plan: ChaosPlan
    verdict: Verdict
    logs: list[Path]
    #: A failed run's ``chaos_diagnosis.diagnose`` (empty when the run passed).
    diagnosis: str = ""

    def figures(self) -> str:
        f = self.verdict.figures
        return (
            f"chaos {self.plan.describe()}: records in {f['records in']} (+{f['poison in']} poison), "
            f"outputs {f['outputs']}/{f['expected outputs']} ({f['timer outputs']} timer outputs, "
            f"{f['output repeats']} repeats), errors {f['errors']} ({f['error repeats']} repeats), "
            f"worker kills {f['kills']}, freezes {f['freezes']}, joins {f['joins']}, leaves {f['leaves']}, "
            f"workers revived after exiting {f['revived']}, broker kills {f['broker kills']}, "
            f"assignments seen (rebalances reaching a worker) {f['assignments']}, "
            f"wedged workers {len(f['wedged'])}, wall time {f['wall time']:.0f} s"
            + "".join(f"\n  wedged: {w}" for w in f["wedged"])
        )


def heal(cluster: Any) -> None:
    """Every node of the cluster running and listed: a variant starts, and reads its records at the
    end, on the whole cluster (the variant before may have left a node down or slow to return;
    twice seen in whole runs: workers that could not start, a read of the inputs that failed)."""
    for node in cluster.nodes:
        if not node.running:
            cluster.restart(node.node_id, timeout=PROGRESS_TIMEOUT)
    cluster.wait_ready(timeout=PROGRESS_TIMEOUT, brokers=len(cluster.nodes))


def run_chaos(cluster: Any, tmp: Path, plan: ChaosPlan) -> ChaosRun:
    heal(cluster)
    started = time.monotonic()
    broker = Broker(cluster.bootstrap, "apache", cluster=cluster)
    name = unique(f"chaos-{plan.guarantee[:3]}-{plan.clock}")
    (tmp / "chaos.es").write_text(plan.program)
    app = unique("chaos")
    program = {
        "name": name,
        "source": "chaos.es",
        "clock": plan.clock,
        "guarantee": plan.guarantee,
        "commit_interval_ms": plan.commit_interval_ms,
        "inputs": [{"topic": f"{name}-in", "event": "Tick"}],
        "outputs": {"default": f"{name}-out"},
        "errors": f"{name}-err",
    }
    consumer = {
        "session.timeout.ms": plan.session_timeout_ms,
        "heartbeat.interval.ms": max(250, plan.session_timeout_ms // 4),
    }
    topos = [
        topology(
            broker,
            tmp,
            [program],
            {f"{name}-in": {"partitions": plan.partitions}},
            file=f"w{i}.yaml",
            application=app,
            state=f"state-{i}",
            kafka={"bootstrap_servers": cluster.bootstrap, "consumer": consumer, "static_membership": True},
        )
        for i in range(4)
    ]
    from eventscript.kafka.admin import Admin
    from eventscript.kafka.config import load_topology

    topo = load_topology(topos[0])
    Admin(topo).prepare(topo.programs)
    changelog = topo.changelog_topic(topo.programs[0])
    fleet = Fleet(topos, [tmp / f"w{i}.log" for i in range(4)])
    producer = PoisonedProducer(broker, f"{name}-in", plan.partitions)
    stop_producing = threading.Event()
    rnd = random.Random(plan.seed)
    broker_kills = 0
    timeline: list[str] = []
    watcher = None
    writing = None
    try:
        for slot in range(3):
            fleet.start(slot)
        watcher = LastEventWatcher(broker, f"{name}-out")
        writing = producer.start_until(
            stop_producing, rate=plan.rate, keys=plan.keys, poison=plan.poison, seed=plan.seed
        )

        def progress(n: int = plan.progress) -> None:
            before = watcher.distinct()

            def made() -> bool:
                fleet.revive()
                return watcher.distinct() >= before + n

            wait_for(made, PROGRESS_TIMEOUT, interval=0.1, what=f"{n} new outputs")

        stuck = None  # a wait that timed out: the run goes on to its verdict, which says so
        step = "start"
        try:
            progress()
            for step in plan.steps:
                action, _, arg = step.partition(":")
                time.sleep(rnd.uniform(0.0, 0.5))  # somewhere in a batch, not right after the last output
                timeline.append(timeline_entry(started, step, producer.sent))
                if action == "kill":
                    fleet.kill(int(arg))
                elif action == "join":
                    fleet.join(3)
                    wait_for(lambda: fleet.assignments([3]) > 0, PROGRESS_TIMEOUT, what="the fourth worker's tasks")
                elif action == "leave":
                    fleet.leave(3)
                elif action == "freeze":
                    frozen = int(arg)
                    # On the wall clock, one lone record per partition first: its key's timer falls
                    # due while the worker is frozen, so the worker wakes up holding an overdue timer
                    # that its successor already fired (issue 20 fault 2's zombie).
                    lone = _lone_keys(producer, plan) if plan.clock == "wall" else []
                    wait_for(_all_last(watcher, lone, b"Count"), PROGRESS_TIMEOUT, what="the lone records' outputs")
                    _freeze_past_session(fleet, frozen)
                    try:
                        progress()  # the others process the frozen worker's tasks
                        wait_for(
                            _all_last(watcher, lone, b"Quiet"),
                            PROGRESS_TIMEOUT + plan.quiet,
                            what="the lone keys' timer outputs",
                        )
                    finally:
                        fleet.thaw(frozen)
                elif action == "broker":
                    leader = cluster.leader(changelog, 0)
                    cluster.kill(leader)
                    broker_kills += 1
                    timeline.append(timeline_entry(started, f"broker {leader} killed", producer.sent))
                    try:
                        progress()  # the workers go on with two brokers
                    finally:
                        timeline.append(timeline_entry(started, f"broker {leader} restarting", producer.sent))
                        # Also when the wait timed out: the later variants and the broker failover
                        # tests share the cluster (left at two brokers, the variants failed at their
                        # start: "Timed out waiting for controller", seen on a machine at load 150).
                        cluster.restart(leader, timeout=PROGRESS_TIMEOUT)
                else:
                    raise ValueError(f"unknown chaos step {step!r}")
                progress()
        except AssertionError as exc:
            stuck = f"the harness gave up at step {step}: {exc}"
        timeline.append(timeline_entry(started, "producer stopping", producer.sent))
        stop_producing.set()
        writing.join(90)
        heal(cluster)
        inputs = read_many(broker, [f"{name}-in"], dedupe=False)[f"{name}-in"]
        from chaos_verdict import is_poison

        good = [m for m in inputs if not is_poison(m)]
        expected = _expected_outputs(plan, good)
        keys = {m.key() for m in good}

        def drained() -> bool:
            fleet.revive()
            if plan.clock == "wall":  # every key quiet at the end (a stall may add timer outputs)
                return watcher.distinct() >= expected and all(watcher.last.get(k) == b"Quiet" for k in keys)
            return watcher.distinct() >= expected

        try:
            wait_for(drained, DRAIN_TIMEOUT + plan.quiet, interval=0.2, what="every output")
        except AssertionError:
            pass  # judged below: the verdict says which outputs are missing
        statuses = fleet.stop_all()
        raw = read_many(broker, [f"{name}-out", f"{name}-err"], dedupe=False)
    finally:
        stop_producing.set()
        if watcher is not None:
            watcher.close()
        if writing is not None:
            writing.join(90)
        fleet.kill_all()
    verdict = judge(plan.program, plan.clock, plan.guarantee, inputs, raw[f"{name}-out"], raw[f"{name}-err"])
    if stuck is not None:
        verdict.add("harness", stuck)
    diagnosis = ""
    if not verdict.ok:
        dump_records(tmp / "records.jsonl", [*inputs, *raw[f"{name}-out"], *raw[f"{name}-err"]])
        try:
            cl = read_many(broker, [changelog], dedupe=False)[changelog]
            diagnosis = diagnose(plan.program, verdict.problems, inputs, raw[f"{name}-out"], cl, fleet.logs, timeline)
        except Exception as exc:  # the verdict is reported whatever happens here
            diagnosis = f"diagnosis failed: {exc!r}"
    for slot, status in statuses:
        if status != 0:
            verdict.add("workers", f"worker {slot} stopped with status {status} (SIGTERM)")
    wedges = [w for log in fleet.logs for w in wedged(log)]
    if wedges and plan.wedged_fail:
        verdict.problems["workers"] = [*verdict.problems.get("workers", []), *wedges]
    verdict.figures.update(fleet.counts)
    verdict.figures["wedged"] = wedges
    verdict.figures.update(
        {
            "broker kills": broker_kills,
            "assignments": fleet.assignments(),
            "exits": fleet.exits,
            "wall time": time.monotonic() - started,
        }
    )
    if fleet.exits:
        verdict.figures["exit lines"] = log_lines(fleet.logs, r"fenced|Fatal|FATAL|Traceback|exit")[:20]
    return ChaosRun(plan, verdict, fleet.logs, diagnosis)


def dump_records(path: Path, records: list[Any]) -> None:
    """Every record a failed run read, one JSON line each, to study the failure afterwards."""
    import base64

    import orjson

    with path.open("wb") as out:
        for m in records:
            value = m.value()
            out.write(
                orjson.dumps(
                    {
                        "topic": m.topic(),
                        "partition": m.partition(),
                        "offset": m.offset(),
                        "timestamp": m.timestamp()[1],
                        "key": (m.key() or b"").decode(errors="replace"),
                        "headers": {k: (v or b"").decode(errors="replace") for k, v in (m.headers() or [])},
                        "value": base64.b64encode(value).decode() if value is not None else None,
                    }
                )
                + b"\n"
            )


def _all_last(watcher: LastEventWatcher, keys: list[bytes], event: bytes) -> Callable[[], bool]:
    return lambda: all(watcher.last.get(k) == event for k in keys)


def _lone_keys(producer: PoisonedProducer, plan: ChaosPlan) -> list[bytes]:
    """Sends one record to a new key on each input partition (a key no other record has) and
    returns the keys."""
    from eventscript.kafka.partitioner import partition_of

    keys: dict[int, bytes] = {}
    i = 0
    while len(keys) < plan.partitions:
        k = f"lone-{producer.lone}-{i}".encode()
        keys.setdefault(partition_of(k, plan.partitions), k)
        i += 1
    producer.lone += 1
    for k in keys.values():
        producer.send(k.decode(), {producer.field: k.decode(), "n": -1}, int(time.time() * 1000) - 24 * 3600 * 1000)
    producer.producer.flush(30)
    return list(keys.values())


def _freeze_past_session(fleet: Fleet, slot: int) -> None:
    """SIGSTOP a worker until the others were assigned its tasks (it left the group on its session
    timeout); the caller resumes it (SIGCONT) once they processed some: it wakes up a zombie."""
    others = [s for s in sorted(fleet.wanted) if s != slot]
    before = fleet.assignments(others)
    fleet.freeze(slot)
    try:
        wait_for(
            lambda: fleet.assignments(others) > before,
            PROGRESS_TIMEOUT,
            interval=0.1,
            what=f"the other workers to take worker {slot}'s tasks",
        )
    except BaseException:
        fleet.thaw(slot)
        raise


class LastEventWatcher(TopicWatcher):
    """``TopicWatcher`` that also keeps the event of each key's latest output (``last``)."""

    def __init__(self, broker: Broker, topic: str) -> None:
        # Not TopicWatcher's: on three brokers a topic just created may be unknown for a moment
        # to the broker asked, and a watcher assigned no partition would wait forever.
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        from eventscript.kafka import clients
        from eventscript.kafka.config import KafkaConfig

        self.last: dict[bytes, bytes] = {}
        self.consumer = Consumer(
            clients.consumer_config(KafkaConfig(bootstrap_servers=broker.bootstrap), unique("watch"))
        )
        parts: list[int] = []

        def known() -> bool:
            md = self.consumer.list_topics(topic, timeout=10).topics.get(topic)
            parts[:] = sorted(md.partitions) if md is not None and md.error is None else []
            return bool(parts)

        wait_for(known, PROGRESS_TIMEOUT, what=f"the brokers to know {topic}")
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        self.ids: set[bytes] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from eventscript.kafka import codec

        while not self.stop.is_set():
            for m in self.consumer.consume(500, 0.2):
                if m.error() is None:
                    rid = codec.header(m.headers(), codec.HEADER_ID)
                    if rid is not None:
                        self.ids.add(rid)
                    event = codec.header(m.headers(), codec.HEADER_EVENT)
                    if m.key() is not None and event is not None:
                        self.last[m.key()] = event
        self.consumer.close()


def _expected_outputs(plan: ChaosPlan, good: list[Any]) -> int:
    """How many outputs at least (on the wall clock, a key that stalls adds a timer output)."""
    from chaos_verdict import wall_oracle
    from kafka_helpers import Oracle

    want = (
        Oracle(plan.program, "Tick", good).outputs
        if plan.clock == "record"
        else wall_oracle(plan.program, "Tick", good)
    )
    return sum(len(v) for v in want.values())
