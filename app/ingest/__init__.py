"""Ingest: a posted report checked and stored whole, answered, then expanded into rows and
handed to the judge. The gate bounds how many run at once; the pool parses and stores in
processes of their own; `heard` remembers every probe that spoke, stored or not."""
