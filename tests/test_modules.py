"""The course's tests where the course puts them (week 6: "Exercise exercises_en/modules.py, check:
``NANOLM_IMPL=exercises_en pytest tests/test_modules.py -k "rmsnorm or swiglu" -v``").

The tests themselves ship in the package (``properties/conformance/test_modules.py``, also run from any directory
with ``pytest --pyargs properties.conformance.test_modules``); this module collects the same test objects here — no
second copy. Each runs one law of the library against the implementation that ``NANOLM_IMPL`` / ``--impl`` names:
a stub is skipped as "not implemented: <what to write, where>", a wrong exercise fails with the law's message.
``tests/conformance/test_modules.py`` proves each test fails on the mistakes designated to its law.
"""

from properties.conformance.test_modules import TestRMSNorm, TestSwiGLU  # noqa: F401
