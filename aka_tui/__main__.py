"""`python -m aka_tui` runs the CLI."""

import sys

from aka_tui.cli import main

sys.exit(main())
