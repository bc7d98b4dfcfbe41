"""Several judge processes for one server, each judging its share of the hosts.

Judging is CPU-bound Python (its statements' waits are a small part of its time), so threads
of one judge process share one GIL and barely add throughput; a fleet's judging scales with
processes. `PEERWATCH_JUDGE_PROCESSES` children (`JudgeProcess`), each told its shard
(`peerwatch judge --shard i/n`): a wake goes to the child `shard_of(host)` names, and each
child's scan of the database picks up only its own hosts. Judging stays correct whatever the
split (the per-host advisory lock and "unless judged since it was submitted", as between
replicas); the split only keeps two children from doing the same work. SQLite: one child
(one writer per database).

`JudgeShards` is what `app.state.judge_queue` holds under `serve`: `submit` and `load` (the
children's figures summed; lags are each child's, the worst taken) as `Judges` asks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from peerwatch.app.judging.process import RESTART_S, JudgeProcess
from peerwatch.app.judging.queue import QueueLoad, judges_for, shard_of
from peerwatch.app.runtime.config import Settings

log = logging.getLogger("peerwatch.serve")


def shard_count(settings: Settings) -> int:
    return 1 if settings.database_url.startswith("sqlite") else settings.judge_processes


class JudgeShards:
    """The server's judge children, one per shard of the hosts."""

    def __init__(self, settings: Settings, on_lag: Callable[[float], None] | None = None,
                 listening_since: datetime | None = None) -> None:
        count = shard_count(settings)
        self.children = [JudgeProcess(settings, on_lag, shard=(i, count),
                                      listening_since=listening_since) for i in range(count)]

    def submit(self, host: str, arrived: float | None = None) -> None:
        self.children[shard_of(host, len(self.children))].submit(host, arrived)

    def load(self) -> QueueLoad:
        loads = [child.load() for child in self.children]
        if len(loads) == 1:
            return loads[0]
        return QueueLoad(
            depth=sum(x.depth for x in loads), in_flight=sum(x.in_flight for x in loads),
            workers=sum(x.workers for x in loads), judged=sum(x.judged for x in loads),
            failed=sum(x.failed for x in loads), lag_p50_s=_worst(x.lag_p50_s for x in loads),
            lag_p99_s=_worst(x.lag_p99_s for x in loads),
            lag_max_s=_worst(x.lag_max_s for x in loads),
            restarts=sum(x.restarts for x in loads))

    @property
    def dropped_wakes(self) -> int:
        return sum(child.dropped_wakes for child in self.children)


def _worst(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


async def judge_process_job(app: Any) -> None:
    """One of the app's background jobs: the judge children live as long as the server;
    one that dies is started anew within RESTART_S."""
    shards = judges_for(app)
    assert isinstance(shards, JudgeShards), "an app made with judge_in_process=False"
    loop = asyncio.get_running_loop()
    for child in shards.children:
        child.start()
        loop.add_reader(child.fileno(), child.read_figures)
    try:
        while True:
            await asyncio.sleep(RESTART_S)
            for child in shards.children:
                status = child.exited()
                if status is not None:
                    log.warning("judge process exited (status %s); restarting it", status)
                    loop.remove_reader(child.fileno())
                    child.restart()
                    loop.add_reader(child.fileno(), child.read_figures)
    finally:
        for child in shards.children:
            if child.running:
                loop.remove_reader(child.fileno())
        # stopped together: each has STOP_S to finish its running judgement
        await asyncio.gather(*(asyncio.to_thread(child.stop) for child in shards.children))
