"""``eslib.systemFuncs``: the document's section 2.2 example, ``function string envVar(string):
"eslib.systemFuncs.EnvVar"``, and its section 6.6 implementation in Java (``System.getenv``)."""

from __future__ import annotations

import os


def EnvVar(name: str) -> str:  # the document's name
    """The value of the environment variable ``name``. One that is not set is a failure of the
    function (``$error`` 7, and the call gives ``""``): Java's ``System.getenv`` gives null there,
    which no EventScript string can be."""
    value = os.environ.get(name)
    if value is None:
        raise LookupError(f"the environment variable {name!r} is not set")
    return value
