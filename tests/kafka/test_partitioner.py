"""murmur2 and the key schemes' specialised routers give exactly what the reference code gives.

Every record's key is hashed (and with many keys, few are cached), so murmur2 reads 4-byte words
with ``struct`` and folds its rounds; the routers skip the key tuple and the key caches. These
tests hold them to Kafka's own test vectors and to the plain versions over many keys."""

from __future__ import annotations

import random
import struct

import pytest

from eventscript.kafka.config import InputConfig, ProgramConfig
from eventscript.kafka.keys import KeyScheme, crc32_partition, scheme_for
from eventscript.kafka.partitioner import key_bytes, murmur2, murmur2_partition, partition_of, value_key_bytes
from eventscript.language.types import BOOLEAN, DOUBLE, LONG, STRING

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def reference_murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2, transcribed loop for loop (unsigned)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    extra = length & 3
    if extra == 3:
        h ^= data[n4 + 2] << 16
    if extra >= 2:
        h ^= data[n4 + 1] << 8
    if extra >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def test_murmur2_gives_kafkas_test_vectors() -> None:
    # org.apache.kafka.common.utils.UtilsTest.testMurmur2 (signed 32-bit results)
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for data, signed in cases.items():
        assert murmur2(data) == signed & _MASK, data


def test_murmur2_matches_the_reference_loop() -> None:
    rnd = random.Random(7)
    samples = [b""] + [f"k{i}".encode() for i in range(3000)]
    samples += [bytes(rnd.randrange(256) for _ in range(rnd.randrange(70))) for _ in range(3000)]
    for data in samples:
        assert murmur2(data) == reference_murmur2(data), data
        assert murmur2_partition(data, 12) == partition_of(data, 12) == (reference_murmur2(data) & 0x7FFFFFFF) % 12


@pytest.mark.parametrize(
    ("fmt", "types"),
    [
        ("string", (STRING,)),
        ("string", (LONG,)),
        ("bytes", (STRING,)),
        ("bytes", (LONG,)),
        ("json", (STRING,)),
        ("json", (STRING, LONG, BOOLEAN)),
        ("none", (LONG, STRING)),
        ("string", (DOUBLE,)),
        ("json", (DOUBLE, STRING)),
    ],
)
def test_routers_give_the_schemes_routing_bytes(fmt: str, types: tuple) -> None:
    scheme = KeyScheme(fmt, "murmur2", types)
    values = {
        STRING: ["a", "sensor-1", "ü-é", "\ud800x", 'quote"s', ""],
        LONG: [0, -1, 2**63 - 1, -(2**63), 42],
        BOOLEAN: [True, False],
        DOUBLE: [0.5, -1.0],
    }
    router = scheme.router()
    one = scheme.value_router()
    rnd = random.Random(3)
    for _ in range(200):
        key = tuple(rnd.choice(values[t]) for t in types)
        try:
            expected = scheme.routing_bytes(key)
        except TypeError:  # a lone surrogate in a JSON key: the router refuses it too
            if router is not None:
                with pytest.raises(TypeError):
                    router(key)
            continue
        if router is not None:
            assert router(key) == expected, key
        if one is not None:
            assert one(key[0]) == expected, key
    assert (router is None) == (DOUBLE in types)
    if fmt == "bytes" and types == (LONG,):
        assert one is not None and one(5) == struct.pack(">q", 5)


def test_the_consistent_random_partitioner_is_crc32() -> None:
    import zlib

    assert all(crc32_partition(f"k{i}".encode(), 7) == zlib.crc32(f"k{i}".encode()) % 7 for i in range(500))


def test_a_program_home_scheme_has_a_router_for_plain_string_keys() -> None:
    cfg = ProgramConfig(
        name="p",
        source="p.es",
        inputs=[InputConfig(topic="in", event="Tick")],
        outputs={"default": "out"},
        errors="err",
    )
    assert scheme_for(cfg, [STRING]).router() is not None


def test_value_key_bytes_give_the_canonical_key_bytes() -> None:
    strings = [
        "a",
        "k12345",
        "sensor-1",
        "with space",
        'quo"te',
        "back\\slash",
        "tab\t",
        "del\x7f",
        "ü-é",
        "",
        "line\nbreak",
        "</script>",
        "\u2028",
    ]
    one = value_key_bytes([STRING])
    assert one is not None
    for s in strings:
        assert one(s) == key_bytes((s,), [STRING]), s
    longs = value_key_bytes([LONG])
    assert longs is not None
    for n in (0, -1, 2**63 - 1, -(2**63)):
        assert longs(n) == key_bytes((n,), [LONG])
    assert value_key_bytes([DOUBLE]) is None and value_key_bytes([STRING, LONG]) is None


def test_librdkafkas_partitioner_is_found_and_used() -> None:
    # confluent-kafka's wheel bundles librdkafka: the routing of every task goes through it.
    from eventscript.task import native_partitioner, partitioner

    native = native_partitioner.native_murmur2_partition(murmur2)
    assert native is not None, native_partitioner.librdkafka_candidates()
    assert partitioner.murmur2_partition.__module__ == native_partitioner.__name__


def test_librdkafkas_partitioner_equals_the_python_one_on_random_keys() -> None:
    from eventscript.task.native_partitioner import JAVA_VECTORS, native_murmur2_partition
    from eventscript.task.partitioner import python_murmur2_partition

    native = native_murmur2_partition(murmur2)
    assert native is not None
    rnd = random.Random(26)
    samples = list(JAVA_VECTORS) + [b""] + [f"k{i}".encode() for i in range(2000)]
    samples += [rnd.randbytes(rnd.randrange(200)) for _ in range(5000)]
    for data in samples:
        n = rnd.choice((1, 2, 3, 12, 100, 2**31 - 1))
        assert native(data, n) == python_murmur2_partition(data, n) == (reference_murmur2(data) & 0x7FFFFFFF) % n
    for data, signed in JAVA_VECTORS.items():
        assert native(data, 2**31 - 1) == (signed & 0x7FFFFFFF) % (2**31 - 1)


def test_a_library_that_disagrees_is_not_used() -> None:
    from eventscript.task.native_partitioner import agrees
    from eventscript.task.partitioner import python_murmur2_partition

    assert agrees(python_murmur2_partition, murmur2)
    assert not agrees(lambda key, n: (murmur2(key) + 1) % n, murmur2)
    assert not agrees(python_murmur2_partition, lambda key: murmur2(key) ^ 1)


def test_the_python_partitioner_can_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    from eventscript.task import native_partitioner

    monkeypatch.setenv(native_partitioner.DISABLE_ENV, "1")
    assert native_partitioner.native_murmur2_partition(murmur2) is None


def test_librdkafkas_partitioner_takes_long_keys_whole() -> None:
    # On x86-64 and AArch64 the call goes without ctypes' argtypes (half its cost): the key's
    # length then travels as a C int widened by libffi to the size_t the function reads. Keys
    # far past 64 KiB, and lengths whose upper bytes are set, must hash all their bytes.
    import platform

    from eventscript.task.native_partitioner import WIDENING_MACHINES, native_murmur2_partition
    from eventscript.task.partitioner import python_murmur2_partition

    native = native_murmur2_partition(murmur2)
    assert native is not None
    rnd = random.Random(261)
    for length in (255, 256, 65_535, 65_536, 65_537, 1 << 20, (1 << 24) + 3):
        data = rnd.randbytes(length)
        assert native(data, 1000) == python_murmur2_partition(data, 1000), length
    if platform.machine().lower() in WIDENING_MACHINES:  # (the path taken here is the fast one)
        from eventscript.task import partitioner

        assert partitioner.murmur2_partition.__module__.endswith("native_partitioner")
