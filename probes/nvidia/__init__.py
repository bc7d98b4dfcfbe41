"""The real NVIDIA host: NVML, sysfs and CuPy readers and transfers.

Only here do pynvml (`nvml.py`) and cupy (`transfers.py`) appear.
"""
