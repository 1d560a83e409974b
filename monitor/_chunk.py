"""Exact, compact encoding of a closed chunk of float values (the Store's old points), with C-level passes only.

Why not Gorilla's bit stream: in Python a bit per bit encoder costs a call per point, more CPU than the
scrape that stored it. Here each step is one C call over the whole chunk:

- a chunk whose every value is an integer (a counter moving by whole counts, a gauge that repeats) is held as
  int64 deltas: a counter moving by the same amount every scrape, or not at all, is one repeated value;
- any other chunk is XOR'd against the previous value (64-bit lanes of one big ``int``: identical bits cancel,
  as in Gorilla) and its bytes transposed (every value's byte 0, then byte 1, ...), so the runs of equal sign,
  exponent and high mantissa bytes lie together;
- then ``zlib`` (level 1: ~1/4 of level 6's time for about the same bytes on such planes).

Exact by construction and by check: the integer form is used only when it converts back to the same bits
(``-0.0``, NaN, infinities and values past 2**53 take the XOR form, which is bit-exact for any payload).
"""

from __future__ import annotations

import zlib
from array import array
from functools import lru_cache
from itertools import accumulate
from operator import sub

__all__ = ["encode", "decode"]

_XOR, _INTS = b"x", b"i"
_LEVEL = 1
_LIMIT = float(1 << 53)  # integers exactly representable, so deltas fit int64 with room


def _shuffle(buf: bytes, width: int) -> bytes:
    return b"".join(buf[k::width] for k in range(width))


def _unshuffle(buf: bytes, width: int) -> bytes:
    n = len(buf) // width
    out = bytearray(len(buf))
    for k in range(width):
        out[k::width] = buf[k * n:(k + 1) * n]
    return bytes(out)


def _as_ints(values: array[float], raw: bytes) -> list[int] | None:
    """The values as ints when each is one that converts back to the very same bits; else None."""
    if not (values[0].is_integer() and values[-1].is_integer()):  # cheap: most float chunks end on a fraction
        return None
    try:
        ints = list(map(int, values))  # NaN and infinities raise
    except (ValueError, OverflowError):
        return None
    # A fraction truncated, -0.0 (an integer, but not 0) and past 2**53 all fail to come back the same.
    return ints if array("d", ints).tobytes() == raw and -_LIMIT < min(ints) and max(ints) < _LIMIT else None


def encode(values: array[float]) -> bytes:
    """``values`` (at least one) as bytes ``decode`` turns back into the same float bits."""
    raw = values.tobytes()
    ints = _as_ints(values, raw)
    if ints is not None:
        # Deltas, not delta-of-delta: a counter's are never negative, so no plane of sign bytes flips
        # between 00 and FF, and a steady step is a run of one value that zlib folds as well as zeros.
        deltas = array("q", [ints[0], *map(sub, ints[1:], ints)])
        return _INTS + zlib.compress(_shuffle(deltas.tobytes(), 8), _LEVEL)
    n = len(values)
    x = int.from_bytes(raw, "little")
    x = (x ^ (x << 64)) & ((1 << (64 * n)) - 1)  # lane i: value i XOR value i - 1 (lane 0 as it is)
    return _XOR + zlib.compress(_shuffle(x.to_bytes(8 * n, "little"), 8), _LEVEL)


# An hour's window charted copies ~15 frozen chunks of each charted series every second (a few hundred series
# at 64 targets): a cache of 64 turned over within one build and decoded every one of them again (~20 us each).
# 8,192 decoded chunks of 200 points are at most ~13 MB, held only while such windows are read.
_CACHED_CHUNKS = 8192


@lru_cache(maxsize=_CACHED_CHUNKS)
def decode(blob: bytes) -> array[float]:
    """The values ``encode`` made ``blob`` of. Cached (a window read touches its chunk again next second):
    the array returned is shared, so callers copy out of it and never change it."""
    data = _unshuffle(zlib.decompress(blob[1:]), 8)
    if blob[:1] == _INTS:
        deltas = array("q")
        deltas.frombytes(data)
        return array("d", accumulate(deltas))
    n = len(data) // 8
    x = int.from_bytes(data, "little")
    shift = 64
    while shift < 64 * n:  # prefix XOR over the lanes, doubling the reach each pass (log2(n) big-int ops)
        x ^= x << shift
        shift *= 2
    out = array("d")
    out.frombytes((x & ((1 << (64 * n)) - 1)).to_bytes(8 * n, "little"))
    return out
