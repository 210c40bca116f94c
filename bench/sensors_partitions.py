"""Issue 21's measure: does a pipeline on several partitions give the simulated answer?

The shipped sensors pipeline with every topic on ``--partitions`` partitions, over a generated
3-hour trace of 200 sensors on 40 sites (one reading per sensor every ``--step`` seconds, hot
episodes at random), run with ``eventscript dev`` on the embedded broker and, in simulated time,
as ``eventscript test`` runs it; prints how many sites get the simulated run's alarms, in order,
and every site that does not. Run it on another tree with ``PYTHONPATH=TREE/service``.

    .venv/bin/python bench/sensors_partitions.py --step 60
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from eventscript.tester.topology import simulate
from eventscript.tester.trace import read_trace
from eventscript.topology.model import load_graph

SENSORS = Path(__file__).resolve().parents[1] / "topologies" / "sensors"
SITES, PER_SITE, HOURS = 40, 5, 3
DEV = [sys.executable, "-m", "eventscript.cli.main", "dev"]


def write_topology(folder: Path, partitions: int) -> Path:
    """The shipped sensors topology with every topic on ``partitions`` partitions."""
    doc = yaml.safe_load((SENSORS / "topology.yaml").read_text())
    doc["topics"] = {t: {**spec, "partitions": partitions} for t, spec in doc["topics"].items()}
    doc["application"] = f"sensors-partitions-{os.getpid()}"
    doc["state_dir"] = str(folder / "state")
    for program in ("overheat.es", "site_alarm.es"):
        (folder / program).write_text((SENSORS / program).read_text())
    path = folder / "topology.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_trace(folder: Path, step_s: int, seed: int) -> Path:
    rng = random.Random(seed)
    sensors = [(f"S{i % SITES}", f"S{i % SITES}/{i}") for i in range(SITES * PER_SITE)]
    celsius = {sensor: 60.0 for _, sensor in sensors}
    lines = []
    for t in range(0, HOURS * 3600, step_s):
        h, rem = divmod(8 * 3600 + t, 3600)
        lines.append(f"[2026-03-01 {h:02d}:{rem // 60:02d}:{rem % 60:02d}]")
        for site, sensor in sensors:
            if rng.random() < 0.01:
                celsius[sensor] = 90.0  # an episode begins
            elif celsius[sensor] > 80 and rng.random() < 0.2:
                celsius[sensor] = 60.0
            reading = celsius[sensor] + rng.uniform(-2, 2)
            lines.append(f'Reading({{site: "{site}", sensor: "{sensor}", celsius: {reading:.1f}}})')
    path = folder / "sample.trace"
    path.write_text("\n".join(lines) + "\n")
    return path


def alarms_per_site(lines: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for x in lines:
        if x["event"] == "SiteAlarm":
            out.setdefault(x["value"]["site"], []).append((x["time"], json.dumps(x["value"], sort_keys=True)))
    return out


def shown_by_topic(text: str) -> dict[str, list[dict[str, Any]]]:
    """What ``eventscript dev --show`` prints, by topic (``== topic`` headers)."""
    sections: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] | None = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = sections.setdefault(line[3:].strip(), [])
        elif line.strip().startswith("{") and current is not None:
            current.append(json.loads(line))
    return sections


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--step", type=int, default=60, help="seconds between a sensor's readings")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        topology, trace = write_topology(folder, args.partitions), write_trace(folder, args.step, args.seed)
        want: list[dict[str, Any]] = []
        simulate(load_graph(topology), read_trace(str(trace)), lambda line: want.append(line.to_json()))
        env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
        started = time.monotonic()
        done = subprocess.run(
            [*DEV, str(topology), "--trace", str(trace), "--until-idle", "10", "--show"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        took = time.monotonic() - started
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    simulated, broker = alarms_per_site(want), alarms_per_site(shown_by_topic(done.stdout).get("site-alarms", []))
    sites = [f"S{i}" for i in range(SITES)]
    equal = [s for s in sites if simulated.get(s, []) == broker.get(s, [])]
    print(
        f"{args.partitions} partitions, a reading every {args.step} s: eventscript dev {took:.0f} s; "
        f"alarms simulated {sum(map(len, simulated.values()))}, on the broker {sum(map(len, broker.values()))}; "
        f"sites with the simulated alarms: {len(equal)} of {len(sites)}"
    )
    for site in sites:
        if site not in equal:
            print(f"  {site}: simulated {simulated.get(site, [])}")
            print(f"  {site}: broker    {broker.get(site, [])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
