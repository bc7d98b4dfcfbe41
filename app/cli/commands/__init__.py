"""One module per `peerwatch` subcommand; see `app/cli/__init__.py`."""
