"""The simulated fabric: topology presets, performance model, counters and faults.

CPU tests and the demo run the whole product on it, without a GPU.
"""
