"""``GET /state/<program>?key=K`` on a worker's HTTP port: one key's committed state, in program
terms (state/query.py), for operators (``eventscript state``) and tools.

Off unless the topology says ``state_query: {enabled: true}``; read-only; with ``token`` set, a
request must carry ``Authorization: Bearer <token>``. Answers (JSON):

- 200: the key's answer, from the task's store when this worker owns the key's task (``served_by.role``
  ``owner``), else from its standby replica of the task (``standby``, with how far it has applied the
  changelog and how many records wait for the owner's next commit). ``status`` ``absent`` is a 404.
- 200 with ``status`` ``ended``: the key's instance ended (when and why in ``ended``; kept for
  ``state.keyinfo.ENDED_RETENTION_MS`` after the commit that ended it);
- 404: the key has no instance in the committed state and no ended marker (never seen, or ended
  past the marker's retention), or no such program;
- 400: bad parameters (an unknown one, a key that does not fit the group key), the message says
  what to give;
- 401: the token is missing or wrong; 403: the endpoint is off (``state_query.enabled: false``);
- 421: this worker neither owns the key's task nor stands by for it, or its standby has no instance
  for the key (only the owner says a key is absent: a standby may not have read as far, e.g. one
  that just started on a worker that joined): the body names the owner as the
  consumer group describes it (member, client id, host, and a URL assuming every worker serves the
  same port), when the broker lists members;
- 503: the key's task is restoring, or moved while it was read, or this worker holds no assignment
  yet (joining its group): ask again.

Consistency: an answer is read from one RocksDB snapshot of a store the worker writes only after
a commit (instances and input position in one batch), so it is the state of exactly one commit,
never torn, and only ever the asked key's (its store key is computed from the key). Nothing is
read from the worker's in-memory engine, which its own thread changes.
"""

from __future__ import annotations

import hmac
import logging
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

import orjson

from ..explain.terms import ProgramTerms
from ..state.query import BadKey, answer_from_store, parse_key
from .keys import scheme_for

log = logging.getLogger("eventscript.kafka.state")

JSON = "application/json"
Reply = tuple[int, bytes, str]


def _reply(status: int, body: dict[str, Any]) -> Reply:
    return status, orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n", JSON


class StateEndpoint:
    """Answers ``/state/...`` requests for the program workers of one process (the HTTP server's
    threads call :meth:`answer`)."""

    def __init__(self, topo: Any, workers: list[Any], port: Callable[[], int]) -> None:
        self.topo = topo
        self.workers = {w.cfg.name: w for w in workers}
        self.port = port
        self._terms: dict[str, ProgramTerms] = {}
        self._admin: Any = None
        self._lock = threading.Lock()

    def answer(self, path: str, query: str, authorization: str | None) -> Reply:
        cfg = self.topo.state_query
        if not cfg.enabled:
            return _reply(
                403,
                {
                    "error": "the state endpoint of this worker is off: set state_query: {enabled: true} "
                    "in the topology it runs (a token is optional) and restart it to ask it about keys"
                },
            )
        if cfg.token and not hmac.compare_digest((authorization or "").encode(), f"Bearer {cfg.token}".encode()):
            return _reply(
                401, {"error": "missing or wrong bearer token: send Authorization: Bearer <state_query.token>"}
            )
        name = urllib.parse.unquote(path[len("/state/") :]).strip("/")
        worker = self.workers.get(name)
        if worker is None:
            return _reply(
                404,
                {
                    "error": f"no program {name!r} on this worker (programs: "
                    f"{', '.join(sorted(self.workers)) or 'none'}); ask /state/<program>?key=..."
                },
            )
        try:
            params = urllib.parse.parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError:
            return _reply(400, {"error": f"cannot read the query string {query!r}: use ?key=..."})
        unknown = sorted(set(params) - {"key", "task"})
        if unknown or any(len(v) > 1 for v in params.values()):
            return _reply(
                400,
                {
                    "error": f"parameters: key (once) and, for an ungrouped program, task; got "
                    f"{', '.join(unknown) or 'a repeated one'}"
                },
            )
        program = worker.program
        try:
            key = parse_key(program, params["key"][0] if "key" in params else None, name)
        except BadKey as exc:
            return _reply(400, {"error": str(exc)})
        try:
            task = self._task_of(worker, key, params.get("task", [None])[0])
        except BadKey as exc:
            return _reply(400, {"error": str(exc)})
        return self._answer(worker, key, task)

    def _task_of(self, worker: Any, key: tuple[Any, ...] | None, task_text: str | None) -> int:
        if key is None:  # an ungrouped program: one instance per task
            try:
                task = int(task_text) if task_text is not None else 0
            except ValueError:
                raise BadKey(f"task must be a task number, got {task_text!r}") from None
            if not 0 <= task < worker.partitions:
                raise BadKey(f"task {task} does not exist: the program has tasks 0 to {worker.partitions - 1}")
            return task
        if task_text is not None:
            raise BadKey("task is for an ungrouped program; a grouped program's key decides its task")
        scheme = scheme_for(worker.cfg, worker.program.program.key_types)
        return int(scheme.partition(scheme.routing_bytes(key), worker.partitions))

    def _terms_of(self, worker: Any) -> ProgramTerms:
        terms = self._terms.get(worker.cfg.name)
        if terms is None:
            terms = self._terms[worker.cfg.name] = ProgramTerms(worker.program)
        return terms

    def _answer(self, worker: Any, key: tuple[Any, ...] | None, p: int) -> Reply:
        terms = self._terms_of(worker)
        me = {"worker": worker.instance_id}
        task = dict(worker.tasks).get(p)
        standby = standby_of(worker, p)
        try:
            if task is not None:
                if not task.restored:
                    return _reply(
                        503, {"error": f"task {p} is restoring its state on this worker: ask again shortly", "task": p}
                    )
                answer = answer_from_store(terms, task.store, key, p, other_thread=True)
                answer.served_by = {**me, "role": "owner"}
                answer.owner = {"worker": worker.instance_id, "this_worker": True}
            elif standby is not None:
                answer = answer_from_store(terms, standby.store, key, p, other_thread=True)
                if answer.status == "absent":  # not authoritative: the standby may not have read that far
                    return _reply(
                        421,
                        {
                            "error": f"this worker's standby of task {p} (the key's) has no instance for the key up to "
                            f"changelog offset {answer.committed['changelog_offset']}, which may be behind "
                            f"the owner's (a standby that just started): ask the owner",
                            "task": p,
                            "owner": self._owner(worker, p),
                        },
                    )
                answer.committed["position"] = None  # a standby's store holds no committed position
                answer.served_by = {
                    **me,
                    "role": "standby",
                    "freshness": f"changelog applied to offset {answer.committed['changelog_offset']}; "
                    f"{len(standby.pending)} record(s) read wait for the owner's next commit",
                }
                answer.owner = self._owner(worker, p)
            elif not worker.assigned_once or worker.assignment_lost:
                return _reply(503, {"error": _not_assigned_yet(worker), "task": p})
            else:
                body = {
                    "error": f"this worker neither owns task {p} (the key's) nor stands by for it: ask its owner",
                    "task": p,
                    "owner": self._owner(worker, p),
                }
                return _reply(421, body)
        except Exception as exc:  # the store closed or moved under the read (a rebalance)
            log.debug("%s: state of task %d not readable now: %s", worker.cfg.name, p, exc)
            return _reply(
                503, {"error": f"task {p} moved while its state was read (a rebalance): ask again", "task": p}
            )
        answer.program = worker.cfg.name  # (the compiled program is named after its file)
        return _reply(404 if answer.status == "absent" else 200, answer.to_json())

    def _owner(self, worker: Any, p: int) -> dict[str, Any]:
        """The member that owns task ``p`` (its repartition partition), as the group describes it."""
        from .reset import describe_group

        try:
            desc = describe_group(self.topo, worker.cfg)
        except Exception as exc:  # the broker did not answer: say so, the answer stands
            return {"known": False, "why": f"the consumer group could not be described: {exc}"}
        rep = self.topo.repartition_topic(worker.cfg)
        for m in desc.members:
            tps = m.assignment.topic_partitions if m.assignment is not None else []
            if any(tp.topic == rep and tp.partition == p for tp in tps):
                host = (m.host or "").lstrip("/")
                return {
                    "known": True,
                    "member": m.member_id,
                    "client_id": m.client_id,
                    "host": host,
                    "url": f"http://{host}:{self.port()}" if host else None,
                    "url_assumes": "every worker serves its HTTP port on the same number",
                }
        return {
            "known": False,
            "why": f"no member of group {desc.group_id} lists task {p} (a rebalance, or a broker "
            f"that does not list members)",
        }


def _not_assigned_yet(worker: Any) -> str:
    """Why a worker that holds no assignment (still joining its group, or after losing one) cannot
    answer: it said "neither owns task N nor stands by for it: ask its owner" and named none, as
    the group had no owner to list either, sending the operator looking for another worker."""
    return (
        f"this worker holds no tasks of {worker.cfg.name} yet: it is joining its consumer group (or "
        f"rejoining after losing its assignment), and /readyz says not ready: ask again shortly"
    )


def standby_of(worker: Any, p: int) -> Any:
    """The worker's standby replica of task ``p``, or None (``TaskManager.standby``)."""
    return worker.task_manager.standby(p)
