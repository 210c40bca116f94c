"""``state`` and ``reset``: an application's state, for operators.

- ``eventscript state TOPOLOGY --program P --key K [--json] [--url URL]``: asks a running worker
  (its HTTP port's ``/state/<program>``) about one key and prints the answer for a person;
- ``eventscript state dump TOPOLOGY --program P [--output FILE.jsonl|.parquet]``: every instance,
  from the changelog, without running the program;
- ``eventscript reset TOPOLOGY --program P [--to-earliest | --to-datetime T | --to-offsets ...]
  [--dry-run]``: committed offsets, internal topics and local state back to a starting point.

Their options: ``state_options``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .state_options import TOKEN_ENV

if TYPE_CHECKING:
    from ..automata.compiled import CompiledProgram


def _load(path: str, bootstrap: str | None) -> Any:
    from .topology_args import load_with_address

    return load_with_address(path, bootstrap)


def _program(topo: Any, name: str | None) -> Any:
    from ..topology.config import TopologyError

    if name is None:
        if len(topo.programs) != 1:
            raise TopologyError(
                f"the topology has {len(topo.programs)} programs: name one with --program "
                f"({', '.join(p.name for p in topo.programs)})"
            )
        return topo.programs[0]
    return topo.program(name)


def run_state(args: argparse.Namespace) -> int:
    from ..topology.config import TopologyError
    from .kafka_cmds import _logging

    _logging(args.verbose)
    target = list(args.target)
    dump = target[0] == "dump"
    if dump:
        target = target[1:]
    if len(target) != 1:
        print("error: give one topology: eventscript state [dump] TOPOLOGY.yaml --program P ...", file=sys.stderr)
        return 2
    try:
        topo = _load(target[0], args.bootstrap_servers)
        cfg = _program(topo, args.program)
        if dump:
            return _dump(topo, cfg, args.output, args.spark)
        if args.output is not None or args.spark is not None:
            print("error: --output and --spark are for 'state dump'", file=sys.stderr)
            return 2
        return _ask(topo, cfg, args)
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted while contacting Kafka", file=sys.stderr)
        return 130


def _dump(topo: Any, cfg: Any, output: Path | None, spark_master: str | None) -> int:
    from ..kafka.changelog_dump import dump_rows, fold_changelog, write_rows
    from ..kafka.supervisor import compile_programs
    from ..topology.config import TopologyError

    program = compile_programs(topo, [cfg])[cfg.name]
    if spark_master is not None:
        if output is None:
            raise TopologyError("state dump --spark writes a Parquet dataset: give --output DIR.parquet")
        from ..backfill.job import spark_session
        from ..backfill.state_dump import dump_on_spark

        spark = spark_session(spark_master, ui=False)
        try:
            n = dump_on_spark(spark, topo, cfg, program, output)
        finally:
            spark.stop()
        print(f"{n} instance(s) of {cfg.name} -> {output} (Parquet dataset)", file=sys.stderr)
        return 0
    tasks = fold_changelog(topo, cfg)
    n = write_rows(dump_rows(program, tasks, cfg.name), output, sys.stdout)
    skipped = sum(t.skipped for t in tasks)
    print(
        f"{n} instance(s) of {cfg.name} from {len(tasks)} changelog partition(s)"
        + (f"; {skipped} record(s) of uncommitted batches skipped" if skipped else "")
        + (f" -> {output}" if output else ""),
        file=sys.stderr,
    )
    return 0


def _ask(topo: Any, cfg: Any, args: argparse.Namespace) -> int:
    url = worker_url(args.url) or (f"http://{topo.health.host}:{topo.health.port}" if topo.health.port else None)
    if url is None:
        print(
            "error: the topology serves no HTTP port (health.port is 0): give a worker's address with --url, "
            "e.g. --url http://127.0.0.1:8080 for a run or dev started with --health-port 8080"
            + ("" if topo.state_query.enabled else " (the topology also needs state_query: {enabled: true})"),
            file=sys.stderr,
        )
        return 2
    refused = _key_refusal(_compiled(topo, cfg), cfg.name, args.key)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get(TOKEN_ENV) or topo.state_query.token
    query = "?" + urllib.parse.urlencode({"key": args.key}) if args.key is not None else ""
    status, body = _get(f"{url.rstrip('/')}/state/{urllib.parse.quote(cfg.name)}{query}", token)
    if status == 421 and isinstance(body, dict) and (body.get("owner") or {}).get("url"):
        # The worker asked does not hold the key's task nor a standby of it: ask the owner once.
        status, body = _get(f"{body['owner']['url']}/state/{urllib.parse.quote(cfg.name)}{query}", token)
    if args.json:
        print(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    elif isinstance(body, dict) and "status" in body:
        print("\n".join(answer_text(body)))
    else:
        print(f"error: {refusal_text(body, status, sent_token=token is not None)}", file=sys.stderr)
    return 0 if status == 200 else 1 if status == 404 else 2


def worker_url(url: str | None) -> str | None:
    """``--url`` as a URL: ``127.0.0.1:8080`` (how ``--health-port`` and port-forward name it) is
    taken as ``http://127.0.0.1:8080``; urllib refused it as "unknown url type: 127.0.0.1"."""
    if url is None or "://" in url:
        return url
    return f"http://{url}"


def refusal_text(body: Any, status: int = 0, sent_token: bool = False) -> str:
    """A worker's refusal in words. For a 421 whose owner the worker could not name (the group lists
    no member with the task: a rebalance, a worker still joining, a broker that lists no members),
    why, and what to do: the bare "ask its owner" named none. (Not an ``absent``: exit status 2.)
    For a 401, where this command takes the token: the worker's words name the HTTP header."""
    if not isinstance(body, dict):
        return str(body)
    owner = body.get("owner")
    text = str(body.get("error"))
    if isinstance(owner, dict) and owner.get("known") is False:
        text += (
            f"; the owner is not known ({owner.get('why', 'no reason given')}): ask again once the workers "
            f"are ready (/readyz), or ask each worker with --url"
        )
    if status == 401:
        text += (
            f"; {'the token sent is not the one the worker expects' if sent_token else 'no token was sent'}: give the "
            f"worker's state_query.token with --token or ${TOKEN_ENV} (else the topology's is sent)"
        )
    return text


def _compiled(topo: Any, cfg: Any) -> CompiledProgram:
    """The program, for its group key (what --key must look like); a program that does not
    compile says so (``compile_programs`` prints its errors and raises)."""
    from ..kafka.supervisor import compile_programs

    return compile_programs(topo, [cfg])[cfg.name]


def _key_refusal(program: CompiledProgram, name: str, key: str | None) -> str | None:
    """Why ``--key`` does not fit the program's group key, said before any worker is asked (a
    worker would answer ``absent`` for a key it can never hold), or None when it fits.

    The rule is the worker's (``state.query.parse_key``), with one more refusal: for a key of one
    component, a JSON array must have one element. Without it, ``--key '["front", 2]'`` asked a
    program grouped by one string about the string ``["front", 2]``; a string that itself looks
    like a JSON array is written as a one-element array: ``--key '["[\\"front\\", 2]"]'``."""
    from ..state.query import BadKey, parse_key

    types = program.program.key_types
    if key is None and types is not None:
        return (
            f"program {name} is grouped: name the key to ask about with --key K (its value, or a JSON "
            'array of its components, e.g. --key \'["T1", "IBM"]\')'
        )
    if types is not None and len(types) == 1 and _array_length(key) not in (None, 1):
        return (
            f"program {name} is grouped by one {types[0]}, and --key {shlex.quote(key or '')} is a JSON array of "
            f"{_array_length(key)} values: give the key's value (--key front), or a one-element array "
            f"(--key '[\"front\"]'); a string that itself looks like a JSON array goes inside one "
            f"(--key '[\"[1, 2]\"]' is the string [1, 2])"
        )
    try:
        parse_key(program, key, name)
    except BadKey as exc:
        return str(exc)
    return None


def _array_length(text: str | None) -> int | None:
    """The number of elements of ``text`` read as a JSON array; None when it is not one."""
    try:
        value = orjson.loads(text or "")
    except orjson.JSONDecodeError:
        return None
    return len(value) if isinstance(value, list) else None


def _get(url: str, token: str | None) -> tuple[int, Any]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return exc.code, {"error": raw.decode(errors="replace").strip() or exc.reason}
    except (urllib.error.URLError, OSError) as exc:
        return 0, {
            "error": f"cannot reach {url}: {getattr(exc, 'reason', exc)}; is a worker running with its HTTP port there?"
        }


def _owner_text(owner: dict[str, Any] | None, served: dict[str, Any]) -> str | None:
    """The owner of the key's task, in words; None when the answer came from the owner itself (the
    line "answered by worker W from its owner store" says it). The line printed the fields as
    they came: "owner: worker w1, this_worker True"."""
    if (
        not owner
        or owner.get("this_worker")
        or (served.get("role") == "owner" and owner.get("worker") == served.get("worker"))
    ):
        return None
    if owner.get("known") is False:
        return f"  owner: not known ({owner.get('why', 'no reason given')})"
    who = owner.get("worker") or owner.get("member") or "a member of the group"
    line = f"  owner: {who}"
    if owner.get("client_id"):
        line += f" (client {owner['client_id']})"
    if owner.get("host"):
        line += f" on {owner['host']}"
    if owner.get("url"):
        line += f", {owner['url']}" + (f" (assuming {owner['url_assumes']})" if owner.get("url_assumes") else "")
    return line


def answer_text(a: dict[str, Any]) -> list[str]:
    """A key's answer for a person: status, who answered and how fresh, the state in program terms."""
    key = orjson.dumps(a.get("key")).decode() if a.get("key") is not None else "(ungrouped: its one instance)"
    lines = [
        f"{a['program']} key {key}" + (f" (task {a['task']})" if a.get("task") is not None else "") + f": {a['status']}"
    ]
    served, committed, owner = a.get("served_by") or {}, a.get("committed") or {}, a.get("owner")
    if served:
        lines.append(
            f"  answered by worker {served.get('worker')} from its {served.get('role')} store"
            + (f" ({served['freshness']})" if served.get("freshness") else "")
        )
    pos = committed.get("position")
    if pos is not None:
        shown = ", ".join(f"{tp}={off}" for tp, off in sorted(pos.items())) or "nothing committed yet"
        lines.append(
            f"  as of the commit at {shown}"
            + (f", record clock {committed['record_clock']}" if committed.get("record_clock") else "")
        )
    owner_line = _owner_text(owner, served)
    if owner_line:
        lines.append(owner_line)
    ended = a.get("ended")
    if ended:
        lines.append(f"  ended at {ended['at']} ({ended['why']}: {ended['explained']})")
        if ended.get("kept_until"):
            lines.append(f"  (this end is remembered until {ended['kept_until']})")
    if a.get("note"):
        lines.append(f"  {a['note']}")
    inst = a.get("instance")
    if inst:
        waiting = ", ".join(f"{m['text']}@{m['line']}:{m['col']}" for m in inst["waiting"]) or "nothing"
        version = inst.get("version")
        if version:  # (a snapshot of another program version: see state.program_versions)
            lines.append(f"  version {version['tag']}: {version['note']}; explained in {version['explained_in']}")
        lines.append(
            f"  state {inst['state']}: "
            + ("ended" if inst["ended"] else f"waits for {waiting}")
            + (" (accepting)" if inst.get("accepting") else "")
        )
        for v in inst["variables"]:
            value = "unset" if v["value"] is None else orjson.dumps(v["value"]).decode()
            lines.append(f"  {v['name']} ({v['type']}) = {value}")
        timer = inst.get("timer")
        if timer:
            lines.append(f"  timer: due {timer['deadline']}" + (f"; {timer['how']}" if timer.get("how") else ""))
        else:
            lines.append("  timer: none pending")
        lines.append(
            f"  created by: {inst['origin']}"
            if inst.get("origin")
            else f"  created by: {inst.get('origin_why', 'unknown')}"
        )
    last = a.get("last_record") or {}
    if last.get("known"):
        lines.append(f"  last record taken: {last['record']} at {last['time']}")
    elif last and a.get("status") != "absent":  # (no instance: nothing to have taken a record)
        lines.append(f"  last record taken: {last.get('why')}")
    return lines


def run_reset(args: argparse.Namespace) -> int:
    from ..kafka.reset import apply_reset, parse_offsets, plan_reset, refusal_now
    from ..topology.config import TopologyError
    from .kafka_cmds import _logging
    from .state_lock import StateFolderError, lock_state_folders

    _logging(args.verbose)
    try:
        topo = _load(args.topology, args.bootstrap_servers)
        cfg = _program(topo, args.program)
        offsets = parse_offsets(args.to_offsets) if args.to_offsets else None
        plan = plan_reset(topo, cfg, to_datetime=args.to_datetime, to_offsets=offsets, local_only=args.local_only)
        print("\n".join(plan.lines()))
        if args.dry_run:
            refused = refusal_now(topo, cfg, plan)
            if refused:
                print(f"note: run now, the reset would be refused: {refused}")
            print("(dry run: nothing changed)")
            return 0
        # A worker of this machine running the program holds its state folder: refuse rather than
        # delete its stores under it (``cli/state_lock.py``; the group's members are checked too).
        held = (
            lock_state_folders(topo, [cfg.name], "stop the worker running it on this machine, then reset")
            if topo.state_path(cfg).exists()
            else contextlib.ExitStack()
        )
        with held:
            for line in apply_reset(topo, cfg, plan, wait=args.wait):
                print(f"done: {line}")
        return 0
    except (TopologyError, StateFolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted while contacting Kafka", file=sys.stderr)
        return 130
