"""An independent reference interpreter for EventScript and the differential tests built on it.

The reference simulates a program directly on its syntax tree (see :mod:`.terms`) and is
compared with the project's tester on random programs and traces (eager and lazy DFA alike).
"""
