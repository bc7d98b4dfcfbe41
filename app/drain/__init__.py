"""`peerwatch drain`: take nodes whose fabric cannot be trusted out of the scheduler, and put
them back once they recovered.

The controller talks to the server only over HTTP (`client.py`): it reads the stored verdicts,
firing alerts, maintenance windows, its own marks and the breaker (`GET /api/v1/drain/state`),
decides per node with the pure engine (`policy.py` + `engine.py`: values in, decisions out,
the same for every scheduler), acts through a backend (`slurm.py`, `k8s.py`) and reports every
action back (`POST /api/v1/actions`), where ownership and the breaker are kept. Nothing here
imports the server's packages: a Slurm head node needs httpx and PyYAML only. See docs/drain.md.
"""
