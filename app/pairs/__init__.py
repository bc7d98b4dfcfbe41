"""`peerwatch pairs`: cross-host pair tests run by the scheduler that owns the nodes.

A client of the server over HTTP, as `peerwatch drain` is: the controller (`controller.py`)
asks the server which pairs to test (`GET /api/v1/network/plan`), records each as a pair job
and submits it as a low-priority, preemptible job through Slurm (`slurm.py`) or Kubernetes
(`k8s.py`); on the nodes, each rank (`rank.py`) meets the other through the server with its
own host's probe credential and rank 0 posts the result. docs/network.md.
"""
