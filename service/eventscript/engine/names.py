"""The global names of the engine's generated code, defined once.

The code ``codegen`` writes (feeds, transitions, classifiers, group keys, timer starts) runs in
one namespace per engine, which the engine fills (``Engine._namespace`` and the executors'
``namespace``). The two sides meet only through these names, so they are declared here, each
with what it holds: the engine binds a name through its constant, and a test
(tests/engine/test_generated_names.py) reads the global names of every function the engine
generates for a set of programs and checks that each is declared here (or a Python builtin).
The names are short on purpose: they are read in the hot path's source, and some are read on
every event.

The generated templates in ``codegen`` spell the names out (``_cget(gk)``): an f-string per
name would make the templates unreadable, and the test keeps both sides honest.
"""

from __future__ import annotations

import re

# -- values and helpers every program may call (Engine._namespace) ---------------------------
UNSET = "UNSET"  #: the marker of a variable never set (values.UNSET)
NAN = "_NAN"
INF = "_INF"
ERROR = "_err"  #: _err(ctx, code, message): an $error event of the instance ctx (or None)
UNSET_READ = "_unset"  #: _unset(ctx, name, default): $error 3, a variable read before it was set
LONG_DIV = "_ldiv"
LONG_REM = "_lrem"
DOUBLE_DIV = "_fdiv"
DOUBLE_REM = "_fmod"
INDEX = "_idx"  #: _idx(ctx, array, i, default): a[i], or $error 5 and the default
SET_INDEX = "_setidx"
NEW_ARRAY = "_new"
DEEP_COPY = "_copy"
WRAP = "_wrap"  #: the 64-bit wrap of a long result, past codegen.INLINE_DEPTH
NOW = "_now"
SET_TIMER = "_settimer"
DISARM = "_disarm"
TIME_RANGE = "_trange"
DEADLINE_TOO_FAR = "_tfar"
ELAPSE_DEADLINE = "_elapse_d"
ARRIVE_PATTERN = "_pattern"
FORMAT_DOUBLE = "_fmtd"
FORMAT_TIME = "_fmtt"
KEY_DOUBLE = "_kd"  #: values.key_double: a double group key component in its one form

# -- instances (Engine._namespace, Engine.__init__) --------------------------------------------
TABLE_GET = "_cget"  #: the instance table's ``get`` (by table key ``gk``)
LOADER = "_loader"  #: Engine.loader, the host's store lookup (None: none); rebound by the host
SINGLE = "_single"  #: the one instance of an ungrouped program
CREATE = "_create"  #: _create(gk): a key's new instance, its initial actions run
KEYED = "_keyed"  #: _keyed(gk): a stand-in context of a key without an instance (for errors)
UNEXPECTED = "_unexpected"
UNEXPECTED_KEY = "_unexpected_key"
TERMINATE = "_terminate"
DIRTY = "_dirty"  #: the changed instances by id (None: not tracked)

# -- compact tables (eager.CompactExecutor; codegen.CodeGen._compact_feed) ----------------------
TABLE = "_tab"  #: the table itself: state numbers, or records of the variables then the number
START_STATE = "_S"
VIEW = "_view"
ENDS = "_E"  #: by state number: does entering it end the instance
STATES = "_ST"  #: the states by number
VIEW_CLASS = "_VC"
NO_VARIABLES = "_NV"
NEW_RECORD = "_rec"
TARGETS = "_NS"  #: per symbol, the _N<k> tuples
FUNCTIONS = "_FS"  #: per symbol, the _F<k> tuples

# -- the lazy DFA (lazy.LazyExecutor) -----------------------------------------------------------
CACHE_YOUNG = "_M"  #: the transition cache's young generation, per symbol: mask -> transition
CACHE = "_cache"
STEP_TABLES = "_T"
ACTION_MASKS = "_ACT"
OUT_MASK = "_OUT"
STEP = "_step"
FUNCTIONS_BY_ACTIONS = "_FN"
NO_FUNCTION = "_NOFN"
LAZY_FUNCTION = "_lfn"
LAZY_FUNCTION_MISS = "_fnmiss"
SIMULATE = "_SIM"  #: the cache is off: every step is simulated; rebound while events run
MISS = "_miss"

# -- outputs (Engine._bind_emitters) -------------------------------------------------------------
CONSUMER = "_C"  #: rebound when the host sets Engine.consumer
PROGRAM_NAME = "_PN"
NEW_OBJECT = "_NEWE"
EMITTED = "_EM"

# -- indexed names: the prefix, then a number --------------------------------------------------
OUTPUT = "_e"  #: _e<k>(ctx, value): emit output k (rebound by set_output_handler)
OUTPUT_TYPE = "_OT"
TARGET_OF = "_N"  #: compact: _N<sym>[state] -> target state number (None: no transition)
FUNCTION_OF = "_F"  #: compact: _F<sym>[state] -> the transition's function
CODE_OF = "_K"  #: compact: _K<sym>[state] -> which of the symbol's functions (RTrans.code)
BUILTIN = "_b_"  #: _b_<id>: a built-in function (builtins.IMPLEMENTATIONS)
EXTERNAL = "_x"
TRANSITION = "_t"  #: _t<k>(ctx, ev): a transition's actions and timer start or stop
TIMER_START = "_s"
CLASSIFIER = "_c"
GROUP_KEY = "_k"

# -- the functions the engine defines and calls --------------------------------------------------
FEED = "feed"
FEED_KEYED = "feed_keyed"
FEED_MANY = "feed_many"
FEED_LOOP = "_feed_loop"  #: batch.LOOP

#: Names rebound while events run or by hosts between them (besides the outputs _e<k>): a batch
#: (``feed_many``) must read them per event, not once per batch.
REBOUND = frozenset({SIMULATE, LOADER, CONSUMER})

_INDEXED = (
    OUTPUT_TYPE,
    OUTPUT,
    TARGET_OF,
    FUNCTION_OF,
    CODE_OF,
    EXTERNAL,
    TRANSITION,
    TIMER_START,
    CLASSIFIER,
    GROUP_KEY,
)
FIXED = frozenset(
    v for k, v in globals().items() if k.isupper() and isinstance(v, str) and v not in _INDEXED and v != BUILTIN
)
_INDEXED_NAME = re.compile(f"(?:{'|'.join(map(re.escape, _INDEXED))})[0-9]+|{re.escape(BUILTIN)}[A-Za-z0-9_]+")


def indexed(prefix: str, k: int | str) -> str:
    """The name of item ``k`` of an indexed family (``indexed(OUTPUT, 2)`` is ``_e2``)."""
    return f"{prefix}{k}"


def is_output(name: str) -> bool:
    """Is ``name`` an output function ``_e<k>`` (rebound by output handlers)?"""
    return name[:2] == OUTPUT and name[2:].isdigit()


def declared(name: str) -> bool:
    """Is ``name`` one of the generated code's declared global names?"""
    return name in FIXED or _INDEXED_NAME.fullmatch(name) is not None
