"""Test suite: conformance laws against the selected implementation, and self-tests."""
