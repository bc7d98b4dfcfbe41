"""Database-facing work behind the routes: ingest, inventory upserts, baselines, retention."""
