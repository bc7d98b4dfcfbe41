"""`/metrics`: the Prometheus collectors. They read stored judgements (and this replica's own
ingest and judge figures) at scrape time; nothing here judges."""
