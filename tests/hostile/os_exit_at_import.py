"""A module that ends its process with os._exit(3) while being imported (no exception, no message)."""

import os

os._exit(3)
