"""What the ``--help`` of the commands an operator uses ends with: command lines to copy.

A new user's walk from one program to a pipeline found the help of ``topology``, ``dev``, ``run``,
``tail``, ``state``, ``reset``, ``upgrade`` and ``backfill`` listing options with no example,
while the docs show the lines that work together (``dev --health-port`` with ``state --url``,
``tail --bootstrap-servers`` with the address ``dev`` prints). Each line starting with
``eventscript`` is one the parser takes (``tests/cli/test_help_examples.py``).
"""

from __future__ import annotations

import argparse
import textwrap

#: The command (with its action, for ``topology plan``) -> the text its help ends with.
EXAMPLES: dict[str, str] = {
    "topology": """\
examples, in the order a first deployment takes them:
  eventscript topology check topology.yaml
  eventscript test --trace sample.trace topology.yaml --expect expected.jsonl
  eventscript topology plan topology.yaml
  eventscript topology graph topology.yaml -o topology.svg
  eventscript dev topology.yaml --trace sample.trace --until-idle 5 --show
  eventscript topology plan topology.yaml --bootstrap-servers kafka:9092 --apply
docs/topologies.md tells more.
""",
    "topology check": """\
example:
  eventscript topology check topology.yaml
each message is at file:line:col and ends with its code, e.g. [unwritten-topic] for a misspelt
link (docs/topologies.md lists them).

exit status: 0 no errors, 1 errors (or warnings, with --strict), 2 the topology cannot be read.
""",
    "topology plan": """\
examples:
  eventscript topology plan topology.yaml
  eventscript topology plan topology.yaml --bootstrap-servers kafka:9092
  eventscript topology plan topology.yaml --bootstrap-servers kafka:9092 --apply

exit status: 0 the plan fits; 1 a topic exists with another partition count, --apply refused, or
the topology has wiring errors (printed after the plan; --apply then creates nothing); 2 the
topology cannot be read.
""",
    "topology graph": """\
example:
  eventscript topology graph topology.yaml -o topology.svg
without Graphviz, the DOT text is written next to the requested file.
""",
    "dev": """\
examples:
  eventscript dev topology.yaml --trace sample.trace --until-idle 5 --show
  eventscript dev topology.yaml --trace sample.trace --follow
  eventscript dev topology.yaml --trace open.trace --health-port 8080
then, while it runs, from another terminal (the address is the one of dev's line 'embedded
Kafka-compatible broker (Tansu) on HOST:PORT'; the state query needs state_query: {enabled: true}
in the topology):
  eventscript tail alerts --bootstrap-servers 127.0.0.1:40123
  eventscript state topology.yaml --program left-open --key front --url http://127.0.0.1:8080
a program on the wall clock (clock: wall, the default) fires its timers in real time, not at the
trace's times: 'clock: record' in its settings replays the trace's time (docs/worker.md).
""",
    "run": """\
examples:
  eventscript run topology.yaml
  eventscript run topology.yaml --bootstrap-servers kafka:9092 --health-port 8080 --health-host 0.0.0.0
  eventscript run topology.yaml --program filter --program three-big-trades
check the topology first ('eventscript topology check'); it runs until SIGTERM or Ctrl-C, which
commit before stopping (docs/worker.md, docs/operations.md).
""",
    "tail": """\
examples:
  eventscript tail alerts --topology topology.yaml
  eventscript tail door-events --topology topology.yaml --follow
  eventscript tail alerts-errors --bootstrap-servers 127.0.0.1:40123
with --topology, records of a topic written from outside are named as the program reading them
names them. On dev's broker, --bootstrap-servers takes the address dev prints.
""",
    "state": """\
examples:
  eventscript state topology.yaml --program left-open --key front --url http://127.0.0.1:8080
  eventscript state topology.yaml --program by-lab --key '["lab", 3]' --json
  eventscript state dump topology.yaml --program left-open --output state.jsonl
the workers serve the query only with state_query: {enabled: true} in the topology and a health
port (run or dev --health-port). docs/operations.md, "A key did not alert", reads an answer.

exit status: 0 the key's instance is present or ended, 1 absent, 2 the question cannot be asked
or no worker asked could answer it (the key's task restoring, or its owner not known).
""",
    "reset": """\
examples (stop the program's workers first):
  eventscript reset topology.yaml --program left-open --dry-run
  eventscript reset topology.yaml --program left-open --to-datetime 2026-01-01T00:00:00Z --wait 60
  eventscript reset topology.yaml --program left-open --local-only
docs/operations.md, "A key did not alert", step 4.
""",
    "upgrade": """\
example:
  eventscript upgrade plan deployed/topology.yaml topology.yaml
then set the program's 'upgrade:' (carry or restart) in the topology as the plan says
(docs/operations.md, "Upgrade with state").
""",
    "upgrade plan": """\
examples:
  eventscript upgrade plan deployed/topology.yaml topology.yaml
  eventscript upgrade plan old.es new.es
  eventscript upgrade plan --json deployed/topology.yaml topology.yaml
each program's plan ends with what to do: exit 0, every state carries ('upgrade: carry' for a
changed program); 1, read the reasons, then 'upgrade: carry' or 'restart', or reprocess; 2, deploy
as a new application, or reprocess.
""",
    "produce": """\
examples:
  eventscript produce topology.yaml --trace sample.trace
  eventscript produce topology.yaml --trace open.trace --program left-open --bootstrap-servers 127.0.0.1:40123
each event is stamped with its time in the trace; on dev's broker, --bootstrap-servers takes the
address dev prints. 'eventscript tail TOPIC' shows what was published.
""",
    "export": """\
examples (docs/backfill.md):
  eventscript export topology.yaml --trace sample.trace -o trades.jsonl
  eventscript export topology.yaml --topic trades -o trades.jsonl --bootstrap-servers kafka:9092
then 'eventscript backfill topology.yaml --input trades.jsonl --output out.jsonl' runs a program over it.
""",
    "backfill": """\
examples (docs/backfill.md, "Quick start"):
  eventscript export topology.yaml --trace sample.trace -o trades.jsonl
  eventscript backfill topology.yaml --program filter --input trades.jsonl --output filtered.jsonl --no-ui
  eventscript backfill topology.yaml --program filter --from 2026-01-01T00:00:00Z --output jan.jsonl
  eventscript backfill topology.yaml --program filter --handover
""",
}


def attach(parser: argparse.ArgumentParser, command: str) -> None:
    """End the help of ``command`` (``topology plan`` for an action) with its examples. The
    examples keep their lines; the description, kept on one line in the code, is wrapped here since
    the raw formatter would not. ``main`` calls it for each command, the commands with actions
    for each of those."""
    text = EXAMPLES.get(command)
    if text is None:
        return
    parser.epilog = text
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    if parser.description:
        parser.description = textwrap.fill(parser.description, width=79)
