"""End-to-end smoke tests of the tester through its public helpers."""

from conftest import run_program


def test_average_of_readings() -> None:
    out = run_program(
        """
        in double Reading
        out double Average
        { n = 0; sum = 0.0; }
        ( Reading(x) { n = n + 1; sum = sum + x; !>Average(sum / n); } )*
        """,
        "[2026-01-01 00:00:00] Reading(1.0) Reading(2) [00:00:01] Reading(6.0)",
    )
    assert [(o["time"], o["value"]) for o in out] == [
        ("2026-01-01T00:00:00.000000Z", 1.0),
        ("2026-01-01T00:00:00.000000Z", 1.5),
        ("2026-01-01T00:00:01.000000Z", 3.0),
    ]


def test_elapse_fires_between_events() -> None:
    out = run_program(
        """
        in {} Ping
        out {} Silence
        ( Ping() | elapse[10 seconds]() { !>Silence({}); } )*
        """,
        "[2026-01-01 00:00:00] Ping() [00:00:25] Ping() [00:00:30]",
    )
    assert [o["time"] for o in out] == ["2026-01-01T00:00:10.000000Z", "2026-01-01T00:00:20.000000Z"]
