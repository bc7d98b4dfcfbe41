"""The simulated fleet's traffic for bench/fleet.py: N `hgx8` probes posting through HTTP.

Reports are built once from the simulated `hgx8` fabric, like bench/ingest.py does (a full
sweep: 393 results, 2 counter samples of 8 x 18 NVLink ports; an inventory report: the
inventory and one counter sample), with a marker host name and a marker clock; each post
is that JSON with the marks replaced (host, a new report id, now), so the client spends
its CPU on sending, not on building reports. The host mark is already in its canonical
(lowercase) spelling, since the report model normalises host names, and `templates()`
checks it stands exactly once, as the report's host name: a mark that no longer matches
would have every simulated host post as one (as "__HOST__" did, lowercased on the way in).

Three phases:
- `warm_up`: every host posts one sweep and then one inventory report, one at a time per
  server: the quiet per-report server cost (the `Server-Timing` header); a host warmed
  keeps posting its inventory at its cadence meanwhile, as a probe does;
- `load`: every host on its own compressed cadence (a sweep every 600/k s, inventory every
  30/k s, random phases), one post in flight per host as a probe does, 429/503 answered by
  waiting `Retry-After` with jitter and sending the same report again (the probe spools it),
  while /healthz is polled every 100 ms;
- `burst`: a few posters sending sweeps back to back: the API's rows/s at saturation.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from peerwatch.probes.agent.clock_offset import OFFSET_HEADER, offset_sample
from peerwatch.probes.agent.sender import (
    GZIP_LEVEL,
    HOST_HEADER,
    SENT_AT_HEADER,
    WIRE_HEADER,
    reads_gzip,
)
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
        return [s for s in self.samples if s.status in (200, 201)
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
               record: Record, host: str) -> httpx.Response | None:
    started = time.perf_counter()
    record.tried.setdefault(host, []).append(time.time())
    sent = datetime.now(UTC)
    headers = probe_headers(host)
    try:
        response = await client.post(f"{base}/api/v1/reports",
                                     content=as_sent(base, body, headers), headers=headers)
    except httpx.HTTPError:
        record.samples.append(Sample(kind, 0, (time.perf_counter() - started) * 1000, None))
        return None
    record.samples.append(Sample(kind, response.status_code,
                                 (time.perf_counter() - started) * 1000, server_ms(response)))
    offset = offset_sample(sent, datetime.now(UTC), response.headers.get("date"))
    if offset is not None:
        OFFSETS[host] = offset
    learn_gzip(base, response)
    return response


def client(hosts: int, timeout_s: float = PROBE_TIMEOUT_S) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=timeout_s,
                             limits=httpx.Limits(max_connections=hosts + 16))


async def warm_up(bases: list[str], hosts: int, tpl: dict[str, Template],
                  inventory_every_s: float = INVENTORY_S) -> Record:
    """Every host's first sweep and inventory, one host at a time per server, as a fleet
    reconnects after a server restart. Each behaves as its probe does: a request it gave up
    on (the probe's own timeout) or that was refused is sent again, and once its first two
    reports are in it keeps posting its inventory every `inventory_every_s` until the
    warm-up ends (a probe does not fall silent while others catch up; those posts are not
    in the record). A request never outlives the probe's timeout, so no clock reading
    carries minutes of queueing, and no host the server has heard goes quiet: the
    warm-up raised ProbeStale and ProbeClockSkew alerts for what only the bench did."""
    record, queue = Record(), asyncio.Queue[int]()
    for i in range(hosts):
        queue.put_nowait(i)
    done = asyncio.Event()

    async def keep_heard(http: httpx.AsyncClient, base: str, name: str) -> None:
        while not done.is_set():
            try:
                await asyncio.wait_for(done.wait(), inventory_every_s)
                return
            except TimeoutError:
                body = tpl["inventory"].body(name, datetime.now(UTC))
                await _until_stored(http, base, "inventory", body, Record(), name)

    async def worker(http: httpx.AsyncClient, base: str, kept: list[asyncio.Task]) -> None:
        while not queue.empty():
            name = host_name(queue.get_nowait())
            for kind in ("sweep", "inventory"):
                body = tpl[kind].body(name, datetime.now(UTC))
                await _until_stored(http, base, kind, body, record, name, WARM_UP_TIMEOUT_S)
            kept.append(asyncio.create_task(keep_heard(http, base, name)))

    started = time.perf_counter()
    kept: list[asyncio.Task] = []
    async with client(hosts + len(bases)) as http:
        await asyncio.gather(*(worker(http, base, kept) for base in bases))
        done.set()
        await asyncio.gather(*kept)
    record.seconds = time.perf_counter() - started
    return record


async def _until_stored(http: httpx.AsyncClient, base: str, kind: str, body: str,
                        record: Record, name: str, most_s: float = DRAIN_S) -> None:
    """Post until stored, as the probe's spool does: a refusal waits its Retry-After, a
    request that timed out is sent again; RuntimeError on any other answer, or after
    `most_s` (setup, not a figure: a loaded machine's first sweeps may take long)."""
    deadline = time.monotonic() + most_s
    while time.monotonic() < deadline:
        answer = await post(http, base, kind, body, record, name)
        if answer is not None and answer.status_code in (200, 201, 202):
            return
        if answer is not None and answer.status_code not in (429, 503):
            raise RuntimeError(f"warm-up post failed: {answer.status_code} {answer.text[:300]}")
        await asyncio.sleep(_retry_after(answer))
    raise RuntimeError(f"warm-up: {name}'s {kind} not stored within {most_s:g} s")


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

    def record(self) -> Record:
        return self.measured if time.monotonic() >= self.measure_from else self.settle


async def _probe(http: httpx.AsyncClient, base: str, name: str, tpl: dict[str, Template],
                 compress: float, start: float, window: Window) -> None:
    every = {"inventory": INVENTORY_S / compress, "sweep": SWEEP_S / compress}
    due = {kind: start + random.random() * every[kind] for kind in every}
    while True:
        kind = min(due, key=lambda k: due[k])
        if due[kind] >= window.end:
            return
        await asyncio.sleep(max(0.0, due[kind] - time.monotonic()))
        window.record().late_s.append(time.monotonic() - due[kind])
        body = tpl[kind].body(name, datetime.now(UTC))
        while time.monotonic() < window.end:
            answer = await post(http, base, kind, body, window.record(), name)
            if answer is not None and answer.status_code in (200, 201):
                break
            await asyncio.sleep(_retry_after(answer) * random.uniform(0.5, 1.5))
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
                  duration_s: float, least_s: float = 0.0) -> None:
    """Let the fleet run at its cadence for `least_s`, then until the judges have caught up
    with the warm-up's first reports (or `most_s` passed), then measure for `duration_s`."""
    started = time.monotonic()
    await asyncio.sleep(least_s)
    while time.monotonic() - started < most_s and not await judges_drained(http, bases):
        await asyncio.sleep(1.0)
    window.measure_from = time.monotonic()
    window.end = window.measure_from + duration_s
    window.settle.seconds = window.measure_from - started


async def load(bases: list[str], hosts: int, tpl: dict[str, Template], compress: float,
               duration_s: float, settle_most_s: float = 0.0, settle_least_s: float = 0.0
               ) -> Window:
    """Every host at its cadence: first for `settle_least_s`, then until the judges caught up
    (at most `settle_most_s` in all, unmeasured: `Window.settle`), then for `duration_s`
    (measured: `Window.measured`)."""
    start = time.monotonic()
    window = Window(measure_from=start + settle_most_s, end=start + settle_most_s + duration_s)
    async with client(hosts) as http, client(4) as health:
        settling = (_settle(health, bases, window, settle_most_s, duration_s, settle_least_s)
                    if settle_most_s > 0 else asyncio.sleep(0))
        await asyncio.gather(
            settling, _poll_healthz(health, bases, window),
            *(_probe(http, bases[i % len(bases)], host_name(i), tpl, compress, start, window)
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
