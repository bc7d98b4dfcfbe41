"""A judged (pair, test)'s running state as stored: fixed-width binary, not a JSON tree.

Every sweep reads and writes the state of every judged (pair, test) of its host (~416 for
an 8-GPU host), so its encoding is on the hot path: a JSON tree per row cost a parse and
an encode of ~50 small lists each time, the largest part of a judgement after the
collector. This packs the same values as flat little-endian arrays behind a
count header, decoded by one `struct` call per row (the `Struct` of each shape cached):

    version B | blocks H | part H | judged H | contended H | failures H | has base B
    blocks    (median d, MAD d, newest at s q) x blocks
    part      d x part
    judged    (at us q, value d) x judged
    contended (at us q, value d, foreign bytes q) x contended
    base      (centre d, spread d, n q) if has base
    failures  (at us q, length I, UTF-8 error) x failures

The plain values are those of the JSON form stored before (migration 0013's
{"b", "p", "j", "c", "e", "base"}); migration 0019 converts between the two both ways with
`pack` / `unpack` and `to_doc` / `from_doc` here. A later format gets a new version byte and
keeps reading this one.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Any

VERSION = 1
HEADER = struct.Struct("<BHHHHHB")

Block = tuple[float, float, int]
Base = tuple[float, float, int]


@functools.lru_cache(maxsize=256)
def _body(blocks: int, part: int, judged: int, contended: int, base: bool) -> struct.Struct:
    return struct.Struct("<" + "ddq" * blocks + "d" * part + "qd" * judged
                         + "qdq" * contended + ("ddq" if base else ""))


def pack(blocks: Sequence[Block], part: Sequence[float], judged: Sequence[tuple[int, float]],
         contended: Sequence[tuple[int, float, int]], failures: Sequence[tuple[int, str]],
         base: Base | None) -> bytes:
    """The state's values (times in µs since the epoch, a block's in s) as bytes."""
    flat: list[Any] = []
    for j in judged:
        flat.extend(j)
    return pack_flat(blocks, part, flat, contended, failures, base)


def pack_flat(blocks: Sequence[Block], part: Sequence[float], judged: list[Any],
              contended: Sequence[tuple[int, float, int]], failures: Sequence[tuple[int, str]],
              base: Base | None) -> bytes:
    """`pack`, the judged samples given flat (at µs, value, at µs, value, ...), as the
    judgement builds them from its samples without a tuple each. On every sweep's path
    (~416 states): the values go into one list by `extend`, the header and body are one
    `struct` call (the `Struct` of each shape kept in a plain dict)."""
    nb, np_, nj, nc, ne = len(blocks), len(part), len(judged) // 2, len(contended), len(failures)
    shape = (nb, np_, nj, nc, ne, base is not None)
    body = _SHAPES.get(shape)
    if body is None:
        if len(_SHAPES) >= SHAPES_KEPT:
            _SHAPES.clear()
        body = _SHAPES[shape] = struct.Struct(
            HEADER.format + _body(nb, np_, nj, nc, base is not None).format[1:])
    values: list[Any] = [VERSION, nb, np_, nj, nc, ne, base is not None]
    for b in blocks:
        values.extend(b)
    values.extend(part)
    values.extend(judged)
    for c in contended:
        values.extend(c)
    if base is not None:
        values.extend(base)
    out = body.pack(*values)
    if not failures:
        return out
    parts = [out]
    for at, error in failures:
        text = error.encode()
        parts.append(struct.pack("<qI", at, len(text)) + text)
    return b"".join(parts)


SHAPES_KEPT = 4096  # header + body shapes; a bound, not an eviction policy
_SHAPES: dict[tuple[int, int, int, int, int, bool], struct.Struct] = {}


Unpacked = tuple[tuple[Block, ...], tuple[float, ...], tuple[tuple[int, float], ...],
                 tuple[tuple[int, float, int], ...], tuple[tuple[int, str], ...], Base | None]


def unpack(data: bytes) -> Unpacked:
    """`pack`'s values back, as tuples: (blocks, part, judged, contended, failures, base)."""
    version, nb, np_, nj, nc, ne, has_base = HEADER.unpack_from(data)
    if version != VERSION:
        raise ValueError(f"judged test state format {version} is not {VERSION}")
    body = _body(nb, np_, nj, nc, bool(has_base))
    v = body.unpack_from(data, HEADER.size)
    i = 3 * nb
    blocks = tuple(zip(v[0:i:3], v[1:i:3], v[2:i:3], strict=True))
    part = v[i:i + np_]
    i += np_
    judged = tuple(zip(v[i:i + 2 * nj:2], v[i + 1:i + 2 * nj:2], strict=True))
    i += 2 * nj
    contended = tuple(zip(v[i:i + 3 * nc:3], v[i + 1:i + 3 * nc:3], v[i + 2:i + 3 * nc:3],
                          strict=True)) if nc else ()
    i += 3 * nc
    base: Base | None = (v[i], v[i + 1], v[i + 2]) if has_base else None
    if not ne:
        return blocks, part, judged, contended, (), base
    failures = []
    at = HEADER.size + body.size
    for _ in range(ne):
        when, length = struct.unpack_from("<qI", data, at)
        at += 12
        failures.append((when, bytes(data[at:at + length]).decode()))
        at += length
    return blocks, part, judged, contended, tuple(failures), base


def newest_us(data: bytes) -> int | None:
    """The newest kept sample's time (µs since the epoch) of a packed state, read where it
    lies (each of judged, contended and failures is oldest first): whether a sweep's
    results come after a state is asked of every key, before any is unpacked."""
    version, nb, np_, nj, nc, ne, has_base = HEADER.unpack_from(data)
    if version != VERSION:
        raise ValueError(f"judged test state format {version} is not {VERSION}")
    at = HEADER.size + 24 * nb + 8 * np_
    newest = _Q.unpack_from(data, at + 16 * (nj - 1))[0] if nj else None
    at += 16 * nj
    if nc:
        contended = _Q.unpack_from(data, at + 24 * (nc - 1))[0]
        newest = contended if newest is None else max(newest, contended)
    at += 24 * nc + (24 if has_base else 0)
    for _ in range(ne):  # the failures follow the body, each of its own length
        when, length = struct.unpack_from("<qI", data, at)
        newest = when if newest is None else max(newest, when)
        at += 12 + length
    return newest


_Q = struct.Struct("<q")


# A state holding judged samples only (no contended sample, no failure), as its numbers:
# what a sweep's usual key is judged from (`judging/plain_keys.py`): (the full blocks as
# stored, written back as they are; each block's median; its MAD; the part-block; the
# judged samples flat (at µs, value, at µs, value, ..., oldest first); the base)
Plain = tuple[bytes, list[float], list[float], list[float], list[Any], Base | None]


def plain(data: bytes) -> Plain | None:
    """`data`'s numbers when it holds judged samples only, else None."""
    version, nb, np_, nj, nc, ne, has_base = HEADER.unpack_from(data)
    if nc or ne or version != VERSION:
        return None
    v = _body(nb, np_, nj, 0, bool(has_base)).unpack_from(data, HEADER.size)
    i = 3 * nb
    j = i + np_ + 2 * nj
    return (data[HEADER.size:HEADER.size + 24 * nb], list(v[0:i:3]), list(v[1:i:3]),
            list(v[i:i + np_]), list(v[i + np_:j]),
            (v[j], v[j + 1], v[j + 2]) if has_base else None)


def pack_plain(nb: int, blocks: bytes, part: Sequence[float], judged: Sequence[Any],
               base: Base | None) -> bytes:
    """`pack` of a state of judged samples only whose `nb` full blocks are `blocks` as
    `plain` read them: the same bytes, the blocks copied rather than packed again."""
    tail = _TAILS.get((len(part), len(judged), base is not None))
    if tail is None:
        if len(_TAILS) >= SHAPES_KEPT:
            _TAILS.clear()
        tail = _TAILS[(len(part), len(judged), base is not None)] = struct.Struct(
            "<" + "d" * len(part) + "qd" * (len(judged) // 2) + ("ddq" if base else ""))
    head = HEADER.pack(VERSION, nb, len(part), len(judged) // 2, 0, 0, base is not None)
    return head + blocks + (tail.pack(*part, *judged, *base) if base is not None
                            else tail.pack(*part, *judged))


_TAILS: dict[tuple[int, int, bool], struct.Struct] = {}


def from_doc(doc: dict[str, Any]) -> bytes:
    """The JSON form stored before (migration 0013) as bytes."""
    base = doc.get("base")
    return pack([(float(m), float(d), int(at)) for m, d, at in doc.get("b", ())],
                [float(p) for p in doc.get("p", ())],
                [(int(at), float(v)) for at, v in doc.get("j", ())],
                [(int(at), float(v), int(fb)) for at, v, fb in doc.get("c", ())],
                [(int(at), str(e)) for at, e in doc.get("e", ())],
                (float(base[0]), float(base[1]), int(base[2])) if base else None)


def to_doc(data: bytes) -> dict[str, Any]:
    """Bytes back as the JSON form (what migration 0019's downgrade stores)."""
    blocks, part, judged, contended, failures, base = unpack(data)
    return {"b": [list(b) for b in blocks], "p": list(part), "j": [list(j) for j in judged],
            "c": [list(c) for c in contended], "e": [list(e) for e in failures],
            "base": list(base) if base else None}
