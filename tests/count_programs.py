"""The counting program many tests run: a count per key of ``Tick`` records, emitted on each
one, and (``COUNT_QUIET``) a ``Quiet`` report after 30 s of record time without one, which ends
the key's instance. One copy here, imported by the tests (tests/ and tests/kafka are on the
path: see conftest.py)."""

#: A count per key, emitted with each record.
COUNT = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count; long last;} Count

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count, last: t.n}); } )*
"""

#: ``COUNT``, and after 30 s (record time) without a record, the key reported quiet and ended.
COUNT_QUIET = """
in {string k; long n;} Tick group(Tick.k)
out {string k; long count; long last;} Count, {string k; long count;} Quiet

{ count = 0; }
( Tick(t) { count = count + 1; !>Count({k: t.k, count: count, last: t.n}); } )*
elapse[30 seconds]() { !>Quiet({k: group[0], count: count}); }
"""
