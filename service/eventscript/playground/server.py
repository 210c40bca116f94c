"""The playground's HTTP server (standard library): the static page and the JSON requests of
``service``. One thread per request; requests share nothing but the immutable configuration."""

from __future__ import annotations

import json
import logging
import mimetypes
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from ..engine.encoding import json_line
from ..engine.tuning import configure_gc
from . import cases, examples, service
from .limits import LimitExceeded, Limits

STATIC = Path(__file__).parent / "static"
log = logging.getLogger(__name__)


@dataclass
class Config:
    limits: Limits = field(default_factory=Limits)
    cases_dir: Path = field(default_factory=lambda: Path("playground-cases"))
    #: What the page opens with: the files named on the command line (see ``cli/playground_cmd``).
    initial: dict[str, Any] | None = None

    @property
    def max_body(self) -> int:
        lim = self.limits
        return lim.trace_bytes + lim.programs * lim.program_bytes + 100_000


def make_handler(config: Config) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "eventscript-playground"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a request line per keystroke would drown the terminal

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, obj: Any, status: int = HTTPStatus.OK) -> None:
            try:  # orjson: a 10,000-event run's answer (4 MB) in a fifth of json's time
                body = orjson.dumps(obj)
            except TypeError:  # (orjson.JSONEncodeError) a lone surrogate in a string: json_line escapes it
                body = json_line(obj).encode("utf-8")
            self._send(status, body, "application/json; charset=utf-8")

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            if path in ("/", "/index.html"):
                return self._static("index.html")
            if path == "/favicon.ico":
                return self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            if path.startswith("/static/"):
                return self._static(path[len("/static/") :])
            if path == "/api/examples":
                return self._json(examples.catalogue())
            if path.startswith("/api/examples/"):
                found = examples.load(path[len("/api/examples/") :])
                return self._json(found) if found else self._json({"error": "no such example"}, HTTPStatus.NOT_FOUND)
            if path == "/api/initial":
                return self._json(config.initial or {})
            if path == "/api/limits":
                lim = config.limits
                return self._json(
                    {
                        "program_bytes": lim.program_bytes,
                        "trace_bytes": lim.trace_bytes,
                        "run_seconds": lim.run_seconds,
                        "outputs": lim.outputs,
                        "allow_externals": lim.allow_externals,
                    }
                )
            self._json({"error": f"nothing at {path}"}, HTTPStatus.NOT_FOUND)

        def _static(self, name: str) -> None:
            files = {p.name: p for p in STATIC.iterdir() if p.is_file()}
            f = files.get(name)
            if f is None:
                return self._json({"error": f"no file {name}"}, HTTPStatus.NOT_FOUND)
            ctype = mimetypes.guess_type(f.name)[0] or "application/octet-stream"
            self._send(
                HTTPStatus.OK,
                f.read_bytes(),
                ctype + ("; charset=utf-8" if ctype.startswith("text/") or ctype.endswith("javascript") else ""),
            )

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > config.max_body:
                return self._json(
                    {
                        "error": f"the request is over the playground's limit of {config.max_body} "
                        f"bytes (program size and trace size limits)"
                    },
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                )
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except (ValueError, UnicodeDecodeError):
                return self._json({"error": "the request is not JSON"}, HTTPStatus.BAD_REQUEST)
            try:
                if path == "/api/check":
                    return self._json(service.check(body, config.limits))
                if path == "/api/run":
                    return self._json(service.run(body, config.limits))
                if path == "/api/case":
                    return self._json(cases.save_case(body, config.limits, config.cases_dir))
            except (service.RequestError, LimitExceeded) as exc:
                return self._json({"error": str(exc)}, HTTPStatus.BAD_REQUEST)
            except Exception as exc:  # a bug: the page says so rather than waiting forever
                log.exception("playground request %s failed", path)
                return self._json(
                    {
                        "error": f"the playground failed on this request ({type(exc).__name__}: {exc}); "
                        f"please report it with the page's address"
                    },
                    HTTPStatus.INTERNAL_SERVER_ERROR,
                )
            self._json({"error": f"nothing at {path}"}, HTTPStatus.NOT_FOUND)

    return Handler


def make_server(config: Config, host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (port 0: any free port); ``serve_forever`` runs it.

    The process's garbage collector is tuned as the other hosts tune it (``configure_gc``): a
    run records a snapshot per step, and the default collector rescans them some hundred times
    over a 10,000-event run, a third of its CPU."""
    configure_gc()
    server = ThreadingHTTPServer((host, port), make_handler(config))
    server.daemon_threads = True
    return server
