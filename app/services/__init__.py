"""The admin writes behind the routes: maintenance windows, job snapshots, fleet peer stats,
and what `peerwatch drain` did. (A report's rows are `ingest/`'s; storage itself is `store/`.)"""
