"""A module that exits its process while being imported."""

import sys

sys.exit(0)
