"""The packaged law tests (``properties/conformance/test_laws.py``), collected here too, so this repository's suite
runs them against the selected implementation (the same test objects: no second copy):

    pytest tests/conformance/test_laws.py --impl mypkg.norms -k "rmsnorm and bf16" --nanolm-profile ci
"""

from properties.conformance.test_laws import test_law  # noqa: F401
