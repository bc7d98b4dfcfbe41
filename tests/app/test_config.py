"""Settings come from PEERWATCH_* env vars; defaults work with nothing but Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Settings


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
