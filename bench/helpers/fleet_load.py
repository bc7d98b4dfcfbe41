"""The simulated fleet's traffic for bench/fleet.py: N `hgx8` probes posting through HTTP.

Reports are built once from the simulated `hgx8` fabric, like bench/ingest.py does (a full
sweep: 393 results, 2 counter samples of 8 x 18 NVLink ports; an inventory report: the
inventory and one counter sample), with a marker host name and a marker clock; each post
is that JSON with the marks replaced (host, a new report id, now), so the client spends
its CPU on sending, not on building reports. The host mark is already in its canonical
(lowercase) spelling, since the report model normalises host names, and `templates()`
checks it stands exactly once, as the report's host name: a mark that no longer matches
would have every simulated host post as one (as "__HOST__" did, lowercased on the way in).

What a host posts at each report time is its `Wire`'s: `FullReports` (every report in full,
as an agent before issue 37 did) unless the caller passes others, such as bench/fleet.py's
`AgentWire`s (bench/helpers/agent_wire.py: what the tree's agent sends, a heartbeat in place
of an unchanged inventory, a full report at once when the server answers 409).

Three phases:
- `warm_up`: every host posts one sweep and then one inventory report, one at a time per
  server: the quiet per-report server cost (the `Server-Timing` header); a host warmed
  keeps posting what its agent posts at the inventory cadence meanwhile, as a probe does;
- `load`: every host on its own compressed cadence (a sweep every 600/k s, inventory every
  30/k s, random phases), one post in flight per host as a probe does, 429/503 answered by
  waiting `Retry-After` with jitter and sending the same report again (the probe spools it;
  a refused heartbeat is skipped, as the agent never spools one), while /healthz is polled
  every 100 ms;
- `burst`: a few posters sending sweeps back to back: the API's rows/s at saturation.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx

from bench.helpers.judge_lag import Buckets, lag_buckets
from peerwatch.probes.agent.clock_offset import OFFSET_HEADER, offset_sample
from peerwatch.probes.agent.sender import (
    GZIP_LEVEL,
    HOST_HEADER,
    REPORTS_PATH,
    SENT_AT_HEADER,
    WIRE_HEADER,
    reads_gzip,
)
from peerwatch.probes.heartbeat import HEARTBEATS_PATH, RESYNC_STATUS
from peerwatch.probes.report import Report, ReportKind, valid_hostname, wire_fingerprint
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

MARK = datetime(2001, 1, 1, tzinfo=UTC)
MARK_JSON = "2001-01-01T00:00:00Z"
HOST_MARK = valid_hostname("peerwatch-bench-host-mark")  # survives the model's normalising
TOKEN = "bench-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
           WIRE_HEADER: wire_fingerprint()}  # a current probe's: its bodies are known by bytes
PROBE_TIMEOUT_S = 10.0  # the probe's own request timeout
WARM_UP_TIMEOUT_S = 600.0  # how long a host's first reports may keep being retried
INVENTORY_S, SWEEP_S = 30.0, 600.0  # the probe's real cadence
DRAIN_S = 600.0  # generous: a loaded machine's judges catch up with a burst's backlog


def rows_of(report: Report) -> int:
    """Rows one report writes: the report, its results, link and GPU samples."""
    return 1 + len(report.results) + sum(len(c.links) + len(c.pcie_replay)
                                         for c in report.counters)


@dataclass
class Template:
    kind: str
    json: str
    report_id: str
    rows: int
    report: Report

    def body(self, host: str, at: datetime) -> str:
        """The report as `host` would post it at `at` (`host` in canonical spelling: the
        server would store another spelling under its lowercase name)."""
        when = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return (self.json.replace(self.report_id, str(uuid.uuid4()), 1)
                .replace(HOST_MARK, host, 1).replace(MARK_JSON, when))


class MarkMissing(AssertionError):
    """A template's marks are not where `Template.body` replaces them."""


def _check_marks(kind: str, text: str, report: Report) -> None:
    """Each mark stands where `body` expects it, or the bench would post one host's (or one
    time's) reports under the name of all of them."""
    where = f'"host":{{"hostname":"{HOST_MARK}"'
    if report.host.hostname != HOST_MARK or text.count(HOST_MARK) != 1 \
            or text.count(where) != 1:
        raise MarkMissing(f"{kind} template: host mark {HOST_MARK!r} is not the report's "
                          f"host name exactly once (host is {report.host.hostname!r})")
    if MARK_JSON not in text or str(report.report_id) not in text:
        raise MarkMissing(f"{kind} template: time mark {MARK_JSON!r} or the report id is "
                          "missing from the JSON")


def templates() -> dict[str, Template]:
    fabric = SimulatedFabric("hgx8", seed=11, hostname=HOST_MARK)
    out = {}
    for kind in (ReportKind.SWEEP, ReportKind.INVENTORY):
        report = build_report(fabric, kind=kind, options=SweepOptions(timeout_s=None),
                              now=lambda: MARK)
        text = report.model_dump_json()
        _check_marks(kind.value, text, report)
        out[kind.value] = Template(kind.value, text, str(report.report_id), rows_of(report),
                                   report)
    return out


def host_name(i: int) -> str:
    """The i-th simulated host's name, already canonical (see `Template.body`)."""
    return f"hgx8-{i:04d}"


class Wire(Protocol):
    """What one simulated host's agent posts (`AgentWire` in bench/helpers/agent_wire.py)."""

    host: str

    def post_for(self, kind: str, at: datetime) -> tuple[str, str]:
        """(path, body) the agent posts for its `kind` report at `at`."""
        ...

    def full(self, kind: str, at: datetime) -> str:
        """The report in full (after a 409)."""
        ...

    def resync(self) -> None:
        """The server holds no full report of this host: the next goes in full."""
        ...


@dataclass
class FullReports:
    """An agent that sends every report in full (before issue 37): the overload bench's."""

    host: str
    tpl: dict[str, Template]

    def post_for(self, kind: str, at: datetime) -> tuple[str, str]:
        return REPORTS_PATH, self.full(kind, at)

    def full(self, kind: str, at: datetime) -> str:
        return self.tpl[kind].body(self.host, at)

    def resync(self) -> None:
        pass


def full_wires(hosts: int, tpl: dict[str, Template]) -> list[FullReports]:
    return [FullReports(host_name(i), tpl) for i in range(hosts)]


HEARTBEAT = "heartbeat"  # a Sample's kind for a heartbeat's post
ACCEPTED = (200, 201, 202, 204)  # a duplicate, stored, taken to store, a heartbeat taken


def sample_kind(path: str, kind: str) -> str:
    return HEARTBEAT if path == HEARTBEATS_PATH else kind


@dataclass
class Sample:
    kind: str
    status: int  # 0: no answer (timeout or connection error)
    latency_ms: float
    server_ms: float | None


@dataclass
class Record:
    samples: list[Sample] = field(default_factory=list)
    healthz_ms: list[float] = field(default_factory=list)
    late_s: list[float] = field(default_factory=list)  # how late each post left its schedule
    tried: dict[str, list[float]] = field(default_factory=dict)  # host -> attempts (epoch s)
    seconds: float = 0.0

    def accepted(self, kind: str | None = None) -> list[Sample]:
        return [s for s in self.samples if s.status in ACCEPTED
                and (kind is None or s.kind == kind)]

    def count(self, *statuses: int) -> int:
        return sum(1 for s in self.samples if s.status in statuses)


def server_ms(response: httpx.Response) -> float | None:
    timing = response.headers.get("server-timing", "")
    if "dur=" not in timing:
        return None
    return float(timing.split("dur=", 1)[1].split(",", 1)[0])


# each simulated probe's clock offset as it measured it from its answers (clock_offset.py)
OFFSETS: dict[str, float] = {}
# the servers whose newest answer said they read gzip bodies, as each agent's Sender learns
GZIP_BASES: set[str] = set()


def probe_headers(host: str) -> dict[str, str]:
    """What the real agent sends with each attempt (`probes/agent/sender.py`): its host, so a
    refusal counts for it, this attempt's send time, and the clock offset its answers showed."""
    headers = {**HEADERS, HOST_HEADER: host, SENT_AT_HEADER: datetime.now(UTC).isoformat()}
    if host in OFFSETS:
        headers[OFFSET_HEADER] = f"{OFFSETS[host]:.3f}"
    return headers


def as_sent(base: str, body: str, headers: dict[str, str]) -> bytes:
    """The body as the agent sends it to `base`: gzip-compressed once that server said it
    reads gzip (`Sender._post_once`), else plain; `headers` gain its Content-Encoding."""
    if base not in GZIP_BASES:
        return body.encode()
    headers["Content-Encoding"] = "gzip"
    return gzip.compress(body.encode(), GZIP_LEVEL, mtime=0)


def learn_gzip(base: str, response: httpx.Response) -> None:
    if reads_gzip(response):
        GZIP_BASES.add(base)
    else:
        GZIP_BASES.discard(base)


async def post(client: httpx.AsyncClient, base: str, kind: str, body: str,
               record: Record, host: str, path: str = REPORTS_PATH) -> httpx.Response | None:
    """One attempt, as the agent's Sender makes it: a report gzip-compressed once the server
    said it reads gzip, a heartbeat plain (its answers say nothing of gzip)."""
    started = time.perf_counter()
    record.tried.setdefault(host, []).append(time.time())
    sent = datetime.now(UTC)
    headers = probe_headers(host)
    beat = path == HEARTBEATS_PATH
    try:
        response = await client.post(f"{base}{path}", headers=headers,
                                     content=body.encode() if beat
                                     else as_sent(base, body, headers))
    except httpx.HTTPError:
        record.samples.append(Sample(kind, 0, (time.perf_counter() - started) * 1000, None))
        return None
    record.samples.append(Sample(kind, response.status_code,
                                 (time.perf_counter() - started) * 1000, server_ms(response)))
    offset = offset_sample(sent, datetime.now(UTC), response.headers.get("date"))
    if offset is not None:
        OFFSETS[host] = offset
    if not beat:
        learn_gzip(base, response)
    return response


def client(hosts: int, timeout_s: float = PROBE_TIMEOUT_S) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=timeout_s,
                             limits=httpx.Limits(max_connections=hosts + 16))


async def warm_up(bases: list[str], hosts: int, tpl: dict[str, Template],
                  inventory_every_s: float = INVENTORY_S,
                  wires: Sequence[Wire] | None = None, per_server: int = 1) -> Record:
    """Every host's first sweep and inventory, `per_server` hosts at a time per server (one:
    each report's server time is its own), as a fleet reconnects after a server restart.
    Each behaves as its probe does: a request it gave up on (the probe's own timeout) or
    that was refused is sent again, and once its first two reports are in it keeps posting
    what its agent posts every `inventory_every_s` until the warm-up ends (a probe does not
    fall silent while others catch up; those posts are not in the record). A request never
    outlives the probe's timeout, so no clock reading carries minutes of queueing, and no
    host the server has heard goes quiet: the warm-up raised ProbeStale and ProbeClockSkew
    alerts for what only the bench did."""
    wires = wires if wires is not None else full_wires(hosts, tpl)
    record, queue = Record(), asyncio.Queue[Wire]()
    for wire in wires[:hosts]:
        queue.put_nowait(wire)
    done = asyncio.Event()

    async def keep_heard(http: httpx.AsyncClient, base: str, wire: Wire) -> None:
        while not done.is_set():
            try:
                await asyncio.wait_for(done.wait(), inventory_every_s)
                return
            except TimeoutError:
                await deliver(http, base, wire, "inventory", Record,
                              time.monotonic() + DRAIN_S)

    async def worker(http: httpx.AsyncClient, base: str, kept: list[asyncio.Task]) -> None:
        while not queue.empty():
            wire = queue.get_nowait()
            for kind in ("sweep", "inventory"):
                await _until_stored(http, base, wire, kind, record)
            kept.append(asyncio.create_task(keep_heard(http, base, wire)))

    started = time.perf_counter()
    kept: list[asyncio.Task] = []
    async with client(hosts + len(bases)) as http:
        await asyncio.gather(*(worker(http, base, kept) for base in bases
                               for _ in range(per_server)))
        done.set()
        await asyncio.gather(*kept)
    record.seconds = time.perf_counter() - started
    return record


async def _until_stored(http: httpx.AsyncClient, base: str, wire: Wire, kind: str,
                        record: Record) -> None:
    """A host's first `kind` report, in full, posted until stored as the probe's spool does;
    RuntimeError on any other answer, or after WARM_UP_TIMEOUT_S (setup, not a figure: a
    loaded machine's first sweeps may take long)."""
    wire.resync()  # a fresh agent's first inventory goes in full (a sweep always does)
    deadline = time.monotonic() + WARM_UP_TIMEOUT_S
    status = await deliver(http, base, wire, kind, lambda: record, deadline)
    if status is None or status in (429, 503):
        raise RuntimeError(f"warm-up: {wire.host}'s {kind} not stored within "
                           f"{WARM_UP_TIMEOUT_S:g} s")
    if status not in ACCEPTED:
        raise RuntimeError(f"warm-up: {wire.host}'s {kind} answered {status}")


async def deliver(http: httpx.AsyncClient, base: str, wire: Wire, kind: str,
                  record: Callable[[], Record], deadline: float) -> int | None:
    """Post what `wire`'s agent posts for its `kind` report now, as the agent does
    (`probes/agent/worker.py`): a report again until it is stored or `deadline` (monotonic)
    passes, waiting out each refusal (the spool keeps it; a timed-out request is sent
    again, the same report id); a heartbeat once (never spooled: a refused one is
    skipped), and at its 409 the report in full at once. Each attempt goes to `record()`'s
    record; the last answer's status is returned (None: no answer)."""
    at = datetime.now(UTC)
    path, body = wire.post_for(kind, at)
    while True:
        answer = await post(http, base, sample_kind(path, kind), body, record(), wire.host,
                            path)
        status = None if answer is None else answer.status_code
        if status in ACCEPTED:
            return status
        if path == HEARTBEATS_PATH:
            if status != RESYNC_STATUS:
                return status
            wire.resync()
            path, body = REPORTS_PATH, wire.full(kind, at)
            continue
        if status is not None and status not in (429, 503) and status < 500:
            return status  # refused for good (4xx): the agent drops it too
        wait = _retry_after(answer) * random.uniform(0.5, 1.5)
        if time.monotonic() + wait >= deadline:
            return status
        await asyncio.sleep(wait)


def _retry_after(response: httpx.Response | None) -> float:
    try:
        return float(response.headers.get("retry-after", 1)) if response is not None else 1.0
    except ValueError:
        return 1.0


@dataclass
class Window:
    """When the measured part of a load runs: probes post from the start, into `settle` until
    `measure_from`, into `measured` after, and stop at `end` (both moved by `_settle`)."""

    measure_from: float
    end: float
    settle: Record = field(default_factory=Record)
    measured: Record = field(default_factory=Record)
    # each replica's judge lag histogram when the measured part began (judge_lag.py)
    lag_start: list[Buckets] = field(default_factory=list)
    # what the caller's `mark` read when the measured part began (the server side's CPU)
    marked: Any = None

    def record(self) -> Record:
        return self.measured if time.monotonic() >= self.measure_from else self.settle


async def _probe(http: httpx.AsyncClient, base: str, wire: Wire, compress: float,
                 start: float, window: Window) -> None:
    every = {"inventory": INVENTORY_S / compress, "sweep": SWEEP_S / compress}
    due = {kind: start + random.random() * every[kind] for kind in every}
    while True:
        kind = min(due, key=lambda k: due[k])
        if due[kind] >= window.end:
            return
        await asyncio.sleep(max(0.0, due[kind] - time.monotonic()))
        window.record().late_s.append(time.monotonic() - due[kind])
        await deliver(http, base, wire, kind, window.record, window.end)
        due[kind] += every[kind]


async def _poll_healthz(http: httpx.AsyncClient, bases: list[str], window: Window) -> None:
    i = 0
    while time.monotonic() < window.end:
        started = time.perf_counter()
        try:
            await http.get(f"{bases[i % len(bases)]}/healthz")
            ms = (time.perf_counter() - started) * 1000
        except httpx.HTTPError:
            ms = PROBE_TIMEOUT_S * 1000
        if time.monotonic() >= window.measure_from:
            window.measured.healthz_ms.append(ms)
        i += 1
        await asyncio.sleep(0.1)


async def judges_drained(http: httpx.AsyncClient, bases: list[str]) -> bool:
    """No report answered and waiting for its expansion into rows, no host waiting for or in
    its judgement, in any replica (`/readyz`'s ingest and judge figures)."""
    for base in bases:
        try:
            ready = (await http.get(f"{base}/readyz")).json()
        except (httpx.HTTPError, ValueError):
            return False
        judge, ingest = ready.get("judge") or {}, ready.get("ingest") or {}
        if judge.get("depth", 1) or judge.get("in_flight", 1) or ingest.get("expanding", 0):
            return False
    return True


async def drained(bases: list[str], most_s: float = DRAIN_S) -> bool:
    """Wait until `judges_drained` (True), or `most_s` passed (False): what a bench does
    before it writes to the servers' tables itself (the history fill's ATTACH PARTITION
    deadlocked with expansions still storing the burst's reports)."""
    deadline = time.monotonic() + most_s
    async with client(1) as http:
        while not await judges_drained(http, bases):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.5)
    return True


async def _settle(http: httpx.AsyncClient, bases: list[str], window: Window, most_s: float,
                  duration_s: float, least_s: float = 0.0,
                  mark: Callable[[], Any] | None = None) -> None:
    """Let the fleet run at its cadence for `least_s`, then until the judges have caught up
    with the warm-up's first reports (or `most_s` passed), then measure for `duration_s`
    (`mark`'s reading kept as the measured part begins)."""
    started = time.monotonic()
    await asyncio.sleep(least_s)
    while time.monotonic() - started < most_s and not await judges_drained(http, bases):
        await asyncio.sleep(1.0)
    if mark is not None:
        window.marked = await asyncio.to_thread(mark)
    window.measure_from = time.monotonic()
    window.end = window.measure_from + duration_s
    window.settle.seconds = window.measure_from - started
    window.lag_start = await lags_now(bases)


async def lags_now(bases: list[str]) -> list[Buckets]:
    """Each replica's judge lag histogram, read off the event loop: a fleet's /metrics takes
    a while, and the probes post meanwhile."""
    return list(await asyncio.gather(*(asyncio.to_thread(lag_buckets, b) for b in bases)))


async def load(bases: list[str], hosts: int, tpl: dict[str, Template], compress: float,
               duration_s: float, settle_most_s: float = 0.0, settle_least_s: float = 0.0,
               wires: Sequence[Wire] | None = None, mark: Callable[[], Any] | None = None
               ) -> Window:
    """Every host at its cadence: first for `settle_least_s`, then until the judges caught up
    (at most `settle_most_s` in all, unmeasured: `Window.settle`), then for `duration_s`
    (measured: `Window.measured`; `mark`'s reading at its start kept in `Window.marked`).
    Each host posts what its `wires` entry's agent posts (default: every report in full)."""
    wires = wires if wires is not None else full_wires(hosts, tpl)
    start = time.monotonic()
    window = Window(measure_from=start + settle_most_s, end=start + settle_most_s + duration_s)
    if settle_most_s <= 0:  # measured from the start
        window.lag_start = await lags_now(bases)
        window.marked = mark() if mark is not None else None
    async with client(hosts) as http, client(4) as health:
        settling = (_settle(health, bases, window, settle_most_s, duration_s, settle_least_s,
                            mark) if settle_most_s > 0 else asyncio.sleep(0))
        await asyncio.gather(
            settling, _poll_healthz(health, bases, window),
            *(_probe(http, bases[i % len(bases)], wires[i], compress, start, window)
              for i in range(hosts)))
    window.measured.seconds = time.monotonic() - window.measure_from
    return window


async def burst(bases: list[str], hosts: int, tpl: dict[str, Template], posters: int,
                duration_s: float) -> Record:
    """`posters` clients sending sweeps back to back (no pause) for `duration_s`."""
    record = Record()
    end = time.monotonic() + duration_s

    async def poster(http: httpx.AsyncClient, k: int) -> None:
        n = k
        while time.monotonic() < end:
            name = host_name(n % hosts)
            body = tpl["sweep"].body(name, datetime.now(UTC))
            answer = await post(http, bases[k % len(bases)], "sweep", body, record, name)
            if answer is not None and answer.status_code in (429, 503):
                await asyncio.sleep(_retry_after(answer) * random.uniform(0.5, 1.5))
            n += posters

    started = time.monotonic()
    async with client(posters) as http:
        await asyncio.gather(*(poster(http, k) for k in range(posters)))
    record.seconds = time.monotonic() - started
    return record
