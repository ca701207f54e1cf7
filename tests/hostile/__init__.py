"""Hostile and careless implementations: each breaks the verifier's assumptions in one way (tests/running)."""
