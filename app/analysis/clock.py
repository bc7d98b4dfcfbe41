"""One sign convention for a probe's clock skew, shared by the alert text, the API and
`/metrics`, so that none of them can say "behind" where another reads "ahead".

    skew_s = server receive time - the probe's own time (of the send, or of the report's
             finish), in seconds

Positive: the probe's clock is *behind* the server's (its reports look older than they are);
negative: it is *ahead*. The API's `clock_skew_s` and `/metrics`'
`peerwatch_probe_clock_skew_seconds` carry this number as it is; the alert text says the
direction in words and shows the same signed number.
"""

from __future__ import annotations

from peerwatch.app.analysis.text import fmt_duration

SKEW_DOC = ("Server receive time minus the probe's own time of the newest report, in seconds "
            "(one sign everywhere): positive when the probe's clock is behind the server's, "
            "negative when it is ahead, plus the upload time.")


def skew_way(skew_s: float) -> str:
    """ "behind" or "ahead of": the direction of the probe's clock against the server's."""
    return "behind" if skew_s > 0 else "ahead of"


def describe_skew(skew_s: float) -> str:
    """ "5 min ahead of the server's (-300 s)": the size in words and the signed figure."""
    return f"{fmt_duration(abs(skew_s))} {skew_way(skew_s)} the server's ({skew_s:+.0f} s)"


CLOCK_NOTE_DOC = ("Set when the probe's clock is off the server's by more than "
                  "PEERWATCH_CLOCK_SKEW_WARN_S, from its first such report on (the "
                  "ProbeClockSkew alert waits 10 min before it fires): its times, and so "
                  "its verdict, are not trusted yet. Null while the clock is within the limit.")


def clock_note(skew_s: float | None, limit_s: float) -> str | None:
    """What a dashboard says of a host whose probe clock is off by more than `limit_s`:
    plainly, from the first report (issue 40: a probe 3 min behind showed a healthy row
    with 0 alerts for the 10 min the alert waits). None within the limit."""
    if skew_s is None or abs(skew_s) <= limit_s:
        return None
    return (f"probe clock {describe_skew(skew_s)}: its report times, and the verdict drawn "
            f"from them, are not trusted until the host's clock is set right (NTP)")
