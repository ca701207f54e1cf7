"""The AddRMSNorm declaration ``norm_input``: validated by the conventions parser, carried into the arithmetic the
bounds honour, printed in the summary."""

from __future__ import annotations

import pytest

from properties.library.conventions import ConventionError, parse


def test_the_norm_input_declaration_is_validated_and_reaches_the_bounds() -> None:
    declared = parse("AddRMSNorm", {"norm_input": "sum", "compute_dtype": "fp32"})
    assert declared.norm_input == "sum" and declared.arithmetic().norm_input == "sum"
    assert "norm input sum" in declared.summary()
    with pytest.raises(ConventionError, match=r"CONVENTIONS\['AddRMSNorm'\]\['norm_input'\]: 'fused'; expected one of"):
        parse("AddRMSNorm", {"norm_input": "fused"})
