"""The one catalogue of wrong implementations (properties.gallery): a consistent table, modules that follow the
contract by subclassing the reference and override one thing, docstrings that document themselves, and the
educator CLI (``nanolm-verify pitfalls``) for an 80-column terminal. The kill matrix — each entry caught by
its designated law — is tests/commands/test_kill_matrix.py.
"""

from __future__ import annotations

import inspect
import io
from pathlib import Path

import pytest
import torch

import nanolm_core
from golden.formats import fmt
from properties.commands import results, teach
from properties.commands.render import markdown
from properties.gallery import KINDS, PITFALLS
from properties.running.loading import COMPONENTS, load
from properties.running.runner import LAWS
from properties.running.session import RunOptions

DOCS = Path(__file__).resolve().parents[2] / "docs"
COURSE = (  # the course table of tests/conformance/test_modules.py
    "mean_subtraction",
    "wrong_axis",
    "forgot_gamma",
    "bf16_accumulation",
    "swapped_gate_up",
    "gelu_instead_of_silu",
    "add_norm_normalized_stream",
)
STEPS = ("heads", "rope_tables", "rope", "expand_kv", "scores", "mask", "attend")  # nanolm_core.Attention's seams
STATE_IS_THE_BUG = {"swiglu_bias"}  # its parameters are the mistake (extra biases)


def _classes(p):
    if p.missing:  # written in a package not installed here (the Triton entries without triton): no classes to read
        return []
    module = load(p.module).module
    return [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]


def test_catalogue_covers_every_component_and_kind():
    assert {p.component for p in PITFALLS.values()} == {*COMPONENTS, "Module"}
    assert {p.kind for p in PITFALLS.values()} == set(KINDS)
    assert set(COURSE) <= set(PITFALLS)  # the course mistakes tests/conformance/test_modules.py runs


@pytest.mark.parametrize("name", list(PITFALLS))
def test_catalogue_entry_is_consistent(name):
    p = PITFALLS[name]
    assert p.name == name and p.module == f"properties.gallery.{name}"
    assert p.law in LAWS, f"{name}: law {p.law} is not registered"
    assert fmt(p.dtype).dtype in LAWS[p.law].dtypes, f"{name}: {p.law} does not apply to {p.dtype}"
    assert p.dtype == fmt(p.dtype).name, f"{name}: dtype names are the report's (fp32, bf16, …)"
    assert p.kind in KINDS
    assert p.title and len(p.title) <= 60, "titles are one short line (tables, the CLI)"


@pytest.mark.parametrize("name", list(PITFALLS))
def test_pitfall_docstring_says_mistake_why_evidence_and_law(name):
    p = PITFALLS[name]
    for section in ("The mistake", "Why people make it", "Evidence:", "Caught by"):
        assert section in p.docstring, f"{name}: docstring lacks the section {section!r}"
    assert p.law in p.docstring.partition("Caught by")[2], f"{name}: 'Caught by' should name {p.law}"
    if p.kind == "real-world bug":
        assert p.evidence, f"{name}: a real-world bug cites the project it bit (owner/repo#number)"
    if p.kind == "test-only":
        assert "test-only" in p.docstring.partition("Evidence:")[2], f"{name}: say that no real case is known"


@pytest.mark.parametrize("name", list(PITFALLS))
def test_pitfall_module_follows_the_contract(name):
    """Same constructor and parameter names as the reference (shapes may be the bug, as in ffn_dim_4d)."""
    p = PITFALLS[name]
    if p.requires:  # its kernels run where the suite interprets or compiles them: the workers (the kill matrix)
        pytest.skip(p.missing or f"written in {p.requires}: run in the workers, which interpret its kernels")
    impl = load(p.module)
    component = _defined(p)
    assert impl.provided == (component,)
    config = nanolm_core.ModelConfig(dim=32, n_heads=4, n_kv_heads=2, max_seq_len=8)
    args = {"RMSNorm": (32,), "SwiGLU": (32, 96), "Block": (config,), "AddRMSNorm": (32,)}[component]
    wrong, ref = impl.factory(component)(*args), getattr(nanolm_core, component)(*args)
    if name not in STATE_IS_THE_BUG:
        assert sorted(wrong.state_dict()) == sorted(ref.state_dict())
    x = torch.randn(2, 3, 32)
    if component == "AddRMSNorm":  # two inputs, two outputs (y, h)
        assert [t.shape for t in wrong(x, torch.randn(2, 3, 32))] == [x.shape, x.shape]
        return
    assert wrong(x).shape == x.shape


def _defined(p) -> str:
    """The component an entry defines: its law's component, or (laws of the whole module) the one it provides."""
    return p.component if p.component != "Module" else load(p.module).provided[0]


@pytest.mark.parametrize("name", list(PITFALLS))
def test_pitfall_subclasses_the_reference(name):
    p = PITFALLS[name]
    if p.missing:
        pytest.skip(p.missing)
    assert issubclass(load(p.module).factory(_defined(p)), getattr(nanolm_core, _defined(p)))


@pytest.mark.parametrize(
    "name", [n for n, p in PITFALLS.items() if any(issubclass(c, nanolm_core.Attention) for c in _classes(p))]
)
def test_attention_pitfall_overrides_one_step_not_forward(name):
    (attention,) = [c for c in _classes(PITFALLS[name]) if issubclass(c, nanolm_core.Attention)]
    overridden = [m for m in (*STEPS, "forward") if m in vars(attention)]
    assert len(overridden) == 1 and overridden[0] in STEPS, f"{name} overrides {overridden}"
    assert load(PITFALLS[name].module).factory("Block").attn_cls is attention


def test_pitfalls_cli_is_readable_in_80_columns_and_exits_0_when_caught():
    out = io.StringIO()
    parser = _parser()
    status = teach._run(
        parser.parse_args(["pitfalls", "missing_eps", "forgot_gamma", "--reference", "--profile", "ci"]), out
    )
    text = out.getvalue()
    assert status == 0, text
    assert text.count("✔ CAUGHT") == 2
    assert "reference nanolm_core: passed" in text
    assert "Why people make it" in text and "Counterexample" in text
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, f"{len(too_wide)} lines wider than 80 columns, e.g. {too_wide[0]!r}"


def test_pitfalls_cli_exits_1_when_a_pitfall_is_not_caught(monkeypatch):
    from properties import gallery

    bogus = gallery.PITFALLS["missing_eps"]._replace(module="nanolm_core")  # the reference is not wrong
    monkeypatch.setitem(gallery.PITFALLS, "missing_eps", bogus)
    out = io.StringIO()
    assert teach._run(_parser().parse_args(["pitfalls", "missing_eps", "--profile", "ci"]), out) == 1
    assert "NOT CAUGHT" in out.getvalue()


def test_pitfalls_cli_lists_and_rejects_unknown_names(capsys):
    parser = _parser()
    assert teach._run(parser.parse_args(["pitfalls", "--list"])) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in PITFALLS)
    assert max(map(len, listing.splitlines())) <= 80
    assert teach._run(parser.parse_args(["pitfalls", "no_such_pitfall"])) == 2
    assert "unknown pitfall" in capsys.readouterr().err


def test_docs_gallery_lists_every_pitfall_and_its_law():
    text = (DOCS / "gallery.md").read_text(encoding="utf-8")
    for name, p in PITFALLS.items():
        assert f"`{name}`" in text and p.law.split(".", 1)[1] in text, f"docs/gallery.md is stale: {name} missing"


def _parser():
    import argparse

    parser = argparse.ArgumentParser(prog="nanolm-verify")
    teach.register(parser.add_subparsers(dest="command"))
    return parser


def test_pitfalls_cli_reports_a_pending_gap_without_failing(monkeypatch):
    from properties import gallery

    gap = gallery.PITFALLS["missing_eps"]._replace(module="nanolm_core", pending="no law can see it yet")
    monkeypatch.setitem(gallery.PITFALLS, "missing_eps", gap)
    out = io.StringIO()
    assert teach._run(_parser().parse_args(["pitfalls", "missing_eps", "--profile", "ci"]), out) == 0
    assert "NOT CAUGHT YET (a known gap)" in out.getvalue() and "no law can see it yet" in out.getvalue()


def test_plot_cli_writes_a_png_and_rejects_unknown_names(tmp_path, capsys):
    import argparse

    from properties.commands import plots

    parser = argparse.ArgumentParser(prog="nanolm-verify")
    plots.register(parser.add_subparsers(dest="command"))
    assert plots._run(parser.parse_args(["plot", "silu_cancellation", "--out", str(tmp_path)])) == 0
    png = tmp_path / "silu_cancellation.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plots._run(parser.parse_args(["plot", "no_such_plot"])) == 2
    assert "unknown figure" in capsys.readouterr().out


def test_committed_figures_exist():
    for png, pitfall, _ in markdown.FIGURES:
        assert (DOCS / png).is_file(), f"docs/{png} missing: run nanolm-verify plot all --out docs"
        assert pitfall in PITFALLS


def test_the_gallery_in_worker_processes_gives_the_same_verdicts_as_in_process():
    pitfalls = [PITFALLS[n] for n in ("mean_subtraction", "threads_at_import", "swiglu_bias", "non_causal")]
    here = teach.demonstrate_all(pitfalls, reference=True)
    there = teach.demonstrate_all(pitfalls, reference=True, options=RunOptions.of("ci", workers=2))

    def verdict(demo: results.Demo) -> tuple:
        r = demo.result
        return demo.outcome, r.cause, r.found_after, demo.reference.status, demo.reference.examples  # (examples
        # shrunk after the first failure may differ: shrinking stops at a time budget)

    assert [verdict(d) for d in here] == [verdict(d) for d in there]
    assert all(d.ok for d in there)  # every one caught by its law (threads_at_import: its import's effect), ref passes


def test_a_pending_entry_whose_law_cannot_run_here_is_as_expected_and_a_must_catch_one_is_a_miss():
    """On a machine without an accelerator the device laws skip, for the entry and for the reference alike: the
    pending entry is as expected (the kill matrix and bench/verdict_times.py exit 0); an entry that must be caught
    but was not run is a miss."""
    from properties.running.runner import LawResult

    def skipped(law_id: str) -> LawResult:
        return LawResult(law_id, LAWS[law_id].component, "fp32", "cpu", "skipped", "no accelerator here")

    pending = PITFALLS["rmsnorm_device_shortcut"]
    assert pending.pending
    demo = results.Demo(pending, skipped(pending.law), skipped(pending.law))
    assert demo.ok and not demo.caught
    must = PITFALLS["mean_subtraction"]
    assert not must.pending
    assert not results.Demo(must, skipped(must.law), skipped(must.law)).ok


def test_the_gallery_page_renders_entries_that_could_not_run_here_as_not_run():
    """``pitfalls --markdown`` without triton: the Triton entries are not in the kill matrix (``Pitfall.missing``),
    and the page says so per entry — it used to stop with a KeyError after computing the whole matrix."""
    from properties.gallery import PITFALLS
    from properties.running.runner import LAWS, LawResult

    def ran(law_id: str) -> LawResult:
        law = LAWS[law_id]
        return LawResult(law_id, law.component, fmt(law.dtypes[0]).name, "cpu", "passed")

    absent = next(iter(PITFALLS))
    present = {n: p for n, p in PITFALLS.items() if n != absent}
    demos = {n: results.Demo(p, ran(p.law), ran(p.law)) for n, p in present.items()}
    rows = {n: {i: ran(i) for i, law in LAWS.items() if law.component == p.component} for n, p in present.items()}
    page = markdown.gallery(results.KillMatrix("ci", demos, rows, {i: ran(i) for i in LAWS}))
    row = next(line for line in page.splitlines() if line.startswith(f"| 1 | `{absent}` |"))
    assert "not run here" in row and f"not run here (see the catalogue): {absent}" in page
    assert not any(line.startswith(f"| `{absent}` |") for line in page.splitlines())  # no kill-matrix row
