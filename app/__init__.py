"""peerwatch server: stores probe reports, judges them, serves the API, metrics and dashboard."""
