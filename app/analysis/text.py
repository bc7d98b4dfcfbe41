"""Numbers as a person reads them in a verdict: "212 GB/s", "0.84 µs", "for 20 min"."""

from __future__ import annotations

from peerwatch.probes.report import Unit


def fmt_value(value: float, unit: Unit | str) -> str:
    if (unit if isinstance(unit, Unit) else Unit(unit)) is Unit.SECONDS:
        if value < 1e-3:
            return f"{value * 1e6:.2f} µs"
        return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.2f} s"
    gb = value / 1e9
    return f"{gb:.0f} GB/s" if gb >= 100 else f"{gb:.1f} GB/s" if gb >= 1 else f"{gb:.3f} GB/s"


def fmt_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:  # "90 s", never a rounded "2 min"
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours / 24:.1f} days"


def fmt_window(seconds: float) -> str:
    """ "7-day", "12-hour": how a baseline's window reads in a sentence."""
    if seconds >= 86_400:
        days = seconds / 86_400
        return f"{days:.0f}-day" if days == int(days) else f"{days:.1f}-day"
    return f"{seconds / 3600:.0f}-hour"


def fmt_rate(per_s: float) -> str:
    return f"{per_s:.3g}/s"
