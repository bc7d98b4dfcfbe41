"""The drain policy: one YAML file for every scheduler (docs/drain.md, deploy/drain/policy.yaml).

`load_policy(text)` validates it and names the bad key in a `PolicyError`; `faults(policy,
facts)` lists what about a node the policy counts as a reason to take it out, each with since
when it holds and a one-line reason carrying the verdict's action. Pure: values in, values out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from peerwatch.app.drain.facts import NodeFacts

MODES = ("observe", "act")
CONDITIONS = ("host_down", "gpu_down", "gpu_missing", "fabric_not_ready", "probe_stale",
              "degraded", "alerts")
ALERT_OF = {"gpu_missing": "GPUMissing", "fabric_not_ready": "NVSwitchFabricNotReady"}
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the key and what is wrong."""


@dataclass(frozen=True)
class BreakerLimits:
    window_s: float = 600.0
    max_per_window: int = 5  # take-outs within window_s
    max_share_out: float = 0.2  # share of the GPU nodes peerwatch watches out by it at once
    # a drain younger than this is not evidence that the server lost peerwatch's state: a
    # round may have made it a moment before recording it (app/drain/breaker.py)
    lost_grace_s: float = 120.0


@dataclass(frozen=True)
class Policy:
    mode: str = "observe"
    host_down: bool = True
    gpu_down: bool = True
    gpu_missing: bool = True
    fabric_not_ready: bool = True
    probe_stale: bool = False
    degraded_min_lost_gpus: int | None = 2  # None: degraded GPUs never take a node out
    alerts: tuple[str, ...] = ()
    debounce_s: float = 300.0
    settle_after_boot_s: float = 600.0
    return_after_s: float = 900.0
    breaker: BreakerLimits = field(default_factory=BreakerLimits)
    taint: bool = False  # Kubernetes: also a NoSchedule taint (the condition is always set)

    @property
    def acts(self) -> bool:
        return self.mode == "act"


def duration(key: str, value: Any) -> float:
    """Seconds from 300, '5m', '1h30m' (PolicyError naming `key`)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PolicyError(f"{key}: {value!r} is not a duration (e.g. 300, 5m, 1h30m)")
    if isinstance(value, str):
        parts = DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value.replace(" ", ""):
            raise PolicyError(f"{key}: {value!r} is not a duration (e.g. 300, 5m, 1h30m)")
        value = sum(float(n) * UNITS[u] for n, u in parts)
    if not math.isfinite(value) or value < 0:
        raise PolicyError(f"{key}: {value!r} must be zero or more seconds")
    return float(value)


def _mapping(key: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PolicyError(f"{key}: expected a mapping, got {type(value).__name__}")
    return value


def _unknown(key: str, found: dict[str, Any], known: tuple[str, ...]) -> None:
    extra = sorted(set(found) - set(known))
    if extra:
        where = f"{key}.{extra[0]}" if key else extra[0]
        raise PolicyError(f"{where}: unknown key (known: {', '.join(known)})")


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise PolicyError(f"{key}: expected true or false, got {value!r}")
    return value


def _integer(key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PolicyError(f"{key}: expected a whole number of at least {low}, got {value!r}")
    return value


def _take_out_on(raw: dict[str, Any]) -> dict[str, Any]:
    _unknown("take_out_on", raw, CONDITIONS)
    out: dict[str, Any] = {}
    for name in ("host_down", "gpu_down", "gpu_missing", "fabric_not_ready", "probe_stale"):
        if name in raw:
            out[name] = _flag(f"take_out_on.{name}", raw[name])
    if "degraded" in raw:
        degraded = raw["degraded"]
        if degraded is False:
            out["degraded_min_lost_gpus"] = None
        else:
            d = _mapping("take_out_on.degraded", degraded)
            _unknown("take_out_on.degraded", d, ("min_lost_gpus",))
            out["degraded_min_lost_gpus"] = _integer("take_out_on.degraded.min_lost_gpus",
                                                     d.get("min_lost_gpus", 2), 1)
    if "alerts" in raw:
        alerts = raw["alerts"]
        if not isinstance(alerts, list) or not all(isinstance(a, str) and a for a in alerts):
            raise PolicyError(f"take_out_on.alerts: expected a list of alert names, got {alerts!r}")
        out["alerts"] = tuple(alerts)
    return out


def _breaker(raw: dict[str, Any]) -> BreakerLimits:
    _unknown("breaker", raw, ("window", "max_per_window", "max_share_out", "lost_grace"))
    base = BreakerLimits()
    share = raw.get("max_share_out", base.max_share_out)
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise PolicyError(f"breaker.max_share_out: expected a share above 0 and at most 1, "
                          f"got {share!r}")
    return BreakerLimits(
        window_s=duration("breaker.window", raw.get("window", base.window_s)),
        max_per_window=_integer("breaker.max_per_window",
                                raw.get("max_per_window", base.max_per_window), 1),
        max_share_out=float(share),
        lost_grace_s=duration("breaker.lost_grace", raw.get("lost_grace", base.lost_grace_s)))


TOP = ("mode", "take_out_on", "debounce", "settle_after_boot", "return_after", "breaker",
       "kubernetes")


def policy_from(raw: Any) -> Policy:
    """A Policy from the parsed YAML document (None or {} gives the defaults)."""
    doc = _mapping("policy", raw)
    _unknown("", doc, TOP)
    mode = doc.get("mode", "observe")
    if mode not in MODES:
        raise PolicyError(f"mode: expected observe or act, got {mode!r}")
    kube = _mapping("kubernetes", doc.get("kubernetes"))
    _unknown("kubernetes", kube, ("taint",))
    base = Policy()
    return Policy(
        mode=mode, **_take_out_on(_mapping("take_out_on", doc.get("take_out_on"))),
        debounce_s=duration("debounce", doc.get("debounce", base.debounce_s)),
        settle_after_boot_s=duration("settle_after_boot",
                                     doc.get("settle_after_boot", base.settle_after_boot_s)),
        return_after_s=duration("return_after", doc.get("return_after", base.return_after_s)),
        breaker=_breaker(_mapping("breaker", doc.get("breaker"))),
        taint=_flag("kubernetes.taint", kube.get("taint", False)))


def load_policy(text: str, source: str = "policy") -> Policy:
    """Parse and validate YAML text; PolicyError names `source` and the bad key."""
    import yaml  # the `drain` extra; imported here so `--help` works without it

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"{source}: not valid YAML: {' '.join(str(exc).split())}") from exc
    try:
        return policy_from(raw)
    except PolicyError as exc:
        raise PolicyError(f"{source}: {exc}") from None


@dataclass(frozen=True)
class Fault:
    kind: str
    reason: str  # one line: what is wrong and, from the server's catalog, what to do
    since: datetime


ACTION_SEP = "; do: "  # between what is wrong and what to do, in every drain reason


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def with_action(what: str, action: str) -> str:
    """`what; do: action`, the action's words said once (a verdict's reason may already
    carry them: a fabric finding's "...; restart nvidia-fabricmanager", an Xid's "action:")."""
    what = " ".join(what.split()).split("; action: ", 1)[0]
    action = " ".join(action.split())
    if not action:
        return one_line(what)
    what = what.replace(f"; {action}", "")
    return f"{one_line(what)}{ACTION_SEP}{one_line(action, 300)}"


def faults(policy: Policy, facts: NodeFacts) -> list[Fault]:
    """What the policy counts against this node now, worst kind first."""
    out: list[Fault] = []
    if policy.host_down and facts.verdict == "down" and facts.since is not None:
        out.append(Fault("host_down", with_action(f"host down: {facts.reason}", facts.action),
                         facts.since))
    if policy.probe_stale and facts.stale and facts.since is not None:
        out.append(Fault("probe_stale", one_line(f"no reports: {facts.reason}"), facts.since))
    for kind, alertname in ALERT_OF.items():
        if getattr(policy, kind):
            out += [Fault(kind, with_action(f"{a.name}: {a.summary}", a.action), a.since)
                    for a in facts.alerts if a.name == alertname]
    if policy.gpu_down:
        out += [Fault("gpu_down", with_action(
            f"GPU{g.gpu} down: {g.reason.removeprefix(f'GPU{g.gpu}: ')}", g.action), g.since)
            for g in facts.gpus if g.verdict == "down"]
    out += _degraded(policy, facts)
    out += [Fault("alert", with_action(f"{a.name}: {a.summary}", a.action), a.since)
            for a in facts.alerts if a.name in policy.alerts]
    return out


def _degraded(policy: Policy, facts: NodeFacts) -> list[Fault]:
    """Degraded GPUs count only from `min_lost_gpus` of them: since the one that reached it."""
    need = policy.degraded_min_lost_gpus
    lost = sorted((g for g in facts.gpus if g.verdict in ("degraded", "down")),
                  key=lambda g: g.since)
    if need is None or len(lost) < need:
        return []
    names = ", ".join(f"GPU{g.gpu}" for g in lost)
    return [Fault("degraded", with_action(f"{len(lost)} of {facts.gpus_total} GPUs not healthy "
                                          f"({names}): {lost[0].reason}", lost[0].action),
                  lost[need - 1].since)]
