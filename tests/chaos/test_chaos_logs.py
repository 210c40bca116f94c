"""``chaos_fleet.wedged`` on worker logs written by hand: a fatal client error after which the
worker neither rejoined nor exited is reported; one followed by a new assignment or by the
worker's own exit is not."""

from __future__ import annotations

from pathlib import Path

from chaos_fleet import MARK, wedged

FATAL = (
    "2026-11-26 06:13:29,444 CRITICAL eventscript.kafka.librdkafka: FATAL [eventscript#consumer-2] "
    "[thrd:main]: Fatal error: Broker: Static consumer fenced by other consumer with same group.instance.id"
)
ASSIGNED = "2026-11-26 06:13:31,000 INFO eventscript.kafka.worker: p: assigned tasks [1]"


def _log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "w0.log"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def test_a_fatal_error_then_nothing_until_killed_is_a_wedge(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        f"x {MARK} started",
        ASSIGNED,
        FATAL,
        "2026-11-26 06:13:30 WARNING commit failed",
        f"x {MARK} killed -9",
        f"x {MARK} started",
        ASSIGNED,
    )
    found = wedged(log)
    assert len(found) == 1 and "Static consumer fenced" in found[0] and "killed -9" in found[0]


def test_a_fatal_error_at_the_end_of_the_log_is_a_wedge(tmp_path: Path) -> None:
    assert len(wedged(_log(tmp_path, f"x {MARK} started", FATAL))) == 1


def test_a_rejoin_or_an_exit_after_a_fatal_error_is_no_wedge(tmp_path: Path) -> None:
    assert wedged(_log(tmp_path, f"x {MARK} started", FATAL, ASSIGNED, f"x {MARK} killed -9")) == []
    assert (
        wedged(
            _log(tmp_path, f"x {MARK} started", FATAL, f"x {MARK} exited by itself with status 1", f"x {MARK} started")
        )
        == []
    )
