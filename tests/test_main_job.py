"""Issue 32: the main job as a new user sees it. A categorical column is released as labels by the
optimal randomized mapping that keeps every label's share; tables are readable at 80 columns."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table
from scipy.optimize import linprog
from typer.testing import CliRunner

from pufferfish import AdversaryPrior, DiscretePrior, Scenario
from pufferfish.calibration import REGISTRY, Skipped, TimeLimitError, run_comparison
from pufferfish.calibration import mapping as mapping_module
from pufferfish.calibration.mapping import Utility, mapping_calibration, mapping_loss, optimal_matrix
from pufferfish.cli.app import app
from pufferfish.cli.common import print_table
from pufferfish.pipeline.release import release

README = Path(__file__).resolve().parents[1] / "README.md"
ADULT_PAIR = "Married-civ-spouse,Never-married"
runner = CliRunner()


def _readme_main_job() -> list[str]:
    """The arguments of the README's first command after ``pufferfish``."""
    first = re.search(r"```bash\n(.*?)\n```", README.read_text(), re.S)
    assert first is not None
    command = first.group(1).split("&& pufferfish ", 1)[1]
    return command.split()


def test_readme_main_job_writes_labels_and_fits_80_columns(tmp_path, monkeypatch) -> None:
    """The README's first command, as written (output moved to tmp_path), at COLUMNS=80."""
    args = _readme_main_job()
    assert args[0] == "release" and "--mechanism" not in args  # the default does the job
    out = tmp_path / args[args.index("--output") + 1]
    args[args.index("--output") + 1] = str(out)
    monkeypatch.setenv("COLUMNS", "80")
    res = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "…" not in res.output
    report = json.loads(out.with_name(out.name.removesuffix(".csv") + ".report.json").read_text())
    assert report["chosen"]["mechanism"] == "optimal-mapping" and report["chosen"]["utility"] == "shares"
    assert "mechanism: optimal-mapping" in res.output
    labels = [m["label"] or "" for m in report["mapping"]]  # None (a missing cell) is written ""
    assert labels[-1] == ""  # issue 41: a ninth label, inside the check
    with out.open(newline="") as f:
        rows = list(csv.reader(f))  # one column: a missing cell is an empty line ([])
    assert rows[0] == ["workclass"] == report["output_columns"]["written"]  # issue 41: nothing else
    released = Counter(r[0] if r else "" for r in rows[1:])
    assert len(rows) - 1 == 48_842
    assert set(released) <= set(labels)
    counts = report["noise"]["counts"]
    values = [v or "" for v in counts["values"]]
    rare = min(zip(counts["input"], values, strict=True))[1]
    assert set(labels) - {rare} <= set(released)  # every label but the rarest appears
    assert [released[v] for v in values] == counts["output"]  # the counts are the file's
    assert sum(counts["input"]) == sum(counts["output"]) == 48_842  # every row, missing ones too
    assert counts["input"][-1] == 2_799
    # the shares are kept: each label's output count is within 5 sd of its input count
    for n_in, n_out in zip(counts["input"], counts["output"], strict=True):
        assert abs(n_out - n_in) <= 5 * np.sqrt(n_in + 1) + 5


@pytest.mark.parametrize("width", [80, 120, 200])
def test_calibrate_every_mechanism_prints_no_cut_cell(width: int) -> None:
    res = runner.invoke(
        app,
        ["calibrate", "adult", "--secret", "marital-status", "--pair", ADULT_PAIR, "--public", "workclass",
         "--epsilon", "0.5", "--mechanism", "all"],
        env={"COLUMNS": str(width)},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "…" not in res.output
    for name in ("optimal-mapping", "randomized-response-dp", "kantorovich", "l1"):
        assert name in res.output


def test_calibrate_default_of_a_categorical_column_is_the_mappings() -> None:
    res = runner.invoke(
        app,
        ["calibrate", "adult", "--secret", "marital-status", "--pair", ADULT_PAIR, "--public", "workclass",
         "--epsilon", "0.5", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["results"]
    names = {r["mechanism"] for r in rows}
    assert {"optimal-mapping", "randomized-response", "randomized-response-dp", "geometric"} <= names
    assert not names & {"optimal", "l1", "kantorovich"}  # codes get noise only when asked
    point = [r for r in rows if r["mechanism"] == "optimal-mapping" and r["prior_set"]["kind"] == "none"]
    assert len(point) == 1  # the mapping at the estimate alone, beside the set's: the price


def test_print_table_wraps_or_lists_records_and_never_cuts() -> None:
    table = Table(title="t")
    for h in ("mechanism", "value", "decided by"):
        table.add_column(h)
    table.add_row("randomized-response-dp", "0.123456789", "a long explanation of several words " * 3)
    table.add_row("optimal-mapping", "1", "short")
    for width in (30, 60, 80, 200):
        console = Console(width=width, record=True, file=open("/dev/null", "w"))
        print_table(console, table)
        text = console.export_text()
        assert "…" not in text and "randomized-response-dp" in text and "0.123456789" in text
        assert max(len(line) for line in text.splitlines()) <= width
        assert ("- randomized-response-dp" in text) == (width < 40)  # records when words cannot fit


def _priors(rng: np.random.Generator, k: int) -> Scenario:
    support = np.arange(k, dtype=float)
    a, b = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    prior = AdversaryPrior("rho", {"a": DiscretePrior(support, a), "b": DiscretePrior(support, b)})
    return Scenario([("a", "b")], [prior])


@pytest.mark.parametrize("seed", range(6))
def test_shares_lp_against_a_dense_independent_lp(seed: int) -> None:
    """The ``shares`` program (accuracy subject to mu M = mu) solved again with dense matrices:
    the same optimum; the released matrix keeps every share to the rounding of its mixture and
    passes the exact check; accuracy <= the unconstrained optimum."""
    rng = np.random.default_rng(seed)
    k, eps = int(rng.integers(2, 6)), float(rng.choice([0.2, 0.5, 1.0]))
    scenario = _priors(rng, k)
    p_a, p_b = (scenario.priors[0].conditionals[s].pmf for s in ("a", "b"))
    mu = rng.dirichlet(np.ones(k))
    util = Utility("shares", mu, np.arange(k, dtype=float))
    sol = optimal_matrix(scenario, eps, util)
    # independent dense LP: variables M[x, w] row-major
    e = np.exp(eps)
    rows = []
    for w in range(k):
        for up, down in ((p_a, p_b), (p_b, p_a)):
            r = np.zeros((k, k))
            r[:, w] = up - e * down
            rows.append(r.ravel())
    a_eq = [np.kron(np.eye(k)[x], np.ones(k)) for x in range(k)]
    for w in range(k):
        r = np.zeros((k, k))
        r[:, w] = mu
        a_eq.append(r.ravel())
    cost = -(np.eye(k) * mu[:, None]).ravel()
    ref = linprog(cost, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=np.array(a_eq),
                  b_eq=np.concatenate([np.ones(k), mu]), bounds=(0, None), method="highs")  # fmt: skip
    assert ref.status == 0
    assert sol.bound == pytest.approx(-ref.fun, abs=1e-8)
    np.testing.assert_allclose(mu @ sol.matrix, mu, atol=1e-8)
    cal = mapping_calibration(scenario, eps, "optimal-mapping", util)
    released = cal.weights / 2.0**52
    np.testing.assert_allclose(mu @ released, mu, atol=1e-8 + cal.safety_step)
    chk = mapping_loss(scenario, released, util.support)
    assert chk.loss + chk.error <= eps
    free = optimal_matrix(scenario, eps, Utility("accuracy", mu, util.support))
    assert sol.bound <= free.bound + 1e-9


def test_a_mechanism_out_of_time_says_so_and_never_that_it_failed(monkeypatch) -> None:
    """Issue 33's rule, here for the LP: a time limit is 'did not finish', not 'fails the check'."""
    scenario = _priors(np.random.default_rng(1), 30)
    util = Utility("shares", np.full(30, 1 / 30), np.arange(30, dtype=float))
    with pytest.raises(TimeLimitError, match="did not finish within"):
        optimal_matrix(scenario, 0.5, util, time_limit=1e-6)

    def out_of_time(*args, **kwargs):
        raise TimeLimitError("the mapping LP (30 values) did not finish within 1e-06 s")

    monkeypatch.setattr(mapping_module, "optimal_matrix", out_of_time)
    rows = run_comparison(scenario, [0.5], (REGISTRY["optimal-mapping"], REGISTRY["randomized-response"]),
                          delta=0.0, noise="laplace", utility=util)  # fmt: skip
    skipped = [r for r in rows if isinstance(r, Skipped)]
    assert len(skipped) == 1 and skipped[0].reason.startswith("did not finish")
    assert "fails" not in skipped[0].reason


def test_release_falls_back_to_the_best_checked_mapping(tmp_path, monkeypatch) -> None:
    def out_of_time(*args, **kwargs):
        raise TimeLimitError("the mapping LP (8 values) did not finish within 600 s")

    monkeypatch.setattr(mapping_module, "optimal_matrix", out_of_time)
    out = tmp_path / "wc.csv"
    res = release("adult", secret="marital-status", public="workclass", pairs=[ADULT_PAIR], epsilon=0.5,
                  output=out)  # fmt: skip
    assert res.chosen.mechanism == "randomized-response"  # the most accurate that passed (0.4637)
    fallback = res.report["inputs"]["fallback"]
    assert fallback.startswith("randomized-response used: optimal-mapping did not finish")
    with out.open(newline="") as f:
        assert {r["workclass"] for r in csv.DictReader(f)} <= {m["label"] for m in res.report["mapping"]} | {
            ""
        }


def test_accuracy_alone_collapses_rare_labels_and_shares_keep_them() -> None:
    """The README's claim (Adult, DKW 95% sets, eps 0.5, the missing cells a ninth label): the
    accuracy optimum outputs only 5 of the 9 labels (0.8440); the shares optimum outputs every
    label at its share (0.8024)."""
    from pufferfish.pipeline.calibrate import calibrate_table

    got = {}
    for utility in ("accuracy", "shares"):
        table = calibrate_table(
            "adult", secret="marital-status", public="workclass", pairs=[ADULT_PAIR], epsilon=0.5,
            mechanisms=["optimal-mapping"], utility=utility,
        )  # fmt: skip
        c = next(r for r in table.comparison if r.prior_set is not None and r.prior_set["kind"] == "dkw")
        mu = table.utility.weights
        got[utility] = (round(c.expected_accuracy, 4), mu @ (c.weights / 2.0**52), mu)
    acc, out_acc, mu = got["accuracy"]
    assert acc == 0.844 and int((out_acc > 1e-9).sum()) == 5
    acc, out_sh, mu = got["shares"]
    assert acc == 0.8024 and np.all(out_sh > 0)
    np.testing.assert_allclose(out_sh, mu, atol=1e-9)


def test_a_long_alphabet_prints_a_head_and_a_tail(tmp_path) -> None:
    """Issue 34: 10,000 labels printed 10,056 lines. The priors table shows 35 + 5 values and the
    count of the others; --json keeps every one."""
    rng = np.random.default_rng(2)
    lines = [f"{'a' if rng.random() < 0.5 else 'b'},L{int(rng.integers(0, 200)):03d}" for _ in range(3000)]
    path = tmp_path / "many.csv"
    path.write_text("s,lab\n" + "\n".join(lines) + "\n")
    args = ["calibrate", str(path), "--secret", "s", "--pair", "a,b", "--public", "lab", "--epsilon", "1"]
    args += ["--mechanism", "randomized-response-dp", "--prior-set", "none"]
    res = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    labels = sorted({line.split(",")[1] for line in lines})
    assert len(labels) == 200 and "(160 more values: every one in --json and in" in res.output
    assert all(label in res.output for label in labels[:35] + labels[-5:])
    assert not any(label in res.output for label in labels[35:-5])
    assert len(res.output.splitlines()) < 80 and "…" not in res.output
    full = runner.invoke(app, [*args, "--json"])
    assert [m["label"] for m in json.loads(full.output)["mapping"]] == labels
