"""The laws, one module per component. Importing this package registers them all in ``LAWS``."""

from properties.library.laws import block, budget, module, rmsnorm, stored, swiglu  # noqa: F401  (registration)
from properties.library.table import LAWS

__all__ = ["LAWS"]
