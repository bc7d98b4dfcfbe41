"""What a judged (pair, test) carries from one judgement to the next, so a sweep is judged
from its new results alone: no history re-read, no baseline query.

Pure: values in, values out. The state holds exactly what the rule of
`app/analysis/health.py:judge_test` looks at, bounded:
- the baseline as a robust running statistic: the newest healthy values in blocks of
  `BLOCK`, each full block kept as its median and MAD (at most max_samples / BLOCK of them,
  none older than the baseline window), the newest part-block as its values; the baseline is
  the median of all of them, a block counting as BLOCK values at its median. Until the first
  block fills it is exactly the median `analysis/baseline.py` computed from history; after,
  it follows the same windowed median within a block's spread, and forgets the same way (a
  lasting change takes over once it fills half the kept values);
- the newest judged (successful, uncontended) samples, enough for the k-of-n window and a
  low run (`keep`): their values, not their low/ok flags, so a changed expectation or
  baseline re-judges them as the history did;
- the contended samples since the newest judged one and the failures since the newest
  success (what "only contended samples recently (n)" and "failed again" count).
`samples()` gives them back, oldest first, as the look-back window the rule reads: the rule
itself is the same function.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from peerwatch.app.analysis.baseline import MAD_TO_SIGMA
from peerwatch.app.analysis.health import Sample
from peerwatch.app.store import packed

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CONTENDED_KEPT = 64  # "only contended samples recently (n)": n up to this
FAILURES_KEPT = 2  # "failed again" looks at the newest failure and the attempt before it
BLOCK = 20  # healthy values a baseline block summarises

Block = tuple[float, float, int]  # (median, MAD, when its newest value was measured, in s)


def epoch_us(at: datetime) -> int:
    """Microseconds since the epoch, exactly (a float timestamp would round them)."""
    d = at - EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _at(us: int) -> datetime:
    return EPOCH + timedelta(0, 0, us)


_new = object.__new__


def sample(at: datetime, value: float | None, contended: bool = False,
           error: str | None = None, foreign_bytes: int = 0, us: int | None = None) -> Sample:
    """A `Sample` with these fields, compared and hashed the same, built without the frozen
    dataclass's `__init__` (five `object.__setattr__` calls, several times the cost; thousands of
    samples are built every sweep). `us`: `at` in µs since the epoch when known, kept beside
    the fields so that packing the sample again converts no time (`sample_us`)."""
    s = _new(Sample)
    d = s.__dict__
    d["at"] = at
    d["value"] = value
    d["contended"] = contended
    d["error"] = error
    d["foreign_bytes"] = foreign_bytes
    if us is not None:
        d["_us"] = us
    return s


def stored_sample(us: int, value: float | None, contended: bool = False, error: str | None = None,
            foreign_bytes: int = 0) -> Sample:
    """A stored sample back, measured `us` µs after the epoch."""
    return sample(_at(us), value, contended, error, foreign_bytes, us)


class _Kept(Sample):
    """A judged sample back from a stored state, its time built from its µs on first use:
    a sweep reads ~2,500 of them (an 8-GPU host's 416 keys x the k-of-n window) and, for a
    healthy key, looks at the time of none but the newest (the window's bound is compared in
    µs, `Running.samples`), where building each datetime was ~40 % of unpacking a state.
    Compared, hashed and printed as a `Sample` of the same fields (either side of `==`)."""

    @property
    def at(self) -> datetime:
        d = self.__dict__
        at = d.get("_at")
        if at is None:
            at = d["_at"] = EPOCH + timedelta(0, 0, d["_us"])
        return at

    @at.setter
    def at(self, at: datetime) -> None:  # what the dataclass's __init__ sets (`replace`)
        self.__dict__["_at"] = at

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sample):
            return NotImplemented
        return (self.at, self.value, self.contended, self.error, self.foreign_bytes) == (
            other.at, other.value, other.contended, other.error, other.foreign_bytes)

    def __hash__(self) -> int:  # as the dataclass's: the hash of its fields
        return hash((self.at, self.value, self.contended, self.error, self.foreign_bytes))

    def __repr__(self) -> str:
        return "Sample" + Sample.__repr__(self).removeprefix(type(self).__qualname__)




def sample_us(s: Sample) -> int:
    """`s.at` in µs since the epoch: kept by `sample`, else worked out."""
    us = s.__dict__.get("_us")
    return epoch_us(s.at) if us is None else us


def _v(sample: Sample) -> float:
    """A kept judged or contended sample's value (only failures have none)."""
    assert sample.value is not None
    return sample.value


def middle(blocks: list[float], values: list[float]) -> float:
    """The median of `blocks`, each counted BLOCK times, and `values`, each once (as
    statistics.median of them all: the mean of the two middle values of an even count, the
    middle one itself of an odd count, `(x + x) / 2 == x`); both sorted in place. The two
    sorted lists are walked together up to the middle (~15 steps: a block moves it BLOCK
    places), not the ~220 values sorted with each block repeated: 10.3 -> 3.7 us a
    baseline of 9 blocks and 11 values, ~416 of them a sweep."""
    blocks.sort()
    values.sort()
    n_blocks, n_values = len(blocks), len(values)
    n = BLOCK * n_blocks + n_values
    if not n:
        raise ValueError("no values")
    low, high = (n - 1) // 2, n // 2  # the middle places, 0-based
    i = j = seen = 0  # blocks and values taken, the places they fill
    first: float | None = None  # the value at `low`
    while True:
        if j < n_values and (i >= n_blocks or values[j] < blocks[i]):
            value = values[j]
            j += 1
            seen += 1
        else:
            value = blocks[i]
            i += 1
            seen += BLOCK
        if first is None and seen > low:
            first = value
        if seen > high:
            assert first is not None
            return (first + value) / 2


class Running(NamedTuple):
    """A key's state (a named tuple: one is built per key and new sample every sweep)."""

    blocks: tuple[Block, ...] = ()  # full blocks of healthy values, oldest first
    part: tuple[float, ...] = ()  # the newest healthy values, fewer than BLOCK
    judged: tuple[Sample, ...] = ()  # newest judged samples, oldest first
    contended: tuple[Sample, ...] = ()  # contended samples since the newest judged one
    failures: tuple[Sample, ...] = ()  # failures since the newest success

    def baseline(self, min_samples: int) -> tuple[float, float, int] | None:
        """(centre, spread, n): the median of the kept healthy values and its scaled MAD,
        or None with fewer than `min_samples` of them. A block counts as BLOCK values at its
        median (its MAD for the spread), `middle`."""
        blocks, part = self.blocks, self.part
        n = BLOCK * len(blocks) + len(part)
        if n < max(1, min_samples):
            return None
        centre = middle([m for m, _, _ in blocks], list(part))
        mad = middle([d for _, d, _ in blocks], [abs(v - centre) for v in part])
        return centre, MAD_TO_SIGMA * mad, n

    def samples(self, since: datetime) -> list[Sample]:
        """The kept samples measured at or after `since`, oldest first. Each of the three
        tuples is oldest first already: with only judged samples kept (the usual sweep)
        there is nothing to merge."""
        judged = self.judged
        if not self.contended and not self.failures:  # oldest first: those from the first
            bound, first = epoch_us(since), 0  # at or after `since` on; in µs, no `at` is built
            while first < len(judged) and sample_us(judged[first]) < bound:
                first += 1
            return list(judged[first:])
        kept = [s for s in (*judged, *self.contended, *self.failures) if s.at >= since]
        return sorted(kept, key=lambda s: s.at)

    def pack(self, base: tuple[float, float, int] | None) -> bytes:
        """The state as stored (`packed.py`), with its baseline summed up for readers
        (centre, spread, n: the series' baseline)."""
        flat: list[float] = []  # (at µs, value) of each judged sample, flat: `sample_us` and
        add = flat.append  # `_v` inline (~2,500 a sweep; every kept sample, `sample` and
        for s in self.judged:  # `_Kept` alike, holds its fields in its __dict__)
            d = s.__dict__
            us = d.get("_us")
            add(epoch_us(s.at) if us is None else us)
            value = d["value"]
            assert value is not None  # a judged sample has a value
            add(value)
        return packed.pack_flat(self.blocks, self.part, flat,
                                [(sample_us(s), _v(s), s.foreign_bytes) for s in self.contended],
                                [(sample_us(s), s.error or "") for s in self.failures], base)

    @classmethod
    def unpack(cls, data: bytes) -> Running:
        """A stored state back; its samples built as `sample` builds them, inline (~2,500
        judged samples come back every 8-GPU sweep)."""
        return cls.unpack_with_base(data)[0]

    def stored_baseline(self, stored: tuple[float, float, int] | None, min_samples: int
                        ) -> tuple[float, float, int] | None:
        """`baseline(min_samples)`, taken from `stored` (what `pack` stored beside these
        same blocks and values) where it must be the same: its count is theirs and reaches
        `min_samples`, or there is none and they do not (a changed setting: worked out)."""
        n = BLOCK * len(self.blocks) + len(self.part)
        enough = n >= max(1, min_samples)
        if stored is not None and enough and stored[2] == n:
            return stored
        if stored is None and not enough:
            return None
        return self.baseline(min_samples)

    @classmethod
    def unpack_with_base(cls, data: bytes
                         ) -> tuple[Running, tuple[float, float, int] | None]:
        """`unpack`, and the baseline stored beside the state (`pack`)."""
        blocks, part, judged, contended, failures, base = packed.unpack(data)
        kept = []
        for us, value in judged:  # a `_Kept` of (us, value), its `at` lazy; not contended,
            s = _new(_Kept)  # no error, no foreign bytes: the dataclass's defaults, as class
            d = s.__dict__  # attributes
            d["value"] = value
            d["_us"] = us
            kept.append(s)
        return cls(
            blocks, part, tuple(kept),
            tuple([stored_sample(at, v, True, None, fb) for at, v, fb in contended]) if contended
            else (),
            tuple([stored_sample(at, None, False, e) for at, e in failures]) if failures else ()
        ), base


def learn(state: Running, value: float, at: datetime, max_samples: int,
          window_s: float) -> Running:
    """`state` after one more healthy `value` measured at `at`."""
    part = (*state.part, value)
    if len(part) < BLOCK:
        return Running(state.blocks, part, state.judged, state.contended, state.failures)
    centre = statistics.median(part)
    block = (centre, statistics.median(abs(v - centre) for v in part), int(epoch_us(at) // 10**6))
    room = max(1, max_samples // BLOCK) - 1  # older blocks kept beside the new one
    kept = [b for b in state.blocks if b[2] >= block[2] - window_s]
    return Running((*kept[max(0, len(kept) - room):], block) if room else (block,), (),
                   state.judged, state.contended, state.failures)


def advance(state: Running, new: Iterable[Sample], teaches: Callable[[float], bool],
            keep: int, max_samples: int, window_s: float) -> Running:
    """`state` after the new samples (oldest first, all newer than it); `teaches(value)`:
    whether a judged value may move the baseline (not a fault, the pair at full width)."""
    for s in new:
        if s.error is not None:
            state = Running(state.blocks, state.part, state.judged, state.contended,
                            (*state.failures, s)[-FAILURES_KEPT:])
        elif s.contended:
            state = Running(state.blocks, state.part, state.judged,
                            (*state.contended, s)[-CONTENDED_KEPT:])
        else:
            value = s.value
            assert value is not None  # value is None exactly when error is set
            if not teaches(value):
                state = Running(state.blocks, state.part, (*state.judged, s)[-keep:])
            elif len(state.part) < BLOCK - 1:  # `learn` inline where no block fills (~19
                state = Running(state.blocks, (*state.part, value),  # of 20 sweeps)
                                (*state.judged, s)[-keep:])
            else:
                state = learn(state, value, s.at, max_samples, window_s)
                state = Running(state.blocks, state.part, (*state.judged, s)[-keep:])
    return state


def from_history(samples: Sequence[Sample], values: Sequence[tuple[datetime, float]],
                 teaches: Callable[[float], bool], keep: int, max_samples: int,
                 window_s: float) -> Running:
    """A key's state seeded from its stored samples of the look-back window and the newest
    healthy values of its baseline window (both oldest first)."""
    state = Running()
    for at, value in values:
        if teaches(value):
            state = learn(state, value, at, max_samples, window_s)
    return advance(state, samples, lambda value: False, keep, max_samples, window_s)
