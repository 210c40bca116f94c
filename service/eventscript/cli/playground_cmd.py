"""``eventscript playground [PROGRAM.es | TOPOLOGY.yaml ...]``: the web playground
(``eventscript.playground``), on 127.0.0.1 unless ``--host`` says otherwise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .arguments import port, positive_int


def setup(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files",
        nargs="*",
        metavar="PROGRAM.es | TOPOLOGY.yaml",
        help="what the page opens with: programs (a pipeline, in order) or one topology file",
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="the trace the page opens with (default: sample.trace beside the first file, if there is one)",
    )
    p.add_argument("--port", type=port, default=8765, metavar="N", help="the port (default 8765; 0: any free port)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="H",
        help="the address to listen on (default 127.0.0.1: this machine only). Anyone who can "
        "reach another address can run programs on this machine, within the limits",
    )
    p.add_argument(
        "--allow-externals",
        action="store_true",
        help="let programs declare external (Python) functions; off by default, since they run arbitrary code",
    )
    p.add_argument(
        "--cases-dir",
        default="playground-cases",
        metavar="DIR",
        help="where 'save as test case' writes case folders (default ./playground-cases)",
    )
    p.add_argument(
        "--run-seconds", type=positive_int, default=10, metavar="S", help="longest run of a trace (default 10 s)"
    )


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _read_source(topology: Path, index: int, source: str) -> str:
    """The text of program ``index``'s ``source:``; a file that cannot be read is a ValueError
    placed at the ``source:`` line of the topology, as ``eventscript topology check`` places it."""
    path = topology.parent / source
    try:
        return _read(path)
    except OSError as exc:
        from ..topology.positions import YamlPositions

        where = YamlPositions.read(topology).where("programs", index, "source")
        raise ValueError(
            f"{where}: error: cannot read the program {path}: {exc.strerror or exc}; "
            "fix 'source:' (it is relative to the topology file)"
        ) from None


def _page_name(topology: Path, source: str) -> str:
    """A topology's program as the page names it: its ``source:`` as the topology names it,
    relative to the topology's folder (``stages/filter.es``), so that the topology finds it where
    the playground writes it. ValueError for a source the playground cannot place there."""
    from pathlib import PurePosixPath

    from ..playground.source import name_problem

    name = str(PurePosixPath(source))
    problem = name_problem(name)
    if problem:
        raise ValueError(
            f"{topology}: program source {source!r}: the playground opens a topology whose programs are in "
            f"its folder or in folders below it, named without '..' ({problem.split(': ', 1)[1]}); "
            f"copy the program there and name it so in 'source:'"
        )
    return name


def _not_a_source(paths: list[Path]) -> str:
    """Why files that are no program sources are refused, and what to give instead: a trace given
    where the programs go (``playground p.trace``) is what --trace takes."""
    traces = [p for p in paths if p.suffix.lower() == ".trace"]
    programs = [str(p) for p in paths if p.suffix == ".es"] or ["PROGRAM.es"]
    if traces:
        return f"a trace goes after --trace: eventscript playground {' '.join(programs)} --trace {traces[0]}"
    return (
        "the playground opens program sources (.es) or one topology file (.yaml); "
        "compiled programs have no text to show"
    )


def initial(files: list[str], trace: str | None) -> dict[str, Any]:
    """The page's opening content from the command line's files; OSError/ValueError if unreadable."""
    out: dict[str, Any] = {}
    paths = [Path(f) for f in files]
    if len(paths) == 1 and paths[0].suffix.lower() in (".yaml", ".yml"):
        import yaml

        text = _read(paths[0])
        doc = yaml.safe_load(text)
        programs = (doc or {}).get("programs", []) if isinstance(doc, dict) else []
        out["topology"] = text
        out["programs"] = []
        for i, entry in enumerate(programs if isinstance(programs, list) else []):
            source = entry.get("source") if isinstance(entry, dict) else None
            if isinstance(source, str):
                name = _page_name(paths[0], source)
                out["programs"].append({"name": name, "text": _read_source(paths[0], i, source)})
    elif paths:
        odd = [str(p) for p in paths if p.suffix != ".es"]
        if odd:
            raise ValueError(f"{', '.join(odd)}: {_not_a_source(paths)}")
        out["programs"] = [{"name": p.name, "text": _read(p)} for p in paths]
    trace_path = Path(trace) if trace else (paths[0].parent / "sample.trace" if paths else None)
    if trace_path is not None and (trace or trace_path.exists()):
        out["trace"] = _read(trace_path)
    return out


def run(args: argparse.Namespace) -> int:
    import yaml

    from ..playground.limits import Limits
    from ..playground.server import Config, make_server

    try:
        opening = initial(args.files, args.trace)
    except OSError as exc:
        print(
            f"eventscript playground: cannot read {exc.filename or 'the files'}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    except UnicodeDecodeError:
        print("eventscript playground: a file named is not UTF-8 text", file=sys.stderr)
        return 2
    except yaml.YAMLError as exc:
        print(f"eventscript playground: {args.files[0]}: not a readable topology file: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"eventscript playground: {exc}", file=sys.stderr)
        return 2
    config = Config(
        Limits(allow_externals=args.allow_externals, run_seconds=float(args.run_seconds)), Path(args.cases_dir), opening
    )
    try:
        server = make_server(config, args.host, args.port)
    except OSError as exc:
        print(
            f"eventscript playground: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
            f"choose another --port",
            file=sys.stderr,
        )
        return 2
    address = server.server_address
    host = address[0].decode() if isinstance(address[0], bytes) else str(address[0])
    port = address[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"EventScript playground on http://{shown}:{port}/ (Ctrl-C to stop)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        extra = ", external functions included" if args.allow_externals else ""
        print(
            f"note: listening on {args.host}: whoever reaches it can run programs on this machine (within the "
            f"limits{extra})",
            file=sys.stderr,
            flush=True,
        )
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
