"""argparse types for numbers, so that nonsense (``--state-limit -5``, ``--idle nan``) is refused
with a usage error naming the option instead of failing later, or never stopping."""

from __future__ import annotations

import argparse
import math


def positive_int(text: str) -> int:
    """A whole number of at least 1 (a state limit of 0 or -5 means nothing)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def seconds(text: str) -> float:
    """A finite, non-negative number of seconds (``nan`` would make an idle wait never end)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, got {text}")
    return x


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {n}")
    return n
