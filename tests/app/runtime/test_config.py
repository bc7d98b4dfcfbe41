"""Settings come from PEERWATCH_* env vars; defaults work with nothing but Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from peerwatch.app.runtime.config import Settings


def test_defaults_put_sqlite_in_the_data_dir(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEERWATCH_DATABASE_URL", raising=False)
    monkeypatch.setenv("PEERWATCH_DATA_DIR", str(tmp_path))
    s = Settings()
    assert s.database_url == f"sqlite:///{tmp_path.resolve()}/peerwatch.db"
    assert s.retention_raw_s == 14 * 86_400
    assert s.retention_rollup_days == 365


def test_probe_tokens_are_read_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEERWATCH_PROBE_TOKENS", "alpha, beta,,gamma")
    monkeypatch.setenv("PEERWATCH_MAX_BODY_BYTES", "4096")
    s = Settings()
    assert s.probe_tokens == ["alpha", "beta", "gamma"]
    assert s.max_body_bytes == 4096


def test_bad_threshold_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEERWATCH_DEGRADED_RATIO_EXPECTED", "1.5")
    with pytest.raises(ValueError, match="degraded_ratio_expected"):
        Settings()


def test_one_settings_story_each_field_documented_once() -> None:
    """Server settings live in exactly two classes; no name is read by both, and each
    class's table in the docs lists every one of its fields."""
    from peerwatch.app.alerting.settings import AlertingSettings

    docs = Path(__file__).resolve().parents[3] / "docs"
    server, alerts = (docs / "server.md").read_text(), (docs / "alerts.md").read_text()
    assert not set(Settings.model_fields) & set(AlertingSettings.model_fields)
    missing = [f for f in Settings.model_fields if f"`PEERWATCH_{f.upper()}`" not in server]
    missing += [f for f in AlertingSettings.model_fields
                if f"`PEERWATCH_{f.upper()}`" not in alerts]
    assert not missing, missing
