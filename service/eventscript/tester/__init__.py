"""The tester: timed event traces in simulated time, JSON-lines output, expected-output diffs."""
