"""Every subcommand's ``--help``: plain text, at most 80 columns on any terminal, with an exit-status section."""

from __future__ import annotations

import argparse
import re

import pytest

from properties.entry.cli import build_parser, main
from properties.running.loading import ADAPTERS


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*prefix, name))
    return found


COMMANDS = _commands(build_parser())


def test_every_subcommand_is_covered():
    assert {("check",), ("compare",), ("replay",), ("pitfalls",), ("golden", "verify")} <= set(COMMANDS)


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "nanolm-verify")
def test_help_fits_80_columns_is_plain_text_and_states_the_exit_status(command, columns, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", columns)
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    cut = [line for line in text.splitlines() if re.search(r"[a-z]-$", line)]  # "nanolm-⏎verify": cut mid-word
    assert not cut, cut
    assert "exit status:" in text
    assert "``" not in text and ":func:" not in text  # no reStructuredText


@pytest.mark.parametrize("command", ["", "check", "compare", "fuzz"])
def test_the_commands_that_take_an_implementation_name_every_adapter_id(command, capsys):
    with pytest.raises(SystemExit):
        main([*command.split(), "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in ADAPTERS)
    assert "examples:" in text


def test_check_has_an_example_in_every_option_group(capsys):
    parser = build_parser()
    check = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["check"]
    groups = [g for g in check._action_groups if g.title not in ("positional arguments", "options")]
    assert len(groups) >= 3 and all((g.description or "").startswith("example: ") for g in groups)


def test_one_default_profile_across_subcommands():
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    defaults = {name: subs[name].get_default("profile") for name in ("check", "compare", "pitfalls")}
    assert set(defaults.values()) == {None}  # None: $HYPOTHESIS_PROFILE, else profiles.DEFAULT_PROFILE


def test_check_list_fits_80_columns(capsys):
    assert main(["check", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 40 and max(map(len, lines)) <= 80


@pytest.mark.parametrize("option", ["--device", "--workers", "--timeout", "--profile", "--seed", "--memory-limit"])
def test_an_option_is_declared_once_one_default_one_help_in_every_command_that_runs_laws(option):
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    actions = [
        next(a for a in subs[name]._actions if option in a.option_strings) for name in ("check", "compare", "pitfalls")
    ]
    assert len({(a.default, a.help, a.metavar, a.type) for a in actions}) == 1  # the same declaration everywhere
    assert actions[0].help.count("(default: ") == 1  # and it states its one default


def test_help_texts_are_never_cut_mid_word(capsys):
    """``plot --help`` lists each figure with its docstring's summary, wrapped, whole (it was cut at 79 columns)."""
    from properties.commands.plots import PLOTS

    with pytest.raises(SystemExit):
        main(["plot", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, plot in PLOTS.items():
        summary = " ".join((plot.draw.__doc__ or "").split("\n\n")[0].split())
        assert f"{name}: {summary}" in text


HEAVY = (  # the component records (properties.library.components) are light by design: their names print the help
    "torch", "hypothesis", "numpy", "golden.engine", "properties.library.laws", "properties.library.subject",
    "properties.library.strategies", "matplotlib", "jinja2",
)  # fmt: skip


def test_building_the_parser_imports_nothing_heavy():
    """--help and --version print before torch, Hypothesis, numpy, the law library or golden's engine is imported
    (bench/cli_start.py times it); checked in a fresh interpreter, where nothing is imported yet."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom properties.entry import cli\ncli.build_parser()\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "", f"building the parser imported {proc.stdout.strip()}"


def test_the_light_dtype_names_in_the_help_are_golden_s():
    from golden.formats import NAMES
    from properties.commands.helptext import DTYPE_NAMES

    assert DTYPE_NAMES == tuple(NAMES)
