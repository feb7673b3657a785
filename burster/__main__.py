"""``python -m burster`` runs the CLI."""

import sys

from burster.cli import main

sys.exit(main())
