"""`python -m controllers` runs the `jobcore` command."""

import sys

from controllers.cli import main

sys.exit(main())
