"""peerwatch server: stores probe reports, judges them, serves the API, metrics and dashboard.

Installed as `peerwatch.app`. The folders by concern, each importing only those below it in
this list (and `peerwatch.probes`, whose wire schema the server validates reports with);
`.importlinter` holds the order:

    cli/, demo/  the commands, and the simulated fleet `make demo` runs.
    server.py    what `serve` and the demo share: database preparation, periodic maintenance.
    main.py      the app factory (`create_app`): engine, sessions, routers, background jobs.
    routes/      HTTP only: parse parameters, call a query or a write, shape the answer.
                 A module there that defines `router` is served (`main.py` finds it).
    exposition/  `/metrics`: collectors that read stored judgements at scrape time.
    ingest/      a posted report checked and stored whole, answered, expanded into rows.
    judging/     judge once: read -> judge -> write, then the alert rules in the same
                 transaction; when it runs (after ingest, the periodic round), the app's
                 sessions, and the judge's runtime (queue, worker process, shards) that runs
                 it off the request path.
    alerting/    the built-in rules over the stored verdicts, their states and delivery.
    services/    the admin writes: maintenance, job snapshots, fleet peers, drain records.
    queries/     reads: stored verdicts, series, matrices, topology, alerts. Never writes.
    records/     the values a judgement is made of, written by judging and read by queries:
                 a host's fabric, its judged state, a (pair, test) key.
    schemas/     API shapes, one module per resource.
    api/         the HTTP frame: dependencies, errors, body readers and the report checks
                 they share with ingest, OpenAPI, headers.
    store/       engines, the tables, bulk writes, partitions, retention, the inventory memo
                 an app's sessions share (`judging/sessions.py` makes them).
    runtime/     settings, logs, signals, priority, the heap, leadership, assets.
    analysis/    pure judgement: expected bandwidth, verdicts, baselines, flaps, placement,
                 the silences' label matchers.
                 No Settings, no database, no API shapes: values in, values out.
    drain/       `peerwatch drain`, a client of the server: it speaks HTTP to it and imports
                 no other layer (its engine is pure; its backends call scontrol/Kubernetes).
    pairs/       `peerwatch pairs`, a client of the server like drain/: submits the planned
                 cross-host pair jobs through Slurm or Kubernetes, and runs a job's ranks.

Judge once: verdicts are computed when something changes (after an ingest, or in the
periodic round for time-based changes) and stored in the `judged_*` tables; every reader —
routes, dashboard, scheduler, alert rules, /metrics — reads those rows.
"""
