"""Alerts: rules evaluated by the server, their states and history, and Alertmanager delivery.
Judging runs them (`app/judging/evaluate.py`, when: `app/judging/service.py`).

rule.py          what a rule and a finding are; fingerprints, dashboard links
rules.py         every rule, in one tuple: what the engine runs and the API lists
rules_*.py       the rules by family, over the server's verdicts (`app.queries.host_health`),
                 each with its PromQL twins and the /metrics series they read
promql.py        what a PromQL twin is, and the rules file written from the declarations
promql_records.py  the recording rules the twins share
rules_file.py    deploy/prometheus/peerwatch-rules.yml as the declarations write it
rules_drain.py   the PromQL twins of the alerts `peerwatch drain` writes
context.py       what the rules read for one host
engine.py        inactive -> pending -> firing -> resolved, persisted with history, replica-safe
notify.py        which alerts to send to Alertmanager now (firing, re-sends, resolutions)
alertmanager.py  the HTTP client for Alertmanager's /api/v2/alerts
silences.py      the silences that mute alerts (their matchers: app/analysis/matchers.py)
schemas.py       API shapes of /api/v1/alerts and /api/v1/silences
settings.py      PEERWATCH_* knobs of alerting and /metrics
"""
