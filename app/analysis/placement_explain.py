"""Placement's answer in words: why each GPU stayed out, and the result assembled for callers."""

from __future__ import annotations

from peerwatch.app.analysis import placement_search as search
from peerwatch.app.analysis.placement_problem import Problem, tie_key
from peerwatch.app.analysis.placement_types import (
    MODELS,
    CandidateSet,
    Exclusion,
    Pattern,
    Placement,
)


def _gbps(v: float) -> str:
    return f"{v / 1e9:.1f} GB/s"


def left_out(
    prob: Problem, chosen: search.Scored, ranked: list[search.Scored], floor: float,
    pat: Pattern, tol: float,
) -> list[Exclusion]:
    """Why each healthy GPU outside the chosen set stayed out, from the best set holding it."""
    best_with: dict[int, search.Scored] = {}
    for s in ranked:
        for m in s.members:
            best_with.setdefault(m, s)
        if len(best_with) == len(prob.gpus):
            break
    out: list[Exclusion] = []
    for pos, gpu in enumerate(prob.gpus):
        if pos in chosen.members:
            continue
        out.append(Exclusion(gpu.index, True, _why_out(prob, gpu.index, chosen, best_with.get(pos),
                                                       floor, pat, tol)))
    return out


def kept_apart(out: list[Exclusion], chosen: list[int],
               apart: list[tuple[int, int]]) -> list[Exclusion]:
    """A healthy GPU left out because a GPU of the chosen set is the other end of a pair
    fault says so, instead of a comparison of speeds."""
    mates: dict[int, list[int]] = {}
    for a, b in apart:
        for gpu, other in ((a, b), (b, a)):
            if other in chosen:
                mates.setdefault(gpu, []).append(other)
    return [e if not mates.get(e.gpu) else Exclusion(
        e.gpu, True, f"GPU{e.gpu} left out: it must not share a job with "
                     f"{', '.join(f'GPU{p}' for p in mates[e.gpu])} (a pair fault between "
                     "them; each works with its other peers)") for e in out]


def _why_out(
    prob: Problem, gpu: int, chosen: search.Scored, best_with: search.Scored | None,
    floor: float, pat: Pattern, tol: float,
) -> str:
    if len(chosen.members) == 1:
        return f"GPU{gpu} not needed: one GPU was asked for and the lowest healthy index wins"
    if best_with is None:
        return f"GPU{gpu} left out: the search found no set holding it"
    if best_with.value < floor:
        weakest = prob.weakest(best_with, pat)
        where = f", weakest pair GPU{prob.index(weakest[0])}-GPU{prob.index(weakest[1])}" \
            if weakest else ""
        share = best_with.value / chosen.value if chosen.value else 0.0
        return (f"GPU{gpu} left out as slower: the best {pat.value} set with it predicts "
                f"{_gbps(best_with.value)}, {share:.2f} of the chosen {_gbps(chosen.value)}{where}")
    mine, theirs = tie_key(prob, best_with), tie_key(prob, chosen)
    if mine[0] > theirs[0]:
        rule = "the chosen set spans fewer CPU sockets / NUMA nodes"
    elif mine[1] > theirs[1]:
        rule = "the chosen set rests on fewer pairs estimated from topology"
    else:
        rule = "lower GPU indexes win"
    return (f"GPU{gpu} left out by the tie-break: a set with it is as fast (within "
            f"{tol:.0%}), but {rule}")


def _candidate(prob: Problem, s: search.Scored, pat: Pattern) -> CandidateSet:
    single = len(s.members) == 1
    pair = prob.weakest(s, pat)
    weakest = None if pair is None else (prob.index(pair[0]), prob.index(pair[1]))
    return CandidateSet(
        gpus=tuple(prob.index(m) for m in s.members),
        predicted_bps=None if single else s.value,
        weakest_pair=weakest,
        estimated_pairs=prob.estimated_in(s, pat),
    )


def answer(
    prob: Problem, pat: Pattern, k: int, chosen: search.Scored,
    runners: list[search.Scored], excluded: list[Exclusion], exact: bool,
) -> Placement:
    best = _candidate(prob, chosen, pat)
    uuids = [prob.gpus[m].uuid for m in chosen.members]
    warnings = []
    if best.estimated_pairs:
        pairs = ", ".join(f"GPU{a}->GPU{b}" for a, b in best.estimated_pairs)
        warnings.append(f"no measurement for {pairs}: predicted from topology instead")
    unusable = [p for p in prob.set_pairs(chosen, pat) if p in prob.unusable]
    if unusable and (pat is Pattern.ALL_TO_ALL or chosen.value == 0):
        pairs = ", ".join(f"GPU{prob.index(a)}->GPU{prob.index(b)}" for a, b in unusable)
        warnings.append(f"unusable pairs (down, or neither measured nor expected): {pairs}")
    if k > 1 and chosen.value == 0:
        warnings.append(f"no {pat.value} of {k} healthy GPUs has bandwidth on every pair it needs")
    return Placement(
        pattern=pat,
        k=k,
        gpus=best.gpus,
        predicted_bps=best.predicted_bps,
        cuda_visible_devices=",".join(str(g) for g in best.gpus),
        cuda_visible_devices_uuid=",".join(u for u in uuids if u) if all(uuids) else None,
        weakest_pair=best.weakest_pair,
        estimated_pairs=best.estimated_pairs,
        model=MODELS[pat],
        exact=exact,
        runner_ups=tuple(_candidate(prob, s, pat) for s in runners),
        excluded=tuple(sorted(excluded, key=lambda e: e.gpu)),
        warnings=tuple(warnings),
    )
