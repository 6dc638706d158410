"""A sweep of bad input through the console entry point and the Python API (issue 14).

Every case runs ``pufferfish.cli.app.main`` (what the ``pufferfish`` script runs) in a folder of
small files, and checks: a non-zero exit, exactly one line on stderr that starts with
``error:`` and says what is wrong, no traceback, and every file of the folder byte for byte as
before (nothing written, nothing overwritten, no partial output).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from pufferfish import DiscretePrior
from pufferfish.cli.app import main
from pufferfish.tables.outputs import unwritable
from pufferfish.tables.source import OutputExistsError, atomic_outputs

FILES: dict[str, str | bytes] = {
    "ok.csv": "s,x,w,t\na,1,1,u\na,2,2,v\nb,2,1,u\nb,3,1,v\nc,1,1,u\n",
    "ok2.csv": "s,x,w,t\na,1,1,u\na,2,2,v\nb,2,1,u\nb,3,1,v\nc,1,1,u\n",
    "empty.csv": "",
    "header.csv": "s,x,w,t\n",
    "binary.csv": bytes(range(256)) * 20,
    "semicolon_rows.csv": "s,x\na;1\nb;2\n",
    "w_negative.csv": "s,x,w\na,1,-1\na,2,1\nb,2,1\n",
    "w_zero.csv": "s,x,w\na,1,0\na,2,0\nb,2,1\nb,1,1\n",
    "w_nan.csv": "s,x,w\na,1,nan\na,2,1\nb,2,1\n",
    "w_text.csv": "s,x,w\na,1,abc\na,2,1\nb,2,1\n",
    "x_nan.csv": "s,x\na,1\na,nan\nb,2\n",
    "x_inf.csv": "s,x\na,1\na,inf\nb,2\n",
    "x_huge.csv": "s,x\na,1\na,1e300\nb,2\nb,-1e300\n",
    "x_mixed.csv": "s,x\na,1\na,two\nb,2\n",
    "all_missing.csv": "s,x\na,\nb,\n,1\n",
    "existing.csv": "precious\n",
    "priors_no_x.csv": "s,y\na,1\nb,2\n",
    "priors_text_x.csv": "s,x\na,one\nb,two\n",
}


def _user(**kw: object) -> dict[str, object]:
    return {"name": "u1", "support": [0, 1], "pmf": [0.5, 0.5], **kw}


SYSTEMS: dict[str, object] = {
    "mu_no_users.json": {"people": []},
    "mu_no_pmf.json": {"users": [{"name": "u1", "support": [0, 1]}]},
    "mu_sum.json": {"users": [_user(pmf=[0.5, 0.6])]},
    "mu_negative.json": {"users": [_user(pmf=[-0.5, 1.5])]},
    "mu_presence.json": {"users": [_user(presence=1.5)]},
    "mu_text.json": {"users": [_user(pmf=["a", "b"])]},
    "mu_list.json": [1, 2],
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, content in FILES.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    for name, obj in SYSTEMS.items():
        (tmp_path / name).write_text(json.dumps(obj))
    (tmp_path / "mu_syntax.json").write_text('{"users": [')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(sys, "argv", ["pufferfish", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


B = ["--secret", "s", "--pair", "a,b", "--public", "x"]  # on ok.csv and the small files
E1 = ["--epsilon", "1"]
T = ["--secret", "s", "--pair", "a,b", "--public", "t", "--epsilon", "1"]  # text public column
R = ["release", "ok.csv", *B, *E1]

CASES = {
    # files
    "missing file": (["calibrate", "nope.csv", *B, *E1], "got 'nope.csv', which does not exist"),
    "empty file": (["calibrate", "empty.csv", *B, *E1], "data file 'empty.csv' is empty"),
    "header only": (["calibrate", "header.csv", *B, *E1], "the table has no rows (a header only)"),
    "binary file": (["calibrate", "binary.csv", *B, *E1], "is not a text CSV file: it holds NUL bytes"),
    "wrong delimiter": (
        ["calibrate", "semicolon_rows.csv", *B, *E1],
        "line 2 of 'semicolon_rows.csv' has 1 field where the header has 2 (delimiter ',')",
    ),
    # columns
    "secret typo": (["calibrate", "ok.csv", "--secret", "S", *B[2:], *E1], "secret column 'S' is not in"),
    "public typo": (["calibrate", "ok.csv", *B[:4], "--public", "X", *E1], "public column 'X' is not in"),
    "weight typo": (["calibrate", "ok.csv", *B, *E1, "--weight", "W"], "weight column 'W' is not in"),
    # pairs
    "pair label absent": (
        ["calibrate", "ok.csv", "--secret", "s", "--pair", "a,z", "--public", "x", *E1],
        "secret value 'z' does not occur in column 's'; values are 'a', 'b', 'c'",
    ),
    "pair labels equal": (
        ["calibrate", "ok.csv", "--secret", "s", "--pair", "a,a", "--public", "x", *E1],
        "pair must name two different secret values, got 'a,a'",
    ),
    "pair single label": (
        ["calibrate", "ok.csv", "--secret", "s", "--pair", "a", "--public", "x", *E1],
        "pair must be two secret values 'A,B' (quote a value holding a comma: '\"A, x\",B'), got 'a'",
    ),
    # epsilon and delta
    "epsilon 0": (["calibrate", "ok.csv", *B, "--epsilon", "0"], "epsilon must be finite and > 0, got 0.0"),
    "epsilon negative": (
        ["calibrate", "ok.csv", *B, "--epsilon", "-1"],
        "epsilon must be finite and > 0, got -1.0",
    ),
    "epsilon nan": (
        ["calibrate", "ok.csv", *B, "--epsilon", "nan"],
        "epsilon must be finite and > 0, got nan",
    ),
    "epsilon inf": (
        ["calibrate", "ok.csv", *B, "--epsilon", "inf"],
        "epsilon must be finite and > 0, got inf",
    ),
    "epsilon 1e308": (["calibrate", "ok.csv", *B, "--epsilon", "1e308"], "epsilon must be <= 20"),
    "epsilon text": (["calibrate", "ok.csv", *B, "--epsilon", "abc"], "Invalid value for '--epsilon'"),
    "delta negative": (
        ["calibrate", "ok.csv", *B, *E1, "--delta", "-0.1"],
        "delta must be in [0, 1), got -0.1",
    ),
    "delta 1": (["calibrate", "ok.csv", *B, *E1, "--delta", "1"], "delta must be in [0, 1), got 1.0"),
    "delta nan": (["calibrate", "ok.csv", *B, *E1, "--delta", "nan"], "delta must be in [0, 1), got nan"),
    # label order
    "order missing a label": (
        ["calibrate", "ok.csv", *T, "--order", "u"],
        "order must list every label of 't'",
    ),
    "order duplicate label": (
        ["calibrate", "ok.csv", *T, "--order", "u,u,v"],
        "order must list each label once",
    ),
    "order empty label": (
        ["calibrate", "ok.csv", *T, "--order", "u,,v"],
        "without empty entries, got 'u,,v'",
    ),
    # weights
    "weight negative": (
        ["calibrate", "w_negative.csv", *B, *E1, "--weight", "w"],
        "must be >= 0 and not NaN",
    ),
    "weight nan": (["calibrate", "w_nan.csv", *B, *E1, "--weight", "w"], "must be >= 0 and not NaN"),
    "weights zero": (["calibrate", "w_zero.csv", *B, *E1, "--weight", "w"], "(and positive weight)"),
    "weight text": (
        ["calibrate", "w_text.csv", *B, *E1, "--weight", "w"],
        "weight column 'w' must hold numbers, got 'abc'",
    ),
    # public values
    "public nan": (["calibrate", "x_nan.csv", *B, *E1], "public column 'x' must hold finite numbers"),
    "public inf": (["calibrate", "x_inf.csv", *B, *E1], "public column 'x' must hold finite numbers"),
    "public 1e300": (["calibrate", "x_huge.csv", *B, *E1], "must hold numbers within +-1e+100"),
    "public mixed read as numeric": (
        ["calibrate", "x_mixed.csv", *B, *E1, "--numeric", "x"],
        "public column 'x' is read as numeric but holds 'two', not a number",
    ),
    "all rows missing": (
        ["calibrate", "all_missing.csv", *B, *E1],
        "secret value 'a' has no row with a public",
    ),
    # release outputs
    "output folder missing": (
        [*R, "--output", "nofolder/out.csv"],
        "output folder must exist, got 'nofolder'",
    ),
    "public is the secret": (
        ["calibrate", "ok.csv", "--secret", "s", "--pair", "a,b", "--public", "s", *E1],
        "public must differ from the secret column, got 's' for both",
    ),
    "public columns hold the secret": (
        ["calibrate", "ok.csv", "--secret", "s", "--pair", "a,b", "--public", "x,s", *E1],
        "public must differ from the secret column, got 's' for both",
    ),
    "output is the input": ([*R, "--output", "ok.csv"], "output must differ from every input file"),
    "output is the priors' table": (
        [*R, "--priors-from", "ok2.csv", "--output", "ok2.csv", "--force"],
        "output must differ from every input file, got 'ok2.csv' for both",
    ),
    "output exists": ([*R, "--output", "existing.csv"], "exists; pass --force"),
    "output extension": ([*R, "--output", "out.xyz"], "output must end in .csv, .csv.gz, .parquet or .pq"),
    "report not html": ([*R, "--output", "out.csv", "--report", "rep.txt"], "report must be an .html file"),
    "workers 0": (
        [*R, "--output", "out.csv", "--workers", "0"],
        "workers must be an int in [1, 1024], got 0",
    ),
    "workers -1": (
        [*R, "--output", "out.csv", "--workers", "-1"],
        "workers must be an int in [1, 1024], got -1",
    ),
    "workers huge": (
        [*R, "--output", "out.csv", "--workers", "100000"],
        "workers must be an int in [1, 1024]",
    ),
    "workers text": ([*R, "--output", "out.csv", "--workers", "two"], "Invalid value for '--workers'"),
    "mechanism unknown": ([*R, "--output", "out.csv", "--mechanism", "nope"], "mechanism must be one of"),
    "option unknown": ([*R, "--output", "out.csv", "--epsilonn", "1"], "No such option: --epsilonn"),
    # fitted priors
    "prior gmm:0": (["calibrate", "ok.csv", *B, *E1, "--prior", "gmm:0"], "got 'gmm:0'"),
    "prior gmm:-1": (["calibrate", "ok.csv", *B, *E1, "--prior", "gmm:-1"], "got 'gmm:-1'"),
    "prior gmm:abc": (["calibrate", "ok.csv", *B, *E1, "--prior", "gmm:abc"], "got 'gmm:abc'"),
    # multi-user systems
    "system missing": (["multiuser", "nope.json", "--pair-set", "P-bot", *E1], "cannot read system file"),
    "system not JSON": (["multiuser", "mu_syntax.json", "--pair-set", "P-bot", *E1], "is not valid JSON"),
    # prior sets (issue 15)
    "confidence 1": (
        ["calibrate", "ok.csv", *B, *E1, "--confidence", "1"],
        "confidence must be in (0, 1), got 1.0",
    ),
    "confidence 0": (
        ["calibrate", "ok.csv", *B, *E1, "--confidence", "0"],
        "confidence must be in (0, 1), got 0.0",
    ),
    "prior radius negative": (
        ["calibrate", "ok.csv", *B, *E1, "--prior-radius", "-0.1"],
        "prior_radius must be finite and >= 0, got -0.1",
    ),
    "prior set unknown": (
        ["calibrate", "ok.csv", *B, *E1, "--prior-set", "kl"],
        "prior_set must be one of dkw, l1, none, got 'kl'",
    ),
    "prior set with delta": (
        ["calibrate", "ok.csv", *B, *E1, "--prior-set", "dkw", "--delta", "1e-6"],
        "prior_set 'dkw' needs empirical priors, delta = 0 and Laplace noise",
    ),
    "priors-from missing a column": (
        ["calibrate", "ok.csv", *B, *E1, "--priors-from", "priors_no_x.csv"],
        "public column 'x' is not in the table; columns are ['s', 'y']",
    ),
    "priors-from of another kind": (
        ["calibrate", "ok.csv", *B, *E1, "--priors-from", "priors_text_x.csv"],
        "public column 'x' is numeric in the data but categorical in the priors' table",
    ),
    "priors-from missing": (
        ["calibrate", "ok.csv", *B, *E1, "--priors-from", "nope.csv"],
        "got 'nope.csv', which does not exist",
    ),
    "system not an object": (["multiuser", "mu_list.json", "--pair-set", "P-bot", *E1], '"users" list'),
    "system without users": (["multiuser", "mu_no_users.json", "--pair-set", "P-bot", *E1], '"users" list'),
    "user without pmf": (["multiuser", "mu_no_pmf.json", "--pair-set", "P-bot", *E1], 'needs "pmf"'),
    "pmf not summing to 1": (["multiuser", "mu_sum.json", "--pair-set", "P-bot", *E1], "pmf must sum to 1"),
    "pmf negative": (["multiuser", "mu_negative.json", "--pair-set", "P-bot", *E1], "pmf must be >= 0"),
    "pmf text": (["multiuser", "mu_text.json", "--pair-set", "P-bot", *E1], "pmf must be a 1-D array"),
    "presence > 1": (
        ["multiuser", "mu_presence.json", "--pair-set", "P-bot", *E1],
        "must be in [0, 1], got 1.5",
    ),
}


@pytest.mark.parametrize(("args", "message"), list(CASES.values()), ids=list(CASES))
def test_bad_input_is_one_line_and_changes_nothing(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args, message
) -> None:
    before = _snapshot(folder)
    code, _, err = _run(args, monkeypatch, capsys)
    assert code not in (0, None)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert "Traceback" not in err
    assert _snapshot(folder) == before  # nothing written, nothing overwritten


ACCEPTED = {
    # A text column is categorical, labels as written, and the results say so.
    "mixed types read as text": (["calibrate", "x_mixed.csv", *B, *E1], "x: categorical (labels as written)"),
    # --order may name a label the data lacks when --labels declares it (issue 44): a code, no mass.
    "order with a declared unseen label": (
        ["calibrate", "ok.csv", *T, "--order", "u,v,w", "--labels", "w"],
        "│ w │",
    ),
}


@pytest.mark.parametrize(("args", "shown"), list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_edge_input_that_is_accepted_says_how_it_was_read(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args, shown
) -> None:
    code, out, err = _run(args, monkeypatch, capsys)
    assert code == 0, err
    assert shown in out


def test_one_row_group_is_calibrated_and_shown(  # a legitimate, if poor, estimate
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "one_row.csv").write_text("s,x\na,1\nb,2\nb,3\n")
    code, out, err = _run(["calibrate", "one_row.csv", *B, *E1], monkeypatch, capsys)
    assert code == 0, err
    assert "(n=1)" in out


@pytest.mark.slow
def test_a_million_support_values_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    n = 10**6
    system = {"users": [{"name": "u1", "support": list(range(n)), "pmf": [1.0 / n] * n}]}
    (tmp_path / "big.json").write_text(json.dumps(system))
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(
        ["multiuser", "big.json", "--pair-set", "P-bot", *E1, "--json"], monkeypatch, capsys
    )
    assert code == 0, err
    assert json.loads(out)["results"]


@pytest.mark.parametrize(
    ("support", "pmf", "message"),
    [
        ([0, 1], [-0.1, 1.1], "pmf must be >= 0, got -0.1 at index 0"),
        ([1, 0], [0.3, 0.7], "support must be strictly increasing, got 1.0 then 0.0 at index 0"),
        ([0, 0, 1], [0.2, 0.3, 0.5], "support must be strictly increasing, got 0.0 then 0.0"),
        ([0, 1], [float("nan"), 1.0], "pmf must be finite, got nan at index 0"),
        ([0, 1], [0.3, 0.3], "pmf must sum to 1 (within 1e-9), got a sum of 0.6"),
        ([0, float("nan")], [0.5, 0.5], "support must be finite, got nan at index 1"),
        ([0, 1, 2], [0.5, 0.5], "support and pmf must have the same length, got 3 and 2"),
    ],
    ids=["negative", "unsorted", "duplicate", "nan", "unnormalised", "nan support", "lengths"],
)
def test_api_rejects_bad_masses(support, pmf, message) -> None:
    with pytest.raises(ValueError) as exc:
        DiscretePrior(support, pmf)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("sig", "old"), [(signal.SIGINT, "old\n"), (signal.SIGTERM, None)], ids=["SIGINT", "SIGTERM"]
)
def test_interrupted_release_publishes_nothing(tmp_path: Path, sig: signal.Signals, old: str | None) -> None:
    # 4 million rows: the signal is sent as soon as a hidden ``.out.csv.*`` file exists (the edge's
    # write probe, or the output's temporary file, about 0.8 s before the release would end here),
    # so it arrives at the edge or while the release is read and written.
    duckdb.execute(
        f"COPY (SELECT i % 7 AS s, (i * 7919) % 100 AS x, 'note ' || i AS t FROM range(4000000) r(i)) "
        f"TO '{tmp_path / 'big.csv'}' (FORMAT csv, HEADER true)"
    )
    out = tmp_path / "out.csv"
    if old is not None:
        out.write_text(old)
    before = _snapshot(tmp_path)
    args = ["release", "big.csv", "--secret", "s", "--pair", "1,2", "--public", "x", "--epsilon", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pufferfish.cli.app", *args, "--output", "out.csv", "--force"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a background job inherits SIGINT ignored (as under nohup); a terminal's Ctrl-C is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".out.csv.") for p in tmp_path.iterdir()):  # writing has begun
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)
    assert proc.poll() is None, "the release ended before the signal; use a larger table"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), err  # 143 = 128 + SIGTERM
    assert err.strip().splitlines() == [
        "error: interrupted; no output was published (unfinished files removed)"
    ]
    assert _snapshot(tmp_path) == before  # the old output intact (or none), no temporary file left


def test_interrupted_probe_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The edge probes that an output can be written by creating and removing a hidden file beside
    # it. A Ctrl-C between the two left that file in the user's folder (CI, issue 57's stop: the
    # interrupt test's signal, sent when the first ``.out.csv.*`` file appeared, hit the probe).
    import tempfile

    real_mkstemp = tempfile.mkstemp

    def mkstemp_then_signal(*args: object, **kwargs: object) -> tuple[int, str]:
        made = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        signal.raise_signal(signal.SIGINT)  # between the creation and the removal
        return made  # type: ignore[no-any-return]

    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_signal)
    try:
        with pytest.raises(KeyboardInterrupt):
            unwritable(tmp_path / "out.csv")
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGINT, old_handler)
    assert list(tmp_path.iterdir()) == []


def test_outputs_are_published_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, rep = tmp_path / "out.csv", tmp_path / "out.report.json"
    rep.write_text("old report\n")
    # the block fails: no final file is touched and no temporary file is left
    with pytest.raises(KeyboardInterrupt):
        with atomic_outputs([data, rep], force=True) as (t1, t2):
            t1.write_text("new data\n")
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.report.json"]
    assert rep.read_text() == "old report\n"
    # without force, the second file existing undoes the first one's link
    with pytest.raises(OutputExistsError, match="report file .* exists"):
        with atomic_outputs([data, rep], force=False, kinds=["output", "report"]) as (t1, t2):
            t1.write_text("new data\n")
            t2.write_text("new report\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.report.json"]
    # a Ctrl-C while they are published is held back until both are in place (with Python's own
    # SIGINT handler: an earlier test's Spark context may have installed its own)
    real_replace = os.replace

    def replace_then_signal(src: object, dst: object) -> None:
        real_replace(src, dst)  # type: ignore[arg-type]
        signal.raise_signal(signal.SIGINT)  # between the two renames

    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with atomic_outputs([data, rep], force=True) as (t1, t2):
                t1.write_text("new data\n")
                t2.write_text("new report\n")
                monkeypatch.setattr(os, "replace", replace_then_signal)
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGINT, old_handler)
    assert data.read_text() == "new data\n" and rep.read_text() == "new report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "out.report.json"]


def test_interrupt_message_says_what_was_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pufferfish.cli import app as cli

    out, rep, html = tmp_path / "a.csv", tmp_path / "a.report.json", tmp_path / "r.html"
    out.write_text("old\n")
    monkeypatch.setattr(cli, "_OUTPUTS", {})
    assert cli._interrupted_message() == "error: interrupted (unfinished files removed)"
    cli._will_write(out, rep, html)
    assert (
        cli._interrupted_message() == "error: interrupted; no output was published (unfinished files removed)"
    )
    with atomic_outputs([out, rep], force=True) as (t1, t2):
        t1.write_text("old\n")  # same size and text: the stamp still sees a new file
        t2.write_text("{}\n")
    assert cli._interrupted_message() == (
        f"error: interrupted after {out}, {rep} were published; not written: {html} "
        "(unfinished files removed)"
    )


@pytest.mark.parametrize("data", ["folder", "/dev/null"])
def test_an_input_that_is_no_regular_file_says_so(tmp_path: Path, monkeypatch, capsys, data: str) -> None:
    """Issue 34: a folder, a device or a pipe is 'not a regular file', not 'does not exist'."""
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pufferfish", "calibrate", data, *B, *E1])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 1 and len(err) == 1
    assert err[0].startswith(f"error: data must be a regular file, got {data!r}, which is ")


@pytest.mark.parametrize(
    ("code", "reason"),
    [(28, "No space left on device"), (30, "Read-only file system")],
    ids=["ENOSPC", "EROFS"],
)
def test_an_os_error_while_writing_is_one_line_naming_the_output(
    tmp_path: Path, monkeypatch, capsys, code: int, reason: str
) -> None:
    """Issue 34: any OSError (a full disk, a read-only file system) is one line naming the path the
    user gave, not the temporary file, and leaves nothing behind."""
    import pufferfish.tables.duckdb_engine as engine

    for name, content in FILES.items():
        (tmp_path / name).write_bytes(content.encode() if isinstance(content, str) else content)
    before = _snapshot(tmp_path)

    def full(stream, tmp, *args, **kwargs):  # type: ignore[no-untyped-def]
        tmp.write_text("partial")
        raise OSError(code, reason, str(tmp))

    monkeypatch.setattr(engine, "copy_arrow_to", full)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pufferfish", *R, "--output", "out.csv"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 1 and len(err) == 1 and ".tmp" not in err[0]
    assert err[0].startswith("error: cannot write or read '") and err[0].endswith(f"out.csv': {reason}")
    assert _snapshot(tmp_path) == before  # no output, no temporary file


def test_a_negative_seed_names_the_option(tmp_path: Path, monkeypatch, capsys) -> None:
    """Issue 34: messages speak CLI to CLI users; the API names the argument."""
    (tmp_path / "ok.csv").write_text(FILES["ok.csv"])  # type: ignore[arg-type]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pufferfish", *R, "--output", "out.csv", "--rng-seed", "-3"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "'--rng-seed'" in err[0] and "equal to 0" in err[0]
    from pufferfish.pipeline.release import release

    with pytest.raises(ValueError, match=r"rng seed \(--rng-seed\) must be >= 0, got -3"):
        release("ok.csv", secret="s", public="x", pairs=["a,b"], epsilon=1.0, output="o.csv", rng=-3)
    assert not (tmp_path / "o.csv").exists()


def test_two_outputs_of_one_stem_do_not_replace_each_others_report(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """Issue 34: oz.csv and oz.parquet share oz.report.json; with --force the second release would
    silently replace the first's report. It is refused; the same output again is not."""
    (tmp_path / "ok.csv").write_text(FILES["ok.csv"])  # type: ignore[arg-type]
    monkeypatch.chdir(tmp_path)
    codes = []
    for out in ("oz.csv", "oz.parquet", "oz.csv"):
        monkeypatch.setattr(sys, "argv", ["pufferfish", *R, "--output", out, "--rng-seed", "1", "--force"])
        with pytest.raises(SystemExit) as exc:
            main()
        codes.append(exc.value.code)
    err = capsys.readouterr().err
    assert codes == [0, 1, 0] and "report 'oz.report.json' belongs to the release 'oz.csv'" in err
    assert not (tmp_path / "oz.parquet").exists()
    assert json.loads((tmp_path / "oz.report.json").read_text())["output"] == "oz.csv"


def test_an_epsilon_below_the_checks_resolution_is_a_range_not_a_failure() -> None:
    """Issue 34: epsilon 1e-15 was 'no scale up to the largest float passes the exact check'. The
    loss at a large scale is 0 within a rounding bound of about 2.4e-12, so no check can certify
    1e-15: the rows say the supported range, never that a scale failed, and no warning leaks."""
    import warnings

    from pufferfish import Scenario
    from pufferfish.calibration import REGISTRY, Skipped, run_comparison

    sc = Scenario.single(DiscretePrior([1, 2], [0.5, 0.5]), DiscretePrior([2, 3], [0.5, 0.5]))
    mechs = tuple(REGISTRY[m] for m in ("l1", "kantorovich", "relaxed", "optimal"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        rows = run_comparison(sc, [1e-15], mechs, delta=0.0, noise="laplace")
    assert all(isinstance(r, Skipped) for r in rows)
    for r in rows:
        assert r.reason.startswith("not applicable: ") and "below what the exact check resolves" in r.reason
        assert "supported range is" in r.reason and "fails" not in r.reason
    assert run_comparison(sc, [1e-9], mechs, delta=0.0, noise="laplace")[-1].scale > 0  # 1e-9 is resolved


def test_issue_44_api_types_and_help_defaults(tmp_path) -> None:
    """force must be a bool ('no' is a true value), a bare tuple of two values is named as one
    pair not wrapped in a list, and the CLI's help states the defaults the code uses."""
    import re

    from typer.testing import CliRunner

    from pufferfish.calibration.mapping import DEFAULT_UTILITY_LABELS, DEFAULT_UTILITY_NUMBERS
    from pufferfish.cli.app import app
    from pufferfish.pipeline.calibrate import calibrate_table
    from pufferfish.pipeline.release import release

    out = tmp_path / "o.csv"
    pair = ["Married-civ-spouse,Never-married"]
    with pytest.raises(TypeError, match="force must be True or False, got 'no'"):
        release("adult", secret="marital-status", public="workclass", pairs=pair, epsilon=0.5, output=out,
                force="no", rng=1)  # type: ignore[arg-type]  # fmt: skip
    assert not out.exists()
    with pytest.raises(ValueError, match=r"pairs must be a list of pairs .* one pair\? wrap it in a list"):
        calibrate_table("adult", secret="marital-status", public="workclass",
                        pairs=("Married-civ-spouse", "Never-married"), epsilon=0.5)  # type: ignore[arg-type]  # fmt: skip
    text = " ".join(CliRunner().invoke(app, ["release", "--help"], env={"COLUMNS": "400"}).output.split())
    text = re.sub(r"[│╭╮╰╯─]", " ", text)
    text = " ".join(text.split())
    assert f"default {DEFAULT_UTILITY_LABELS} for a categorical column" in text
    assert f"{DEFAULT_UTILITY_NUMBERS}, the mean absolute error, for a numeric one" in text
    assert "default: a numeric column's range" in text and "--epsilon FLOAT" in text
    markov = CliRunner().invoke(app, ["markov", "calibrate", "--help"], env={"COLUMNS": "400"}).output
    assert "95%%" not in markov and "95%" in markov


def test_issue_44_order_folder_and_no_answer(tmp_path) -> None:
    """An extra label in order is refused unless declared (labels=); an output that is a folder
    is named as such (no --force suggested); a calibration where no mechanism answers exits 1."""
    from typer.testing import CliRunner

    from pufferfish import DataError
    from pufferfish.cli.app import app
    from pufferfish.pipeline.calibrate import calibrate_table

    order = ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
             "Without-pay", "Never-worked", "Bogus"]  # fmt: skip
    how = dict(
        secret="marital-status", public="workclass", pairs=["Married-civ-spouse,Never-married"], epsilon=0.5
    )
    with pytest.raises(
        DataError, match=r"order lists \['Bogus'\], which 'workclass' does not hold: declare them"
    ):
        calibrate_table("adult", order=order, **how)  # type: ignore[arg-type]
    declared = calibrate_table(
        "adult", order=order, labels=["Bogus"], mechanisms=["randomized-response"], **how
    )  # type: ignore[arg-type]
    assert dict(declared.estimated.mapping)["Bogus"] == 8
    folder = tmp_path / "o.csv"
    folder.mkdir()
    args = ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
            "--public", "workclass", "--epsilon", "0.5", "--output", str(folder)]  # fmt: skip
    run = CliRunner().invoke(app, args)
    assert (
        run.exit_code == 1
        and "is a folder: give the path of a file" in run.output
        and "pass --force" not in run.output
    )
    (tmp_path / "t.csv").write_text("s,x\nA,1\nB,2\nA,3\nB,1\n")
    run = CliRunner().invoke(app, ["calibrate", str(tmp_path / "t.csv"), "--secret", "s", "--public", "x",
                                   "--pair", "A,B", "--epsilon", "1e-15"])  # fmt: skip
    assert run.exit_code == 1 and "no mechanism gives a checked scale at epsilon 1e-15" in run.output
