"""The probe agent: the loop that runs sweeps, spools reports and sends them, and its watchdog."""
