"""The conformance tests, shipped in the package: every law (``test_laws``) and the course's named tests
(``test_modules``), run against the selected implementation from any directory:

    pytest --pyargs properties.conformance --impl mypkg.norms --nanolm-profile ci
    pytest --pyargs properties.conformance.test_modules --impl exercises_en -k "rmsnorm or swiglu"

The fixtures (``nanolm_law_runner`` …) come from the pytest plugin ``nanolm_verify`` (auto-loaded when the
package is installed; with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, add ``-p nanolm_verify``). A failure ends
with a reproduction line for that very test.
"""
