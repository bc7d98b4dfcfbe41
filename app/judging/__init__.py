"""Judging: turn a host's stored state and its new results into stored verdicts.

Shaped read -> judge -> write, each part small:
- `load.py` reads everything one judgement needs in a few batched selects: the host's
  fabric, the results stored since the last judgement (history only to seed), counter
  rates, fleet peer stats; beside the judged rows with their running state, which
  `store.py` reads (`queries/health.stored_rows`) to go on from and to compare against;
- the rules are pure functions over plain values (`app/analysis/`; here `running.py`, which
  carries each judged (pair, test)'s state on from its new samples alone, `pair_tests.py`,
  and `judge.judge_loaded`, which judges everything `load.py` read without SQL);
- `write.py` stores only the rows and columns that changed, a statement or two per table;
- `transaction.py` is the unit the alerting engine runs: the host's lock, judge, store, and
  the session the rules are evaluated in before the one commit.
"""
