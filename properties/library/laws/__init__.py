"""The laws, one module per component. Importing this package registers them all in ``LAWS``."""

from properties.library.laws import block, budget, devices, module, rmsnorm, stored, swiglu  # noqa: F401
from properties.library.table import LAWS

__all__ = ["LAWS"]
