"""`peerwatch demo`: the server plus a simulated fleet in one process, no GPU needed."""
