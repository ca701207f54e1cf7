"""Bad command lines, one table across every command (check, compare, check --baseline, replay, pitfalls, plot,
golden, fuzz): each is answered by a usage error (exit 2: one line naming the argument) or, where the run itself is
the refusal (nothing was judged), by its documented status — never a traceback, never exit 0.

The rows are the hazards of issue 38: an output path naming an input of the run (the implementation, the
expectations, the baseline, the corpus) or another output; numbers that are not finite, out of range or unbounded;
output folders that cannot be written, refused before any work; a baseline with text where numbers belong; a
replay file that cannot say what to replay. Almost every row is refused while its arguments are checked, before a
worker starts (the whole table runs in seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from golden import corpus
from properties.entry.cli import main
from properties.running import workers
from properties.running.expectations import DIRECTORY as SHIPPED
from properties.running.runner import COUNTEREXAMPLE_FORMAT

REPO = Path(__file__).parents[2]
UNWRITABLE = "/proc/sys/nanolm-verify"  # a folder no one may create, root included (os.access says so)


def _counterexample(**fields: object) -> dict[str, object]:
    case = {
        "format": COUNTEREXAMPLE_FORMAT, "law_id": "RMSNorm.rmsnorm_matches_golden", "dtype": "fp32", "device": "cpu",
        "implementation": "nanolm_core", "profile": "ci", "seed": 0, "status": "failed", "cause": "law",
        "message": "", "draws": [["x", 1.0]], "calls": [],
    }  # fmt: skip
    case.update(fields)
    return {k: v for k, v in case.items() if v is not _ABSENT}


_ABSENT = object()


def _baseline(**record: object) -> dict[str, object]:
    rec = {"status": "passed", "max_ulp": 0.5, "p99_ulp": 0.5, "headroom": 0.1, "examples": 3, **record}
    return {"schema": "nanolm-verify/baseline/1", "records": {"RMSNorm.rmsnorm_matches_golden[fp32-cpu]": rec}}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs the rows aim at: an implementation, expectations, baselines good and bad, replay files."""
    d = tmp_path_factory.mktemp("bad")
    (d / "impl.py").write_text("from nanolm_core import *  # noqa: F403\n")
    (d / "exp.txt").write_text("# no entries\n")
    (d / "badexp.txt").write_text("this is not an entry\n")
    (d / "file").write_text("x")
    (d / "dir").mkdir()
    (d / "corrupt.json").write_text("{not json")
    (d / "list.json").write_text("[1, 2]")
    (d / "foreign.json").write_text(json.dumps({"schema": "something/else", "records": {}}))
    baselines = {
        "base": _baseline(),
        "textbase": _baseline(max_ulp="small"),
        "textheadroom": _baseline(headroom="0.1 or so"),
        "statusbase": _baseline(status="great"),
        "negexamples": _baseline(examples=-1),
        "boolexamples": _baseline(examples=True),
    }
    for name, doc in baselines.items():
        (d / f"{name}.json").write_text(json.dumps(doc))
    (d / "nullrecords.json").write_text(json.dumps({"schema": "nanolm-verify/baseline/1", "records": None}))
    (d / "listrecord.json").write_text(json.dumps({"schema": "nanolm-verify/baseline/1", "records": {"k": [1]}}))
    replays = {
        "fp8": _counterexample(dtype="fp8"),
        "garbage": _counterexample(draws="garbage"),
        "garbage2": _counterexample(draws=[1, 2, 3]),
        "garbage3": _counterexample(draws=[[3, 1.0]]),
        "nolaw": _counterexample(law_id=_ABSENT),
        "intlaw": _counterexample(law_id=7),
        "unknownlaw": _counterexample(law_id="RMSNorm.no_such_law"),
        "baddevice": _counterexample(device="tpu"),
        "nodevice": _counterexample(device=_ABSENT),
        "badseed": _counterexample(seed="zero"),
        "noimpl": _counterexample(implementation=""),
        "noprofile": _counterexample(profile=None),
        "foreignfmt": {**_counterexample(), "format": "someone/else/1"},
        "mislabelled": _counterexample(draws=[["nonsense", "garbage"], [None, 3]]),  # well-formed, not the law's
    }
    for name, payload in replays.items():
        torch.save(payload, d / f"{name}.pt")
    torch.save([1, 2, 3], d / "notadict.pt")
    (d / "notpt.pt").write_text("not a pickle")
    return d


def _fill(arg: str, d: Path) -> str:
    shipped = next(iter(sorted(SHIPPED.glob("*"))))
    return (
        arg.replace("{t}", str(d))
        .replace("{corpus}", str(corpus.DATA_DIR))
        .replace("{repo}", str(REPO))
        .replace("{shipped}", str(shipped))
        .replace("{unwritable}", UNWRITABLE)
    )


OUT = "{t}/out"
# argv → (a fragment of what the command says, the exit status: 2 a usage error; 1 the run's own refusal)
ROWS: list[tuple[list[str], str, int]] = [
    # check: an output naming an input of the run, or another output
    (["check", "{t}/impl.py", "--json", "{t}/impl.py"], "is the implementation", 2),
    (["check", "nanolm_core", "--json", "{repo}/nanolm_core/__init__.py"], "is the implementation", 2),
    (["check", "reference", "--json", "{repo}/nanolm_core/__init__.py"], "is the implementation", 2),
    (["check", "--json", "{t}/exp.txt", "--expectations", "{t}/exp.txt"], "is an expectations file", 2),
    (["check", "--json", "{t}/base.json", "--baseline", "{t}/base.json"], "is the baseline", 2),
    (["check", "--json", "{corpus}/MANIFEST.json"], "stored golden corpus", 2),
    (["check", "--json", "{corpus}/rmsnorm.json"], "stored golden corpus", 2),
    (["check", "--json", "{corpus}/../data/block.json"], "stored golden corpus", 2),
    (["check", "--json", "{shipped}"], "shipped expectations file", 2),
    (["check", "--json", "{t}/new.json", "--baseline", "{t}/new.json"], "name the same path", 2),
    (["check", "--list", "--json", "{corpus}/MANIFEST.json"], "stored golden corpus", 2),
    (["check", "{t}/impl.py", "--list", "--matrix", "--markdown", "{t}/impl.py"], "is the implementation", 2),
    (["check", "--json", "{t}/dir/../new.json", "--baseline", "{t}/new.json"], "name the same path", 2),
    # check: numbers
    (["check", "--timeout", "inf"], "--timeout inf", 2),
    (["check", "--timeout", "nan"], "--timeout nan", 2),
    (["check", "--timeout", "-1"], "--timeout -1", 2),
    (["check", "--timeout", "0"], "--timeout 0", 2),
    (["check", "--timeout", "1e9"], "at most", 2),
    (["check", "--timeout", "soon"], "--timeout", 2),
    (["check", "--memory-limit", "inf"], "--memory-limit inf", 2),
    (["check", "--memory-limit", "nan"], "--memory-limit nan", 2),
    (["check", "--memory-limit", "0"], "--memory-limit 0", 2),
    (["check", "--memory-limit", "-2"], "--memory-limit -2", 2),
    (["check", "--memory-limit", "1e9"], "at most", 2),
    (["check", "--workers", "100000"], "--workers 100000: at most", 2),
    (["check", "--workers", "0"], "--workers 0", 2),
    (["check", "--workers", "-3"], "--workers -3", 2),
    (["check", "--workers", "2.5"], "--workers", 2),
    (["check", "--threads", "0"], "--threads 0", 2),
    (["check", "--threads", "100000"], "--threads 100000", 2),
    (["check", "--seed", "abc"], "--seed", 2),
    (["check", "--seed", "1.5"], "--seed", 2),
    # check: paths that cannot be written or read
    (["check", "--json", "{t}/dir"], "is a directory", 2),
    (["check", "--json", ""], "--json is empty", 2),
    (["check", "--json", "{unwritable}/r.json"], "not writable", 2),
    (["check", "--json", "{t}/file/r.json"], "is a file, not a directory", 2),
    (["check", "--artifacts", "{t}/file"], "is a file", 2),
    (["check", "--artifacts", "{unwritable}"], "not writable", 2),
    (["check", "--expectations", "{t}/missing.txt"], "--expectations", 2),
    (["check", "--expectations", "{t}/badexp.txt"], "--expectations", 2),
    (["check", "--database", "{t}/file"], "is a file", 2),
    (["check", "--database", "{unwritable}/db"], "not writable", 2),
    # check: what to run
    (["check", "--only", "no_such_law"], "--only 'no_such_law'", 2),
    (["check", "--dtype", "fp8"], "'fp8' is not a dtype", 2),
    (["check", "--dtype", "fp32,fp32"], "twice", 2),
    (["check", "--device", "tpu"], "is not a torch device type", 2),
    (["check", "--device", ""], "--device is empty", 2),
    (["check", "--profile", "fast"], "--profile", 2),
    (["check", "{t}/missing.py"], "does not exist", 2),
    (["check", "{t}/dir"], "is a directory", 2),
    (["check", ""], "IMPL is empty", 2),
    (["check", "--no-such-option"], "unrecognized arguments", 2),
    # check --baseline: a baseline is read field by field
    (["check", "--baseline", "{t}/textbase.json"], "max_ulp is 'small'", 2),
    (["check", "--baseline", "{t}/textheadroom.json"], "headroom is '0.1 or so'", 2),
    (["check", "--baseline", "{t}/statusbase.json"], "status is 'great'", 2),
    (["check", "--baseline", "{t}/negexamples.json"], "examples is -1", 2),
    (["check", "--baseline", "{t}/boolexamples.json"], "examples is True", 2),
    (["check", "--baseline", "{t}/nullrecords.json"], "'records'", 2),
    (["check", "--baseline", "{t}/listrecord.json"], "must be an object", 2),
    (["check", "--baseline", "{t}/corrupt.json"], "not valid JSON", 2),
    (["check", "--baseline", "{t}/foreign.json"], "schema 'something/else'", 2),
    (["check", "--baseline", "{t}/list.json"], "expected a JSON object", 2),
    (["check", "--baseline", "{t}/dir"], "is a directory", 2),
    (["check", "--baseline", "{unwritable}/b.json"], "not writable", 2),
    # compare
    (["compare"], "--out DIR", 2),
    (["compare", "nanolm_core"], "--out DIR", 2),
    (["compare", "nanolm_core", "--out", "{t}/file"], "is a file", 2),
    (["compare", "nanolm_core", "--out", "{unwritable}"], "not writable", 2),
    (["compare", "{t}/impl.py", "--league", "{t}/impl.py"], "is an implementation", 2),
    (["compare", "nanolm_core", "--league", "{corpus}/MANIFEST.json"], "stored golden corpus", 2),
    (["compare", "nanolm_core", "--league", "{t}/exp.txt", "--expectations", "{t}/exp.txt"], "expectations file", 2),
    (["compare", "nanolm_core", "--out", "{t}/o", "--league", "{t}/o/report.md"], "name the same path", 2),
    (["compare", "nanolm_core", "--out", OUT, "--workers", "0"], "--workers 0", 2),
    (["compare", "nanolm_core", "--out", OUT, "--workers", "100000"], "at most", 2),
    (["compare", "nanolm_core", "--out", OUT, "--timeout", "inf"], "--timeout inf", 2),
    (["compare", "nanolm_core", "--out", OUT, "--memory-limit", "nan"], "--memory-limit nan", 2),
    (["compare", "nanolm_core", "--out", OUT, "--dtype", "fp8"], "'fp8' is not a dtype", 2),
    (["compare", "{t}/missing.py", "--out", OUT], "does not exist", 2),
    (["compare", "nanolm_core", "--league", "{t}/l.md", "--out", "{t}/l.md"], "name the same path", 2),
    # replay: a file that cannot say what to replay is the user's to fix, never "fails again"
    (["replay", "{t}/fp8.pt"], "field 'dtype' is 'fp8'", 2),
    (["replay", "{t}/garbage.pt"], "field 'draws'", 2),
    (["replay", "{t}/garbage2.pt"], "field 'draws'", 2),
    (["replay", "{t}/garbage3.pt"], "field 'draws'", 2),
    (["replay", "{t}/nolaw.pt"], "field 'law_id' is None", 2),
    (["replay", "{t}/intlaw.pt"], "field 'law_id' is 7", 2),
    (["replay", "{t}/unknownlaw.pt"], "this version of the suite does not have", 2),
    (["replay", "{t}/baddevice.pt"], "field 'device'", 2),
    (["replay", "{t}/nodevice.pt"], "field 'device'", 2),
    (["replay", "{t}/badseed.pt"], "field 'seed'", 2),
    (["replay", "{t}/noimpl.pt"], "field 'implementation'", 2),
    (["replay", "{t}/noprofile.pt"], "field 'profile'", 2),
    (["replay", "{t}/foreignfmt.pt"], "format 'someone/else/1'", 2),
    (["replay", "{t}/notadict.pt"], "format 'list'", 2),
    (["replay", "{t}/mislabelled.pt"], "cannot be replayed: draw 1 is labelled", 2),  # (found by a worker)
    (["replay", "{t}/notpt.pt"], "is not a counterexample file", 2),
    (["replay", "{t}/missing.pt"], "no such file", 2),
    (["replay", "{t}/dir"], "is not a counterexample file", 2),
    (["replay"], "the following arguments are required: FILE", 2),
    # pitfalls
    (["pitfalls", "no_such_pitfall"], "unknown pitfall no_such_pitfall", 2),
    (["pitfalls", "--markdown", "{corpus}/MANIFEST.json"], "stored golden corpus", 2),
    (["pitfalls", "--markdown", "{t}/dir"], "is a directory", 2),
    (["pitfalls", "--markdown", "{unwritable}/g.md"], "not writable", 2),
    (["pitfalls", "--workers", "0"], "--workers 0", 2),
    (["pitfalls", "--timeout", "inf"], "--timeout inf", 2),
    (["pitfalls", "--width", "5"], "--width 5", 2),
    (["pitfalls", "--width", "wide"], "--width", 2),
    (["pitfalls", "--device", "tpu"], "is not a torch device type", 2),
    # plot
    (["plot", "no_such_figure"], "unknown figure no_such_figure", 2),
    (["plot"], "the following arguments are required: NAME", 2),
    (["plot", "all", "--out", "{t}/file"], "is a file", 2),
    (["plot", "all", "--out", "{unwritable}"], "not writable", 2),
    # golden
    (["golden", "regen", "--data", "{unwritable}"], "is not writable", 2),
    (["golden", "regen", "--data", "{t}/file"], "is not a directory", 2),
    (["golden", "regen", "--data", ""], "--data", 2),
    (["golden", "regen", "--family", "layernorm"], "--family", 2),
    (["golden", "verify", "--data", "{t}/missing"], "no such directory", 2),
    (["golden", "verify", "--sample", "-1"], "--sample", 2),
    (["golden", "bench", "--dim", "0"], "--dim", 2),
    (["golden", "bench", "--dim", "1000000", "--hidden", "1000000"], "--dim/--hidden", 2),
    (["golden", "bench", "--dim", "8", "--hidden", "16", "--slice", "100"], "--slice", 2),
    (["golden", "nonsense"], "ACTION", 2),
    (["golden"], "name an action", 2),
    # fuzz
    (["fuzz", "--minutes", "inf"], "--minutes inf", 2),
    (["fuzz", "--minutes", "nan"], "--minutes nan", 2),
    (["fuzz", "--minutes", "0"], "--minutes 0", 2),
    (["fuzz", "--minutes", "1e9"], "--minutes 1e+09: at most", 2),
    (["fuzz", "--examples", "0"], "--examples 0", 2),
    (["fuzz", "{t}/impl.py", "--json", "{t}/impl.py"], "is the implementation", 2),
    (["fuzz", "--json", "{corpus}/MANIFEST.json"], "stored golden corpus", 2),
    (["fuzz", "--workers", "100000"], "at most", 2),
    (["fuzz", "--dtype", "fp8"], "'fp8' is not a dtype", 2),
    # the command itself
    (["nonsense"], "invalid choice", 2),
]
if not torch.cuda.is_available():  # a run that judges nothing is refused by its status, saying why
    ROWS += [
        (["check", "--device", "cuda"], "cuda is not available", 2),
        (
            ["check", "--device", "cuda", "--allow-skips", "--only", "RMSNorm.rmsnorm_matches_golden", "-q"],
            "nothing was judged: all 4 law runs were skipped",
            1,
        ),
        (
            [
                "compare",
                "nanolm_core",
                "--out",
                "{t}/skipped",
                "--device",
                "cuda",
                "--allow-skips",
                "--only",
                "RMSNorm.rmsnorm_matches_golden",
                "-q",
            ],
            "nothing was judged: all 4 law runs were skipped",
            1,
        ),
    ]


@pytest.mark.parametrize(("argv", "said", "status"), ROWS, ids=[" ".join(a) or "empty" for a, _, _ in ROWS])
def test_a_bad_command_line_is_refused_without_a_traceback(argv, said, status, files, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # nothing may be left in the working directory
    if status == 2 and not any("mislabelled" in a for a in argv):  # refused before any work: no worker starts

        def no_worker(*args: object, **kwargs: object) -> None:
            raise AssertionError("a worker was started for a command line refused as a usage error")

        monkeypatch.setattr(workers.Pool, "__init__", no_worker)
    argv = [_fill(a, files) for a in argv]
    before = {p: p.stat().st_mtime_ns for p in (*corpus.DATA_DIR.iterdir(), files / "impl.py", files / "exp.txt")}
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    out, err = capsys.readouterr()
    assert code == status, (code, out, err)
    assert "Traceback" not in err + out
    assert said in out + err, err
    if status == 2:
        usage = ("usage:", " ")  # argparse prints its usage (indented when long) above its one line
        refusal = [line for line in (err or out).splitlines() if line.strip() and not line.startswith(usage)]
        assert len(refusal) == 1 and said in refusal[0], err or out
    assert {p: p.stat().st_mtime_ns for p in before} == before  # no input was touched
    assert list(tmp_path.iterdir()) == []


def test_the_table_covers_every_command():
    commands = {argv[0] for argv, _, _ in ROWS}
    assert commands >= {"check", "compare", "replay", "pitfalls", "plot", "golden", "fuzz"}
    assert sum(1 for argv, _, _ in ROWS if "--baseline" in argv) >= 10
    assert len(ROWS) >= 90


def test_the_unwritable_folder_is_unwritable_here():
    """The rows' unwritable folder must be so on this machine, for the user running the tests (root included)."""
    parent = Path(UNWRITABLE).parent
    assert parent.is_dir() and not os.access(parent, os.W_OK), f"{parent} is writable here: choose another"
