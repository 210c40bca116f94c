"""Upgrading a running program: carrying live instances from one compiled version to the next.

An instance's snapshot holds a state of the automaton that wrote it. A new version of the program
compiles to another automaton, so before a worker runs the new version over old state it needs a
plan that says, for every old state, where an instance found there goes:

- ``fingerprint``: a stable hash of what the machine does (not of comments or layout), so that a
  snapshot can name the program that wrote it;
- ``diff``: the structural match of the two programs' regular expressions (markers and action
  blocks), so that an edit in one place does not break the match elsewhere;
- ``automaton``: each DFA state as the marker positions that can have been matched last;
- ``timers``: the rule that re-arms a pending timer in the new state;
- ``plan``: the verdict per old state (carried to a new state, restarted or ended, and why),
  the variables by name and type, and what makes an upgrade impossible (exit codes 0/1/2);
- ``convert``: a pure function from one old snapshot to the new version's (or restart/end);
- ``loader``: the per-instance hook for hosts, under the topology's policy (refuse, carry,
  restart), with counts and a summary line.

Hosts that keep state wire it in through ``task/versions.py``: snapshots name their version
(format 3), the task state keeps each version's compiled program, and a task converts another
version's instances as it loads them.
"""
