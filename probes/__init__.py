"""peerwatch probe side: reads a GPU host's fabric (NVML + CuPy, or a simulation) into reports."""

__version__ = "0.1.0"
