"""Deprecated version-1 path of ``properties.library.assertions``: importing it warns and gives that same module."""

from properties import _moved

_moved(__name__)
