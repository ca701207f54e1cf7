"""Defines none of RMSNorm, SwiGLU, Block: a usage error."""

VALUE = 1
