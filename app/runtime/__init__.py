"""The server process's concerns: settings, logging, signals, CPU priority, the heap, which
replica leads, where the packaged assets are, and the in-process probe of `serve`."""
