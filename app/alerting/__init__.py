"""Alerts: rules evaluated by the server, their states and history, and Alertmanager delivery.

rules.py      what each rule looks at and when it is active (over the server's queries/health)
engine.py     inactive -> pending -> firing -> resolved, persisted with history, replica-safe
notify.py     which alerts to send to Alertmanager now (firing, re-sends, resolutions)
alertmanager.py  the HTTP client for Alertmanager's /api/v2/alerts
settings.py   PEERWATCH_* knobs of alerting and /metrics
"""
