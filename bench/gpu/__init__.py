"""The checks that need a real GPU host: the probe's readings and tests on its fabric
(`python3 bench/gpu/<name>.py`, or `python -m bench.gpu.<name>`) and the shell scripts that
run them in one device call (checks.sh, e2e.sh, session.sh; each sources _env.sh). Without a
GPU, each Python check says so and exits 0, so `make bench` runs them everywhere."""
