"""Fixtures of the alerting tests: a real Alertmanager (see real_alertmanager.py)."""

from tests.app.alerting.real_alertmanager import alertmanager_url

__all__ = ["alertmanager_url"]
