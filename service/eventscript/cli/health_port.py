"""Is the health port free? Asked by ``run`` and ``dev`` before they start anything.

The workers' health server binds its port only once they run, after the broker (``dev``) and the
topics are ready: a port in use then ended the command with Python's ``OSError: [Errno 98]`` and a
traceback. Trying the address first turns that into one line saying which address is taken, where
the port was chosen (the option or ``health.port`` at ``topology.yaml:line:col``) and what to do.
"""

from __future__ import annotations

import socket
from pathlib import Path


def health_port_problem(host: str, port: int | None, from_option: bool, topology_file: str) -> str | None:
    """Why the health server could not listen on ``host:port``, as a message for the user; None
    when it can (or when there is no server: port 0 or None). It binds as the server does
    (``SO_REUSEADDR``), so a port left in TIME_WAIT by a stopped worker counts as free."""
    if not port:
        return None
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        from ..topology.positions import YamlPositions

        chosen = (
            "--health-port"
            if from_option
            else f"health.port at {YamlPositions.read(Path(topology_file)).where('health', 'port')}"
        )
        return (
            f"error: the health server cannot listen on {host}:{port} ({exc.strerror or exc}); "
            f"stop what uses that port, or choose another port ({chosen})"
        )
    return None
