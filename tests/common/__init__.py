"""Helpers shared by the test modules (never tests themselves; nothing here is collected):

    search    ``reach``: some draw of a strategy satisfies a condition (Hypothesis' ``find_any``), budgeted in
              examples, never in seconds
    cases     numerical cases several test folders use: adversarial rows, the Block case, HF-Llama's RMSNorm
    proofs    ``assert_caught``: the meta-check of a proof of power (a law's own assertion, never a crash)

A test module imports from here, never from another test module (``tests/README.md``).
"""
