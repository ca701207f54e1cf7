"""A filled-in copy of ``exercises_en/`` (the graded exercises), used by tests/running/test_exercises.py.

Same files and names as the exercises, with every TODO written the way a student should; not shipped
to students. Loaded as a package by the test (``load_solutions``), or as ``tests.exercise_solutions``.
"""

from .model import Block
from .modules import RMSNorm, SwiGLU

__all__ = ["Block", "RMSNorm", "SwiGLU"]
