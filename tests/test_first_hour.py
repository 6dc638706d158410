"""Issue 56 (a user's first hour), the items done: refusals in one line before any work, nothing
left behind."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pufferfish.cli.app import app
from pufferfish.tables.domain import check_bounds

runner = CliRunner()
ADULT = ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
         "--public", "age", "--epsilon", "0.5"]  # fmt: skip


def _one_line(res) -> str:
    lines = res.output.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize("output", [".", ".."])
def test_an_output_that_is_a_folder_is_one_line(output, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(runner.invoke(app, [*ADULT, "--output", output]))
    assert "output must be a file such as out.csv" in line and repr(output) in line
    assert list(tmp_path.iterdir()) == []


def test_bounds_beyond_the_floats_integers_are_refused_naming_them(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(runner.invoke(app, [*ADULT, "--bounds", "0,1e200", "--output", "r.csv"]))
    assert "bounds must lie within +-2^53" in line and "'0,1e200'" in line
    assert list(tmp_path.iterdir()) == []
    assert check_bounds("0,9007199254740992") == (0.0, 2.0**53)
    with pytest.raises(ValueError, match="within"):
        check_bounds((-1e16, 0))


@pytest.mark.parametrize("ledger", ["r.csv", "r.report.json"])
def test_a_ledger_that_is_the_output_or_its_report_is_refused_before_any_work(
    ledger, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(runner.invoke(app, [*ADULT, "--output", "r.csv", "--ledger", ledger]))
    assert "ledger must differ from the output" in line
    assert list(tmp_path.iterdir()) == []  # no ledger created, nothing released


def test_a_series_ledger_that_is_the_output_is_refused_before_any_work(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["markov", "release", "mvad", "--id", "id", "--time", "month", "--state", "activity",
            "--target-state", "joblessness", "--epsilon", "1", "--output", "m.csv",
            "--ledger", "m.csv"]  # fmt: skip
    res = runner.invoke(app, args)
    assert "ledger must differ from the output" in _one_line(res)
    assert list(tmp_path.iterdir()) == []


def test_tour_stop_5_runs_in_an_empty_folder_with_the_shipped_system(tmp_path, monkeypatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    args = ["multiuser", "seed000-4users", "--user", "u4", "--pair-set", "P-Q", "--epsilon", "1", "--json"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = {r["mechanism"]: r for r in json.loads(res.stdout)["results"]}
    assert round(rows["optimal"]["scale"], 3) == 1.095  # the README's figure
    assert list(tmp_path.iterdir()) == []
    # a file of that name in the folder is read instead (a path wins)
    (tmp_path / "seed000-4users").write_text("{}")
    assert runner.invoke(app, args).exit_code == 1


# --- options that were ignored in silence, and lines that did not name the cause (issue 56) ---

TABLE = "s,x,c,w\n" + "".join(
    f"{'a' if i % 3 else 'b'},{i % 7},{'u' if i % 5 else 'v'},{'p' if i % 2 else 'q'}\n" for i in range(300)
)


def _release(tmp_path, *extra: str) -> str:
    data = tmp_path / "t.csv"
    if not data.exists():
        data.write_text(TABLE)
    before = sorted(p.name for p in tmp_path.iterdir())
    res = runner.invoke(
        app, ["release", str(data), "--secret", "s", "--pair", "a,b", "--epsilon", "1", *extra]
    )
    line = _one_line(res)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    return line


def test_utility_on_a_release_with_additive_noise_is_refused(tmp_path) -> None:
    out = str(tmp_path / "o.csv")
    line = _release(tmp_path, "--public", "x", "--utility", "accuracy", "--output", out)
    assert "utility is the objective of the randomized mappings" in line and "'x'" in line
    assert "drop --utility" in line
    line = _release(
        tmp_path, "--public", "c", "--mechanism", "relaxed", "--utility", "accuracy", "--output", out
    )
    assert "mechanism relaxed adds noise" in line
    args = ["release", str(tmp_path / "t.csv"), "--secret", "s", "--pair", "a,b", "--epsilon", "1"]
    res = runner.invoke(app, [*args, "--public", "c", "--utility", "accuracy", "--output", out])
    assert res.exit_code == 0, res.output  # a mapping: the utility is its objective


def test_categorical_naming_the_secret_is_refused(tmp_path) -> None:
    for public in ("x,c", "x"):
        line = _release(
            tmp_path, "--public", public, "--categorical", "s", "--output", str(tmp_path / "o.csv")
        )
        assert "categorical names the secret column 's'" in line


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--keep", ""], "keep must name columns 'a,b' (none empty), got ''"),
        (["--keep", "c,"], "keep must name columns"),
        (["--keep-unchecked", ""], "keep_unchecked must name columns"),
        (["--keep", "c", "--keep-unchecked", "c"], "'c' is named by both keep"),
        (["--keep", "w", "--mechanism", "relaxed"], "only the optimal search checks"),
        (["--keep", "zz"], "keep column 'zz' is not in the table"),
    ],
)
def test_kept_columns_misnamed_are_refused_naming_the_cause(extra, expected, tmp_path) -> None:
    line = _release(tmp_path, "--public", "x", *extra, "--output", str(tmp_path / "o.csv"))
    assert expected in line, line
    assert "public column '" not in line  # a kept column is not called a public one


def test_a_header_less_adult_file_suggests_names(tmp_path) -> None:
    import gzip

    from pufferfish.tables.model import ADULT_NAMES
    from pufferfish.tables.source import dataset_path

    with gzip.open(dataset_path("adult"), "rt") as fh:
        header, *rows = [next(fh) for _ in range(50)]
    assert header.strip() == ADULT_NAMES
    data = tmp_path / "adult.data"
    data.write_text("".join(rows))
    args = ["release", str(data), "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
            "--public", "workclass", "--epsilon", "0.5", "--output", str(tmp_path / "o.csv")]  # fmt: skip
    line = _one_line(runner.invoke(app, args))
    assert "the first row looks like data" in line and f"--names {ADULT_NAMES}" in line
    res = runner.invoke(app, [*args, "--names", ADULT_NAMES])
    assert res.exit_code == 0, res.output


def _lock(path) -> bool:
    """Make ``path`` unwritable: immutable (root, chattr) or read-only (chmod); True if it took."""
    import os
    import subprocess

    if os.geteuid() == 0:
        return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    path.chmod(0o555 if path.is_dir() else 0o444)
    return True


def _unlock(path) -> None:
    import os
    import subprocess

    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    path.chmod(0o755 if path.is_dir() else 0o644)


def test_unwritable_outputs_and_ledgers_are_refused_before_any_work(tmp_path) -> None:
    data = tmp_path / "t.csv"
    data.write_text(TABLE)
    out, folder = tmp_path / "old.csv", tmp_path / "locked"
    out.write_text("keep me\n")
    folder.mkdir()
    if not (_lock(out) and _lock(folder)):
        _unlock(out)
        pytest.skip("this file system cannot make a file immutable")
    try:
        base = ["release", str(data), "--secret", "s", "--pair", "a,b", "--epsilon", "1", "--public", "x"]
        line = _one_line(runner.invoke(app, [*base, "--output", str(out), "--force"]))
        assert f"output {str(out)!r} cannot be replaced" in line and "give another path" in line
        line = _one_line(runner.invoke(app, [*base, "--output", str(folder / "o.csv")]))
        assert "does not take new files" in line
        line = _one_line(
            runner.invoke(app, [*base, "--output", str(tmp_path / "n.csv"), "--ledger", str(folder / "l.db")])
        )
        assert f"ledger {str(folder / 'l.db')!r}: its folder" in line and "does not take new files" in line
        assert out.read_text() == "keep me\n" and not (tmp_path / "n.csv").exists()
    finally:
        _unlock(out)
        _unlock(folder)


def test_ctrl_c_inside_duckdb_exits_130_in_one_line(tmp_path, monkeypatch) -> None:
    """Ctrl-C while DuckDB copies the release: the KeyboardInterrupt is raised in the Python
    stream DuckDB reads (where DuckDB catches and quotes it, issue 56: 61 lines, exit 1); the
    command exits 130 without a traceback, and nothing is left in the folder."""
    import pufferfish.tables.duckdb_engine as engine
    from pufferfish.cli.common import interrupted

    data = tmp_path / "t.csv"
    data.write_text(TABLE)
    calls = []

    def stop(*args, **kwargs):
        calls.append(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "perturb_batch", stop)
    res = runner.invoke(app, ["release", str(data), "--secret", "s", "--pair", "a,b", "--epsilon", "1",
                              "--public", "x", "--output", str(tmp_path / "o.csv")])  # fmt: skip
    assert calls and res.exit_code == 130, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) <= 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    # the forms a wrapped interrupt takes
    wrapped = RuntimeError(
        "reading the stream failed: Python exception: Traceback (most recent call last):\nKeyboardInterrupt\n"
    )
    chained = ValueError("stream failed")
    chained.__cause__ = KeyboardInterrupt()
    assert interrupted(wrapped) and interrupted(chained) and not interrupted(ValueError("bad cell"))
    # a library message quoting a user's value is never read as an interrupt
    assert not interrupted(ValueError("secret value 'Query interrupted' does not occur in column 's'"))
    import duckdb

    assert interrupted(
        duckdb.InvalidInputException("Detail: Python exception: Traceback\nKeyboardInterrupt\n")
    )
    assert not interrupted(duckdb.ConversionException("Could not convert string 'KeyboardInterrupt' to INT"))


def test_a_second_release_of_a_column_without_a_ledger_says_what_a_ledger_would_check(tmp_path) -> None:
    data = tmp_path / "t.csv"
    data.write_text(TABLE)
    base = ["release", str(data), "--secret", "s", "--pair", "a,b", "--epsilon", "1", "--public", "x"]
    first = runner.invoke(app, [*base, "--output", str(tmp_path / "o1.csv")])
    assert first.exit_code == 0 and "note: no ledger" not in first.output, first.output
    second = runner.invoke(app, [*base, "--output", str(tmp_path / "o2.csv")])
    text = " ".join(second.output.split())
    assert second.exit_code == 0 and "note: no ledger, and o1.report.json (eps 1)" in text, text
    assert "--ledger FILE" in text
    other = runner.invoke(app, [*base[:-1], "c", "--output", str(tmp_path / "o3.csv")])  # another column
    assert other.exit_code == 0 and "note: no ledger" not in other.output
    again = runner.invoke(app, [*base, "--output", str(tmp_path / "o1.csv"), "--force"])  # replaced
    assert "o1.report.json (eps 1)" in " ".join(again.output.split())


def test_ledger_show_names_a_shipped_table_and_prints_whole_times(tmp_path, monkeypatch) -> None:
    import re

    monkeypatch.chdir(tmp_path)  # the tour's relative paths
    book = tmp_path / "l.db"
    base = ["release", "adult", "--secret", "sex", "--pair", "Male,Female", "--epsilon", "1",
            "--ledger", str(book), "--prior-set", "none"]  # fmt: skip
    assert runner.invoke(app, [*base, "--public", "age", "--output", "age1.csv"]).exit_code == 0
    res = runner.invoke(app, ["ledger", "show", str(book)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "releases of shipped data set 'adult'" in text and "site-packages" not in res.output
    assert "datasets/adult.csv.gz" not in res.output and "…" not in res.output
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", res.output)
    assert max(map(len, res.output.splitlines())) <= 80  # the tour's table fits 80 columns
    assert "age1.csv" in res.output and "estimate" in res.output
    # a wider row is never cropped (the table as wide as it needs; was 'age1.cs', 'optimal-mappi')
    assert runner.invoke(app, [*base, "--public", "race", "--output", "race-release.csv"]).exit_code == 0
    res = runner.invoke(app, ["ledger", "show", str(book)])
    assert "optimal-mapping" in res.output and "race-release.csv" in res.output, res.output


def test_a_session_checks_its_secret_and_pairs_at_once_and_removes_its_own_ledger(tmp_path) -> None:
    import gc

    import pufferfish as pf
    from pufferfish.tables import DataError

    data = tmp_path / "t.csv"
    data.write_text(TABLE)
    with pytest.raises(DataError, match="secret column 'nope' is not in the table"):
        pf.Session(data, secret="nope", pairs=[("a", "b")])
    with pytest.raises(
        DataError, match="secret value 'zz' does not occur in column 's'; values are 'a', 'b'"
    ):
        pf.Session(data, secret="s", pairs=[("a", "zz")])
    with pf.Session(data, secret="s", pairs=[("a", "b")]) as session:
        folder = session.ledger.path.parent
        r = session.release("x", 1.0, tmp_path / "o.csv", mechanism="optimal", prior_set="none")
        assert r.report["ledger"]["entry"] == 1 and folder.is_dir()
    assert not folder.exists()  # its temporary ledger went with it
    session = pf.Session(data, secret="s", pairs=[("a", "b")])
    folder = session.ledger.path.parent
    assert folder.is_dir()
    del session
    gc.collect()
    assert not folder.exists()
    kept = tmp_path / "mine.sqlite"
    with pf.Session(data, secret="s", pairs=[("a", "b")], ledger=kept) as session:
        session.release("x", 1.0, tmp_path / "o2.csv", mechanism="optimal", prior_set="none")
    assert kept.exists()  # a ledger given is the user's: kept
    assert pf.Session.__module__ == "pufferfish.session"


@pytest.mark.parametrize(
    ("lo", "hi"), [(0.9, 1.1), (9.0, 12.0), (3.0, 8.0), (0.5, 4.0), (20.0, 1e3), (1e-3, 1e3)]
)
def test_log_axes_label_several_ticks_on_any_span_and_never_crowd(lo, hi) -> None:
    """Every report's log axes (tables, series, sums): at least 2 labelled ticks in view (one `10`
    before on a narrow span) and at most 8 (the sum page's overlapped)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from pufferfish.pipeline.page import log_axes

    fig = Figure()
    ax = fig.subplots()
    ax.plot([lo, hi], [lo, hi])
    log_axes(ax, x=True, y=True)
    FigureCanvasAgg(fig).draw()
    for labels, (v0, v1), at in (
        (ax.get_xticklabels(), ax.get_xlim(), 0),
        (ax.get_yticklabels(), ax.get_ylim(), 1),
    ):
        shown = [t.get_text() for t in labels if t.get_text() and v0 <= t.get_position()[at] <= v1]
        assert 2 <= len(shown) <= 8, shown
        assert all("$" not in t for t in shown)  # plain numbers, no mathtext


def test_the_registry_imports_no_model_package_and_markov_registers_its_mechanisms_explicitly() -> None:
    """The registry keeps every mechanism's name, source and order, and imports nothing of
    pufferfish.markov; the package gives it the Markov mechanisms' implementations by an explicit
    call when it is imported (which a count scenario's model implies). Run in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pufferfish.calibration.registry import MODEL_MECHANISMS, REGISTRY, not_applicable\n"
        "assert not [m for m in sys.modules if m.startswith('pufferfish.markov')]\n"
        "assert {'group-dp', 'gk16', 'mqm-approx', 'mqm-exact', 'optimal-set'} <= set(REGISTRY)\n"
        "assert MODEL_MECHANISMS == {}\n"
        "from pufferfish.markov import CountModel, MarkovChain, count_scenario\n"
        "assert set(MODEL_MECHANISMS) == {'markov count'}\n"
        "import numpy as np\n"
        "chain = MarkovChain(np.array([[0.8, 0.2], [0.3, 0.7]]), 'stationary', ('0', '1'))\n"
        "s = count_scenario(CountModel((chain,), 6, '1'))\n"
        "assert not_applicable(s, 'mqm-exact', 'laplace', 0.0) is None\n"
        "assert 'row balls' in not_applicable(s, 'optimal-set', 'laplace', 0.0)\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


def test_release_and_the_session_build_one_request_and_release_is_a_thin_wrapper(tmp_path) -> None:
    """release() is plan_release (every argument validated once, into one request) then
    run_release; the Session binds its arguments to release()'s signature and builds the same plan
    (unknown options a TypeError, the session's own a ValueError), before anything is written."""
    import ast
    import inspect

    import pufferfish as pf
    from pufferfish.pipeline import release as module

    body = ast.parse(inspect.getsource(module.release)).body[0].body  # type: ignore[attr-defined]
    assert len(body) == 3  # docstring, arguments = dict(locals()), return run_release(plan_release(...))
    data = tmp_path / "t.csv"
    data.write_text(TABLE)
    session = pf.Session(data, secret="s", pairs=[("a", "b")], ledger=tmp_path / "l.db")
    plan = session.plan("x", 1.0, tmp_path / "o.csv", mechanism="optimal", prior_set="none")
    assert isinstance(plan, module.ReleasePlan) and plan.request.columns == ("x",)
    assert plan.target.ledger is not None and not (tmp_path / "o.csv").exists()
    with pytest.raises(TypeError, match="mechansim"):
        session.plan("x", 1.0, tmp_path / "o.csv", mechansim="optimal")
    with pytest.raises(ValueError, match="budget is the session's"):
        session.plan("x", 1.0, tmp_path / "o.csv", budget=1.0)
    bound = inspect.signature(module.release).bind(
        data, secret="s", public="x", pairs=[("a", "b")], epsilon=1.0, output=tmp_path / "o.csv",
        mechanism="optimal", prior_set="none", ledger=tmp_path / "l.db",
    )  # fmt: skip
    bound.apply_defaults()
    direct = module.plan_release(bound.arguments)
    assert direct.request.columns == plan.request.columns and direct.request.pairs == plan.request.pairs
