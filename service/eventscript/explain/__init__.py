"""Instances and steps explained in program terms: the markers a key waits for (with their
line:col and text), its variables, its pending timer, and per event the state before and after,
the actions run and the timers set.

Host-neutral: it reads a compiled program and instance snapshots (``engine.context`` format),
so the tester (``eventscript test --explain``), the playground and a running worker's per-key
state endpoint explain instances with one implementation.
"""

from .instance import InstanceView, explain_instance, view_of_snapshot
from .recorder import Step, StepRecorder
from .terms import MarkerRef, ProgramTerms

__all__ = ["InstanceView", "MarkerRef", "ProgramTerms", "Step", "StepRecorder", "explain_instance", "view_of_snapshot"]
