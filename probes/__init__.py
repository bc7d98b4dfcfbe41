"""peerwatch probe side: reads a GPU host's fabric (NVML + CuPy, or a simulation) into reports.

Rooms:
    report.py, snapshot models   the versioned wire schema, shared with the server.
    fabric.py                    the seam: one Protocol every fabric answers.
    sweep.py, inventory.py       what a probe pass runs and reads, on any fabric; watchdog.py
                                 abandons a test that hangs.
    nvidia/                      the real host: NVML (only `nvml.py` imports pynvml), CuPy
                                 (only `transfers.py` imports cupy), sysfs, Fabric Manager.
    sim/                         the simulated fabric: presets, performance model, faults.
    agent/                       the long-running probe: worker, the report builder it calls
                                 (passes.py), spool, sender, its own /metrics.

agent/ stands above the rest: nothing else in probes/ imports it (`.importlinter`).
The probe-only install (`pip install peerwatch`) needs nothing from `app/`.
"""

__version__ = "0.1.0"
