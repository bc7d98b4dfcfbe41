"""Alerts: rules evaluated by the server, their states and history, and Alertmanager delivery.
Judging runs them (`app/judging/evaluate.py`, when: `app/judging/service.py`).

rule.py          what a rule and a finding are; fingerprints, dashboard links
rules.py         the rules, over the server's verdicts (`app.queries.host_health`)
context.py       what the rules read for one host
engine.py        inactive -> pending -> firing -> resolved, persisted with history, replica-safe
notify.py        which alerts to send to Alertmanager now (firing, re-sends, resolutions)
alertmanager.py  the HTTP client for Alertmanager's /api/v2/alerts
silences.py      the silences that mute alerts (their matchers: app/analysis/matchers.py)
schemas.py       API shapes of /api/v1/alerts and /api/v1/silences
settings.py      PEERWATCH_* knobs of alerting and /metrics
"""
