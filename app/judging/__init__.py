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
- `transaction.py` holds the host's lock, judges, stores, and keeps the session open in
  which `evaluate.py` evaluates the alert rules (`app/alerting/`) before the one commit;
  `service.py` says when: after each ingest and in the periodic round;
- `sessions.py` makes an app's sessions, with what they share (`expectations.py`'s cache).
"""
