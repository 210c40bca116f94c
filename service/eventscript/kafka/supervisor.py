"""Runs the programs of a topology in one process: compile, prepare topics, start one worker
thread per program, serve health and metrics, and stop cleanly on SIGTERM/SIGINT.

SIGTERM asks every worker to finish its batch, commit and leave its group; a worker that has not
stopped within the grace period is abandoned (its uncommitted batch is re-processed by the next
owner of its tasks). A second signal exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..automata.compile import compile_file
from ..automata.compiled import CompiledProgram
from ..engine.tuning import configure_gc
from ..task.keys import scheme_for
from ..topology.config import ProgramConfig, Topology, TopologyError
from .admin import Admin, StoppedWaiting
from .clients import LIBRDKAFKA_LOG, ClientSupplier
from .health import HealthServer
from .metrics import Metrics
from .readiness import idle_partitions, readiness_lines
from .worker import ProgramWorker

log = logging.getLogger("eventscript.kafka")

GRACE_SECONDS = 30.0


def compiled_writers(topo: Topology, cfgs: list[ProgramConfig]) -> dict[str, CompiledProgram]:
    """The programs that write the inputs of ``cfgs`` and are not among them, compiled: their
    texts may show that a reader's tasks need not re-publish each other's records
    (``topology/keyed.py``). One that does not compile proves nothing, and is said so: every
    worker of a reader must decide alike (they wait on each other's markers), so each must see
    the same sources."""
    names = {c.name for c in cfgs}
    read = {i.topic for c in cfgs for i in c.inputs}
    out: dict[str, CompiledProgram] = {}
    for w in topo.programs:
        if w.name in names or not (read & {*w.outputs.values(), w.error_topic}):
            continue
        path = topo.source_path(w)
        try:
            comp = compile_file(path, state_limit=w.state_limit)
        except OSError as exc:
            comp = None
            why = f"cannot read {path}: {exc.strerror or exc}"
        else:
            why = f"{path} has errors"
        if comp is None or not comp.ok or comp.program is None:
            log.warning(
                "%s: program %s: %s; the programs reading its topics re-publish each other's records "
                "(every worker of a program must see the same sources)",
                topo.where_of(w, "source"),
                w.name,
                why,
            )
            continue
        out[w.name] = comp.program
    return out


def compile_programs(topo: Topology, cfgs: list[ProgramConfig], out: TextIO = sys.stderr) -> dict[str, CompiledProgram]:
    compiled: dict[str, CompiledProgram] = {}
    failed = False
    for cfg in cfgs:
        path = topo.source_path(cfg)
        try:
            comp = compile_file(path, state_limit=cfg.state_limit)
        except OSError as exc:
            raise TopologyError(
                f"{topo.where_of(cfg, 'source')}: program {cfg.name}: cannot read {path}: {exc.strerror or exc}; "
                f"check the program's 'source' (relative to the topology file's folder)"
            ) from None
        for d in comp.diagnostics.errors:
            print(d.render(), file=out)
        if not comp.ok or comp.program is None:
            failed = True
            continue
        program = comp.program
        declared = {i.name for i in program.program.inputs}
        for i, inp in enumerate(cfg.inputs):
            if inp.event is not None and inp.event not in declared:
                raise TopologyError(
                    f"{topo.where_of(cfg, 'inputs', i, 'event')}: program {cfg.name}: inputs[{i}] names event "
                    f"{inp.event!r}, which {path} does not declare (declared: {', '.join(sorted(declared))})"
                )
        if program.grouped:
            for inp in cfg.inputs:
                scheme_for(cfg, program.program.key_types, inp)  # TopologyError if the format cannot hold the key
        for o in program.program.outputs:
            if cfg.output_topic(o.name) is None:
                log.warning(
                    "%s: program %s: output event %s has no topic (add it under outputs:, or a 'default')",
                    topo.where_of(cfg, "outputs"),
                    cfg.name,
                    o.name,
                )
        compiled[cfg.name] = program
    if failed:
        raise TopologyError("the programs above have errors")
    return compiled


def instance_id(topo: Topology) -> str:
    """A stable identity for this worker (transactional ids are derived from it)."""
    if topo.instance_id:
        return topo.instance_id
    env = os.environ.get("EVENTSCRIPT_INSTANCE_ID")
    if env:
        return env
    base = Path(topo.state_dir) if Path(topo.state_dir).is_absolute() else topo.base_dir / topo.state_dir
    base.mkdir(parents=True, exist_ok=True)
    f = base / "instance-id"
    if f.exists():
        return f.read_text().strip()
    ident = uuid.uuid4().hex[:12]
    f.write_text(ident + "\n")
    return ident


class TopologyRunner:
    def __init__(
        self,
        topo: Topology,
        names: list[str] | None = None,
        health_port: int | None = None,
        health_host: str | None = None,
        supplier: ClientSupplier | None = None,
    ) -> None:
        self.topo = topo
        #: Makes the workers' Kafka clients (None: the real ones; tests wrap them).
        self.supplier = supplier
        self.cfgs = [topo.program(n) for n in names] if names else list(topo.programs)
        self.health_port = topo.health.port if health_port is None else health_port
        self.health_host = health_host or topo.health.host
        self.metrics = Metrics()
        self.workers: list[ProgramWorker] = []
        self.health: HealthServer | None = None
        self._signals = 0
        self._first_signal: int | None = None
        #: Called before a second signal exits at once (``os._exit`` runs no ``finally``): what
        #: must not outlive the process, e.g. ``dev``'s temporary state folder.
        self.before_exit_now: Callable[[], None] | None = None

    def prepare(self) -> None:
        compiled = compile_programs(self.topo, self.cfgs)
        admin = Admin(self.topo)
        try:
            counts = admin.prepare(self.cfgs, wait_for_inputs=True, stopping=lambda: self._first_signal is not None)
        except StoppedWaiting as stopped:
            log.info("%s: no worker started", stopped)
            return
        if admin.is_embedded_broker and self.topo.kafka.static_membership:
            log.info(
                "the brokers are the embedded Tansu broker (cluster id %s): the workers join their groups as dynamic "
                "members (static_membership off: Tansu gives a static member joining a group no tasks)",
                admin.cluster_id,
            )
            self.topo.kafka.static_membership = False
        ident = instance_id(self.topo)
        programs = {name: c.program for name, c in {**compiled_writers(self.topo, self.cfgs), **compiled}.items()}
        self.workers = [
            ProgramWorker(
                self.topo,
                cfg,
                compiled[cfg.name],
                counts[cfg.name],
                ident,
                self.metrics,
                self.supplier,
                programs,
                topic_partitions=admin.listed,
            )
            for cfg in self.cfgs
        ]
        for w in self.workers:

            def ready(w: ProgramWorker = w) -> bool:
                return w.ready

            self.metrics.register(w.cfg.name, ready, w.partitions)

            def idle(w: ProgramWorker = w) -> int:
                return len(idle_partitions(w))

            self.metrics.idle_now(w.cfg.name, idle)

    def alive(self) -> bool:
        return all(w.alive for w in self.workers)

    def ready(self) -> bool:
        return bool(self.workers) and all(w.ready for w in self.workers)

    def stop(self) -> None:
        for w in self.workers:
            w.stop()

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C (SIGINT) stopped the workers. SIGTERM is an orchestrator's orderly stop
        (a pod deleted, a rollout): the workers finish their batch and the process exits 0, as
        Kubernetes and process supervisors expect of a clean stop."""
        return self._first_signal == signal.SIGINT

    def stop_on_sigterm(self) -> None:
        """From now on SIGTERM is an orderly stop (``_on_signal``), also while the topics are
        checked or an input topic is waited for, before ``run`` (which catches Ctrl-C too)."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals += 1
        if self._first_signal is None:
            self._first_signal = signum
        if self._signals > 1:
            log.warning("second signal: exiting now")
            if self.before_exit_now is not None:
                self.before_exit_now()
            os._exit(130)
        log.info("signal %d: finishing the batch and stopping", signum)
        self.stop()

    def run(self, until_idle: float | None = None, install_signals: bool = True) -> int:
        if install_signals and threading.current_thread() is threading.main_thread():
            # First: a SIGTERM while the topics are checked (seconds on a slow broker) is an
            # orchestrator's orderly stop too, not a kill (exit 0, not -15).
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGINT, self._on_signal)
        if not self.workers and self._first_signal is None:
            self.prepare()
        if self._first_signal is not None:
            log.info("stopped while starting: no record was processed")
            return 0
        # The broker answered (prepare created or checked the topics): from now on librdkafka's own
        # warnings matter to an operator (a broker lost mid-run), rate-limited by the workers.
        # Commands keep them quiet before that, when they would only repeat "cannot connect".
        if LIBRDKAFKA_LOG.getEffectiveLevel() > logging.WARNING:
            LIBRDKAFKA_LOG.setLevel(logging.WARNING)
        if self.health_port:
            # Imported here: a worker without a health port never needs the state endpoint's
            # query and explanation modules (~0.8 MiB less: bench/SPEED.md, "The worker's
            # memory"; tests/kafka/test_worker_imports.py).
            from .state_endpoint import StateEndpoint

            state = StateEndpoint(self.topo, self.workers, lambda: self.health.port if self.health else 0)
            self.health = HealthServer(
                self.health_host,
                self.health_port,
                self.alive,
                self.ready,
                self.metrics,
                state.answer,
                lambda: readiness_lines(self.workers),
            ).start()
            log.info("health on http://%s:%d/healthz /readyz /metrics", self.health_host, self.health.port)
        log.info("running %s; SIGTERM stops it after the batch", ", ".join(w.cfg.name for w in self.workers))
        configure_gc()
        threads = [
            threading.Thread(target=self._run_worker, args=(w,), name=f"worker-{w.cfg.name}", daemon=True)
            for w in self.workers
        ]
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                if any(w.failure is not None for w in self.workers):
                    self.stop()
                # Idle as a whole: a later stage waits while an earlier one of this process still
                # restores or reads (each stopping on its own idleness ended stages whose input
                # was still to come).
                if until_idle is not None and all(w.idle_for() >= until_idle for w in self.workers):
                    self.stop()
                if all(w.stopping.is_set() for w in self.workers):
                    deadline = time.monotonic() + GRACE_SECONDS
                    for t in threads:
                        t.join(max(0.0, deadline - time.monotonic()))
                    break
                time.sleep(0.1)
        finally:
            if self.health is not None:
                self.health.stop()
        failed = [w for w in self.workers if w.failure is not None]
        for w in failed:
            print(f"program {w.cfg.name}: {w.failure}", file=sys.stderr)
        return 1 if failed else 0

    @staticmethod
    def _run_worker(w: ProgramWorker) -> None:
        try:
            w.run()
        except BaseException:  # recorded in w.failure; the runner reports it
            pass
