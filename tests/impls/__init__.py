"""Small implementations used by the self-tests (course mistakes, partial modules, broken modules)."""
