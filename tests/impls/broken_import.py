"""Raises while importing: a usage error that must name the cause."""

raise RuntimeError("this module is broken on purpose")
