"""peerwatch server: stores probe reports, judges them, serves the API, metrics and dashboard.

The layers, each importing only those above it in this list (and `probes/`, whose wire
schema the server validates reports with):

    analysis/   pure judgement: expected bandwidth, verdicts, baselines, flaps, placement.
                No Settings, no database, no API schemas: values in, values out.
    models.py   the tables (SQLAlchemy); migrations/ keeps the database in step with them.
    queries/    reads: stored verdicts, series, matrices, topology, alerts. Never writes.
    services/   writes: ingest, inventory, fleet peers, retention.
    judging/    judge once, shaped read -> judge -> write: `load.py` reads a host's state in
                a few batched selects, the rules are pure (`analysis/`, `judging/running.py`,
                `pair_tests.py`, `judge.judge_loaded`), `write.py` stores only what
                changed; `transaction.py` is the locked unit the alerting engine runs.
    alerting/   the built-in rules over the stored verdicts, their evaluation and delivery.
    routes/     HTTP only: parse parameters, call a query or service, shape the answer.
                A module there that defines `router` is served (`main.py` finds it).
    main.py     the app factory (`create_app`): engine, sessions, routers, background jobs.
    server.py   what `serve` and the demo share: database preparation, periodic maintenance.
    cli/, demo/ the commands, and the simulated fleet `make demo` runs.
    drain/      `peerwatch drain`, a client of the server: it speaks HTTP to it and imports
                no other layer (its engine is pure; its backends call scontrol/Kubernetes).

Judge once: verdicts are computed when something changes (after an ingest, or in the
periodic round for time-based changes) and stored in the `judged_*` tables; every reader —
routes, dashboard, scheduler, alert rules, /metrics — reads those rows.
"""
