"""Storage: engines and sessions, the tables (`tables/`), SQL that reads the same on SQLite and
PostgreSQL, bulk inserts, the packed judged state, day partitions and retention."""
