"""What the benches share: their command line, sizes, timing, the servers and fleets they
start, and the floors they compare against. None of these is a bench: `python -m bench` runs
the modules of bench/ and bench/gpu/, never these."""
