"""Adapters: third-party implementations wrapped to the contract, each declaring its convention."""
