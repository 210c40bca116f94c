"""HTTP endpoints for orchestrators: /healthz (the process is alive and its workers loop),
/readyz (every worker joined its group and restored its tasks; its body's first line says
"ready" or "not ready", the next ones each program's readiness and idle source partitions), /metrics (Prometheus), and
/state/<program>?key=... when the runner passes a state endpoint (kafka/state_endpoint.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .metrics import Metrics


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        alive: Callable[[], bool],
        ready: Callable[[], bool],
        metrics: Metrics | None = None,
        state: Callable[[str, str, str | None], tuple[int, bytes, str]] | None = None,
        details: Callable[[], list[str]] | None = None,
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                if path == "/healthz":
                    self._answer(200 if outer.alive() else 503, b"ok\n" if outer.alive() else b"unhealthy\n")
                elif path == "/readyz":
                    ok = outer.ready()
                    lines = ["ready" if ok else "not ready", *(outer.details() if outer.details else [])]
                    self._answer(200 if ok else 503, "".join(f"{line}\n" for line in lines).encode())
                elif path == "/metrics" and outer.metrics is not None:
                    self._answer(200, generate_latest(outer.metrics.registry), CONTENT_TYPE_LATEST)
                elif path.startswith("/state/") and outer.state is not None:  # kafka/state_endpoint.py
                    self._answer(*outer.state(path, query, self.headers.get("Authorization")))
                else:
                    self._answer(404, b"not found\n")

            def _answer(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        self.alive = alive
        self.ready = ready
        self.metrics = metrics
        self.state = state
        #: Lines after the first of /readyz (``readiness.readiness_lines``): each program's
        #: readiness and idle source partitions.
        self.details = details
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="health", daemon=True)

    def start(self) -> HealthServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
