"""What to say when a command needs a package of an optional extra that is not installed.

``make run`` installs the package with its ``broker`` extra only, so a new user who goes on to the
backfill guide (``eventscript export``, then ``eventscript backfill``) has no PySpark or Arrow yet:
the command says which extra to install, for an installed package and for a checkout, instead of
ending in ``ModuleNotFoundError``.
"""

from __future__ import annotations


def missing_extra(exc: ImportError, what: str, extra: str = "backfill") -> str:
    """The error line for ``what`` (``"the backfill needs PySpark"``) failing on ``exc``."""
    return (
        f"error: {what} ({exc}); install it with: pip install 'eventscript[{extra}]' "
        f"(in a checkout: .venv/bin/pip install -e '.[{extra}]', or make setup)"
    )
