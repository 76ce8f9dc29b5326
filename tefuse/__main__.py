"""`python -m tefuse` runs the command line where the console script is not installed."""
import sys

from .cli import main

sys.exit(main())
