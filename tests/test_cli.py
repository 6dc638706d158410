"""The pufferfish CLI and release on the shipped Adult data and on small files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from pufferfish import dataset_path, release
from pufferfish.cli.app import app

ADULT = [
    "adult",
    "--secret",
    "marital-status",
    "--pair",
    "Married-civ-spouse,Never-married",
    "--public",
    "workclass",
]
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_calibrate_json_on_adult() -> None:
    # the point-estimate comparison of every mechanism (the robust default: test_robust.py), on
    # the rows with a workclass (--missing omit: the seed papers' convention, 8 labels)
    res = run(
        "calibrate", *ADULT, "--epsilon", "0.5", "--epsilon", "1", "--json", "--prior-set", "none",
        "--mechanism", "all", "--missing", "omit",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    rows = out["results"]
    used = [(r["mechanism"], r["epsilon"]) for r in rows if r["scale"] is not None and r["epsilon"] == 0.5]
    assert used == [
        ("l1", 0.5),
        ("kantorovich", 0.5),
        ("wasserstein-inf", 0.5),
        ("relaxed", 0.5),
        ("mi-laplace", 0.5),
        ("optimal", 0.5),
    ]
    skipped = {r["mechanism"]: r["reason"] for r in rows if "reason" in r}
    mapped = [r["mechanism"] for r in rows if "matrix" in r and r["epsilon"] == 0.5]
    assert mapped == ["randomized-response-dp", "randomized-response", "geometric", "optimal-mapping"]
    assert skipped["monge"] == "needs Gaussian priors (one component)"
    assert skipped["analytic-gaussian"] == "adds gaussian noise, not laplace"
    assert all(r["delta"] == 0.0 for r in rows)
    by = {(r["mechanism"], r["epsilon"]): r for r in rows}
    assert by[("l1", 0.5)]["scale"] == pytest.approx(14.0)
    assert by[("kantorovich", 0.5)]["scale"] == pytest.approx(4.0)
    assert by[("wasserstein-inf", 0.5)]["scale"] == by[("kantorovich", 0.5)]["scale"]  # one column
    for eps in (0.5, 1.0):
        s = [by[(m, eps)]["scale"] for m in ("optimal", "relaxed", "kantorovich", "l1")]
        assert s == sorted(s)
        assert all(by[(m, eps)]["checked_loss"] <= eps for m in ("optimal", "relaxed", "kantorovich", "l1"))
    assert out["rows_dropped_missing"] == 2799 and out["inputs"]["missing"] == "omit"
    assert out["mapping"][0] == {"label": "Federal-gov", "code": 0} and len(out["mapping"]) == 8


def test_calibrate_reads_a_missing_label_as_a_value_by_default() -> None:
    # issue 41: a release publishes the 2,799 missing workclass cells, so the default priors hold
    # them as a ninth label (JSON null, code 8) and no row is left out
    res = run("calibrate", *ADULT, "--epsilon", "0.5", "--json", "--prior-set", "none", "--mechanism", "l1")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["rows_dropped_missing"] == 0 and out["inputs"]["missing"] == "value"
    assert out["mapping"][-1] == {"label": None, "code": 8} and len(out["mapping"]) == 9
    (l1,) = [r for r in out["results"] if r["scale"] is not None]
    assert l1["scale"] == pytest.approx(16.0)  # 2 * (9 - 1) / 0.5: the alphabet spans 8 codes


def test_calibrate_table_and_single_mechanism() -> None:
    res = run("calibrate", *ADULT, "--epsilon", "0.5", "--mechanism", "optimal")
    assert res.exit_code == 0, res.output
    assert "epsilon = 0.5" in res.stdout and "optimal" in res.stdout and "kantorovich" not in res.stdout
    assert "Priors P(workclass | marital-status)" in res.stdout


def test_release_adult_csv(tmp_path) -> None:
    out = tmp_path / "rel.csv"
    # codes plus Laplace noise, when asked for (the default for labels is a mapping: test_main_job)
    args = ("--output", str(out), "--rng-seed", "7", "--mechanism", "optimal", "--compare")
    res = run("release", "--keep-order", *ADULT, "--epsilon", "0.5", *args)
    assert res.exit_code == 0, res.output
    original = pd.read_csv(dataset_path("adult"), dtype=str, keep_default_na=False)
    # one column: a missing cell is an empty line (pandas skips those unless told)
    released = pd.read_csv(out, dtype=str, keep_default_na=False, skip_blank_lines=False).fillna("")
    assert list(released.columns) == ["workclass"] and len(released) == len(original)  # issue 41
    report0 = json.loads((tmp_path / "rel.report.json").read_text())
    assert report0["output_columns"]["written"] == list(released.columns) == ["workclass"]
    # a missing cell is the label coded 8 (JSON null), released with noise as every other (issue 41)
    noisy = released["workclass"].astype(float).to_numpy()
    report = json.loads((tmp_path / "rel.report.json").read_text())
    codes = {m["label"] or "": m["code"] for m in report["mapping"]}
    assert codes[""] == 8
    x = original["workclass"].map(codes).to_numpy(dtype=float)
    scale = report["chosen"]["scale"]
    assert report["chosen"]["mechanism"] == "optimal"
    assert np.mean(np.abs(noisy - x)) == pytest.approx(scale, rel=0.03)  # E|Laplace(b)| = b
    assert report["noise"]["secure"] is False and report["noise"]["seed"] == 7
    assert report["rows"]["released_with_noise"] == 48842
    # the default: every prior in the 95% DKW band of each estimate; optimal and l1 apply there,
    # and the point-estimate optimal is reported beside them
    assert [m["mechanism"] for m in report["mechanisms"] if m["scale"] is not None] == [
        "l1",
        "optimal",
        "optimal",
    ]
    assert (
        report["chosen"]["prior_set"]["kind"] == "dkw" and report["chosen"]["prior_set"]["confidence"] == 0.95
    )
    assert report["chosen"]["scale"] == pytest.approx(1.3748, abs=5e-4)  # 9 labels (issue 15: 1.085 on 8)
    assert "95% DKW band" in report["guarantee"]
    assert report["chosen"]["checked_loss"] <= 0.5

    before = out.read_bytes()
    again = run(
        "release", "--keep-order", *ADULT, "--epsilon", "0.5", "--output", str(out), "--rng-seed", "8"
    )
    assert again.exit_code == 1
    assert "exists; pass --force" in again.output
    assert out.read_bytes() == before  # never overwritten without --force
    forced = run(
        "release",
        "--keep-order",
        *ADULT,
        "--epsilon",
        "0.5",
        "--output",
        str(out),
        "--rng-seed",
        "8",
        "--force",
    )
    assert forced.exit_code == 0, forced.output
    assert out.read_bytes() != before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_release_parquet_secure_from_small_csv(tmp_path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("id,s,x\n1,a,0\n2,a,1\n3,b,1\n4,b,2\n5,a,3\n6,c,2\n")
    out = tmp_path / "out.parquet"
    result = release(
        src,
        secret="s",
        public="x",
        pairs=[("a", "b")],
        epsilon=1.0,
        output=out,
        mechanism="relaxed",
        prior_set="none",  # relaxed holds for the point estimate only
        keep_unchecked="id",
        keep_order=True,
    )
    table = pd.read_parquet(out)
    # a kept column of a CSV is its text (DuckDB would sniff 007 as 7 and yes as true); the secret
    # is not written (issue 41)
    assert list(table.columns) == ["id", "x"]
    assert table["id"].tolist() == ["1", "2", "3", "4", "5", "6"]
    assert table["x"].notna().sum() == 6
    (kept,) = result.kept
    assert kept.column == "id" and kept.loss == float("inf")  # each id occurs under one secret
    assert result.noise["secure"] and result.chosen.mechanism == "relaxed"
    assert result.report_path == tmp_path / "out.report.json"


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pufferfish.cli.app", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["calibrate", *ADULT[:-1], "nope", "--epsilon", "1"], "public column 'nope' is not in the table"),
        (
            [
                "calibrate",
                "adult",
                "--secret",
                "marital-status",
                "--pair",
                "Married-civ-spouse,Martian",
                "--public",
                "workclass",
                "--epsilon",
                "1",
            ],
            "secret value 'Martian' does not occur",
        ),
        (
            [
                "calibrate",
                "adult",
                "--secret",
                "marital-status",
                "--pair",
                "Married-civ-spouse,",
                "--public",
                "workclass",
                "--epsilon",
                "1",
            ],
            "pair must be two secret values",
        ),
        (["calibrate", *ADULT, "--epsilon", "0"], "epsilon must be finite and > 0, got 0.0"),
        (["calibrate", *ADULT, "--epsilon", "-1"], "epsilon must be finite and > 0, got -1.0"),
        (["calibrate", *ADULT, "--epsilon", "inf"], "epsilon must be finite and > 0, got inf"),
        (
            [
                "calibrate",
                "no-such-file.csv",
                "--secret",
                "s",
                "--pair",
                "a,b",
                "--public",
                "x",
                "--epsilon",
                "1",
            ],
            "does not exist",
        ),
    ],
)
def test_bad_input_gives_one_line_and_nonzero_exit(args, message) -> None:
    res = _cli(*args)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_empty_group_and_existing_output_via_console(tmp_path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("s,x\na,u\nb,\n")
    base = ("calibrate", str(src), "--secret", "s", "--pair", "a,b", "--public", "x", "--epsilon", "1")
    res = _cli(*base, "--missing", "omit")  # b's one row has x missing, left out
    assert res.returncode == 1 and "secret value 'b' has no row with a public value" in res.stderr
    res = _cli(*base, "--missing", "nothing")
    assert res.returncode == 1 and "missing must be one of value, omit, impute, got 'nothing'" in res.stderr
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    res = _cli("release", *ADULT, "--epsilon", "1", "--output", str(out))
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "exists; pass --force" in res.stderr
    assert out.read_text() == "precious\n"
    res = _cli("release", *ADULT, "--epsilon", "1", "--output", str(tmp_path / "out.txt"))
    assert res.returncode == 1 and "output must end in .csv" in res.stderr


def test_several_pairs_report_the_deciding_pair() -> None:
    res = run(
        "calibrate", "adult", "--secret", "race", "--public", "education-num",
        "--pair", "White,Black", "--pair", "Asian-Pac-Islander,Amer-Indian-Eskimo",
        "--epsilon", "1", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["categorical"] is False and out["mapping"] == []
    assert set(out["priors"]) == {"White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo"}
    for r in out["results"]:
        if r["scale"] is None or r["criterion"] != "(eps, delta)-PP":
            continue
        assert r["pair"] in (["White", "Black"], ["Asian-Pac-Islander", "Amer-Indian-Eskimo"])
        assert r["checked_loss"] <= 1.0
    table = run(
        "calibrate", "adult", "--secret", "race", "--public", "education-num",
        "--pair", "White,Black", "--pair", "Asian-Pac-Islander,Amer-Indian-Eskimo", "--epsilon", "1",
    )  # fmt: skip
    assert table.exit_code == 0 and "vs" in table.stdout  # the deciding pair is shown


CODES = "loan,age,code\nyes,30,007\nno,40,012\nyes,35,007\nno,50,\nyes,41,012\nno,33,007\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--public", "code", "--numeric", "loan"], "the secret column 'loan' is compared as text"),
        (["--public", "code", "--numeric", "code", "--categorical", "code"], "cannot be both"),
        (["--public", "code", "--categorical", "job"], "may name the public or weight column"),
        (["--public", "age", "--categorical", "age", "--weight", "age"], "cannot be categorical"),
    ],
)
def test_column_type_overrides_are_checked(tmp_path: Path, extra: list[str], message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(CODES)
    res = run("calibrate", str(path), "--secret", "loan", "--pair", "yes,no", "--epsilon", "1", *extra)
    assert res.exit_code == 1 and message in res.output and "Traceback" not in res.output


def test_column_type_overrides_change_how_the_public_column_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(CODES)
    base = ["calibrate", str(path), "--secret", "loan", "--pair", "yes,no", "--epsilon", "1", "--json"]
    as_text = json.loads(run(*base, "--public", "code").stdout)  # DuckDB reads 007 as text here
    assert [m["label"] for m in as_text["mapping"]] == ["007", "012", None]  # None: a missing cell
    assert as_text["columns_read_as"] == {
        "loan": "text (labels as written)",
        "code": "categorical (labels as written)",
    }
    as_numbers = json.loads(run(*base, "--public", "code", "--numeric", "code", "--missing", "omit").stdout)
    assert as_numbers["mapping"] == [] and as_numbers["columns_read_as"]["code"] == "numeric"
    assert as_numbers["inputs"]["numeric"] == ["code"]
    ages = json.loads(run(*base, "--public", "age", "--categorical", "age").stdout)
    assert [m["label"] for m in ages["mapping"]][:2] == ["30", "33"]
    path.write_text(CODES.replace("no,33,007", "no,33,x"))
    res = run(*base, "--public", "code", "--numeric", "code")
    assert (
        res.exit_code == 1
        and "public column 'code' is read as numeric but holds 'x', not a number" in res.output
    )


def test_one_value_column_every_mechanism_answers(tmp_path: Path) -> None:
    """Issue 29: a public column with one value under both secrets is valid input. Every mechanism
    answers scale 0 (mi-laplace included: I(S; X) = 0 without noise), nothing ends the comparison,
    and the JSON has a row per mechanism."""
    src = tmp_path / "one.csv"
    src.write_text("s,v\na,4\nb,4\na,4\n")
    res = run("calibrate", str(src), "--secret", "s", "--pair", "a,b", "--public", "v", "--epsilon", "1",
              "--prior-set", "none", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["results"]
    answered = {r["mechanism"]: r for r in rows if r.get("scale") is not None}
    assert {"l1", "kantorovich", "wasserstein-inf", "relaxed", "mi-laplace", "optimal"} <= set(answered)
    assert all(r["scale"] == 0.0 for r in answered.values())
    for args in (["--mechanism", "all"], ["--noise", "gaussian", "--delta", "1e-5", "--mechanism", "all"],
                 ["--categorical", "v", "--mechanism", "all"]):  # fmt: skip
        res = run("calibrate", str(src), "--secret", "s", "--pair", "a,b", "--public", "v", "--epsilon", "1",
                  "--prior-set", "none", *args)  # fmt: skip
        assert res.exit_code == 0, (args, res.output)


def test_joint_calibration_prints_each_columns_own_scale(tmp_path) -> None:
    """Issue 44: beside the scale in units, each column's own noise (x: Laplace(b w_x))."""
    import re

    import pandas as pd

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"s": ["A", "B"] * 100, "c": rng.choice(["u", "v"], 200), "x": rng.integers(0, 9, 200) * 10}
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    args = ["calibrate", str(tmp_path / "t.csv"), "--secret", "s", "--public", "c,x", "--pair", "A,B",
            "--epsilon", "1", "--prior-set", "none", "--mechanism", "optimal"]  # fmt: skip
    run = runner.invoke(app, args)
    assert run.exit_code == 0, run.output
    text = " ".join(run.output.split())
    head = r"optimal \(eps 1\) per column: c: randomized response, log ratio <= ([0-9.]+); "
    found = re.search(head + r"x: Laplace\(([0-9.]+)\)", text)
    assert found is not None, text
    log_ratio, laplace = float(found.group(1)), float(found.group(2))
    assert laplace == pytest.approx(
        80.0 / log_ratio, rel=1e-3
    )  # w_x = 80 (the range), w_c = 1: b = 1 / log ratio


def test_long_steps_show_progress_on_a_terminal_only(capsys) -> None:
    """Issue 44: a spinner with the time elapsed while a long step runs, and the release bar says
    'calibrating' before its first row; neither writes anything when standard error is no terminal."""
    from pufferfish.cli.common import progress_bar, working

    with working("calibrating"):
        pass
    with progress_bar() as advance:
        advance(5, 10)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_the_release_summary_fits_80_columns_and_says_each_thing_once(tmp_path) -> None:
    """Issue 46: run as the README's main job, every line of the summary fits 80 columns (a
    file path alone may not: it is never cut), and the priors the guarantee holds for are said
    once, in the guarantee; ``calibrate`` still says them on its ``priors:`` line."""
    out = tmp_path / "out.csv"
    args = ["release", "adult", "--secret", "marital-status", "--pair", "Married-civ-spouse,Never-married",
            "--public", "workclass", "--epsilon", "0.5", "--output", str(out)]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    long = [line for line in res.output.splitlines() if len(line) > 80 and str(tmp_path) not in line]
    assert not long, long
    words = " ".join(res.output.split())
    assert "columns read as: marital-status: text (labels as written), workclass: categorical" in words
    assert "priors:" not in res.output
    assert words.count("It holds for every adversary prior within the 95% DKW band") == 1
    cal = runner.invoke(app, ["calibrate", *ADULT, "--epsilon", "0.5"])
    assert cal.exit_code == 0, cal.output
    assert "priors: It holds for every adversary prior" in " ".join(cal.output.split())
