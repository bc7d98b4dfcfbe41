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
