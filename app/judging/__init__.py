"""Judging: turn a host's stored state and its new results into stored verdicts.

Shaped read -> judge -> write, each part small:
- `load.py` reads everything one judgement needs in a few batched selects (the host's
  fabric, its judged rows with their running state, the results stored since the last
  judgement, counter rates, fleet peer stats);
- the rules are pure functions over plain values (`app/analysis/` and `tests.py` here, which
  carries each judged (pair, test)'s running state forward from its new samples alone);
- `write.py` stores only the rows and columns that changed, one statement per table;
- `transaction.py` is the unit the alerting engine runs: the host's lock, judge, store, and
  the session the rules are evaluated in before the one commit.
"""
