"""Implementation loading: precedence, file paths, adapters ids, missing components, usage errors."""

from pathlib import Path

import pytest

from properties.entry import cli
from properties.running.loading import ImplementationError, NotProvided, load, resolve_spec

IMPLS = Path(__file__).parents[1] / "impls"


def test_precedence_is_cli_then_option_then_env_then_default(monkeypatch):
    monkeypatch.setenv("NANOLM_IMPL", "from_env")
    assert resolve_spec("from_cli", "from_option") == "from_cli"
    assert resolve_spec(None, "from_option") == "from_option"
    assert resolve_spec(None, None) == "from_env"
    monkeypatch.delenv("NANOLM_IMPL")
    assert resolve_spec(None, None) == "nanolm_core"


def test_default_is_the_reference_with_all_components(monkeypatch):
    monkeypatch.delenv("NANOLM_IMPL", raising=False)
    impl = load()
    assert impl.module.__name__ == "nanolm_core"
    assert impl.provided == ("RMSNorm", "SwiGLU", "Block", "AddRMSNorm")


def test_a_py_file_path_loads_and_missing_components_are_not_provided():
    impl = load(str(IMPLS / "rms_only.py"))
    assert impl.provided == ("RMSNorm",)
    with pytest.raises(NotProvided, match="SwiGLU not provided"):
        impl.factory("SwiGLU")


def test_dotted_module_loads():
    assert load("tests.impls.rms_only").provided == ("RMSNorm",)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz", "cannot import implementation 'no_such_module_xyz'"),
        ("tests.impls.nothing", "defines none of RMSNorm, SwiGLU, Block, AddRMSNorm"),
        ("tests.impls.broken_import", "RuntimeError: this module is broken on purpose"),
        ("/no/such/file.py", "does not exist"),
    ],
)
def test_unusable_implementations_are_usage_errors(spec, message):
    with pytest.raises(ImplementationError, match=message):
        load(spec)


def test_unknown_component_is_a_value_error():
    with pytest.raises(ValueError, match="unknown component 'LayerNorm'"):
        load("nanolm_core").factory("LayerNorm")


def test_cli_check_on_unknown_module_exits_2(capsys):
    assert cli.main(["check", "no_such_module_xyz", "--only", "RMSNorm"]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err


def test_cli_without_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "usage: nanolm-verify" in capsys.readouterr().out
