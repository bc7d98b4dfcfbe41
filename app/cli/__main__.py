import sys

from peerwatch.app.cli import main

sys.exit(main())
