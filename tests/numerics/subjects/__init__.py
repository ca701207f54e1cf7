"""Subjects of the numerics tests: implementations that follow the contract and compute something wrong on purpose."""
