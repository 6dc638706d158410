"""Issue 41: a numeric column's missing cells are published as missing, so the check holds the
missing atom (pufferfish.tables.missing): the release's loss is checked here by brute force on
random small tables, the refusals name the rates, and the seed's convention stays available."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pufferfish import DataError, estimate_priors
from pufferfish.pipeline.calibrate import calibrate_table
from pufferfish.pipeline.release import release
from pufferfish.tables.missing import ATOM_ROUNDING, missing_atom
from pufferfish.tables.model import SecretGroup


def _table(seed: int, n: int = 2000) -> pd.DataFrame:
    """Two secrets, a small numeric support shifted by the secret, missing rates 5-26% within a
    ratio 1.3 of each other."""
    rng = np.random.default_rng(seed)
    s = rng.choice(["a", "b"], size=n)
    shift = rng.integers(1, 4)
    x = np.where(s == "a", rng.integers(0, 6, n), rng.integers(shift, 6 + shift, n)).astype(float)
    low = rng.uniform(0.05, 0.2)
    rates = [low, low * rng.uniform(1.0, 1.3)]
    x[rng.random(n) < np.where(s == "a", rates[0], rates[1])] = np.nan
    return pd.DataFrame({"s": s, "x": x})


def _whole_loss(frame: pd.DataFrame, b: float, rates: dict[str, tuple[float, float]] | None = None) -> float:
    """sup over the released values (a grid of y, and 'missing') of |log Q_a - log Q_b|, with
    Q_s(missing) = m_s and Q_s(y) = (1 - m_s) sum_x P_s(x) Laplace(y - x; b); ``rates`` replaces
    each secret's rate (a vertex of the intervals)."""
    ys = np.linspace(-60.0, 70.0, 13001)
    q, atoms = {}, {}
    for s in ("a", "b"):
        g = frame[frame["s"] == s]["x"]
        m = float(g.isna().mean()) if rates is None else rates[s][0]
        present = g.dropna().value_counts(normalize=True)
        if b == 0:  # no noise: the released values are the present ones
            present = present.reindex(sorted(set(frame["x"].dropna())), fill_value=0.0)
            q[s], atoms[s] = (1 - m) * present.to_numpy(), m
            continue
        dens = np.zeros_like(ys)
        for v, p in present.items():
            dens += p * np.exp(-np.abs(ys - float(v)) / b) / (2 * b)
        q[s], atoms[s] = (1 - m) * dens, m
    atom = abs(math.log(atoms["a"]) - math.log(atoms["b"]))
    return max(atom, float(np.max(np.abs(np.log(q["a"]) - np.log(q["b"])))))


@pytest.mark.parametrize("seed", range(8))
def test_every_mechanism_meets_eps_on_the_whole_release_by_brute_force(seed: int, tmp_path: Path) -> None:
    frame = _table(seed)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    eps = 1.0
    table = calibrate_table(src, secret="s", public="x", pairs=["a,b"], epsilon=eps, prior_set="none",
                            mechanisms=["l1", "kantorovich", "relaxed", "optimal"])  # fmt: skip
    atom = table.missing_atom
    assert atom is not None and table.epsilons == (eps - atom.offset - ATOM_ROUNDING,)
    m = {s: float(frame[frame["s"] == s]["x"].isna().mean()) for s in ("a", "b")}
    assert atom.rates == pytest.approx(m, rel=1e-12)
    scales = {c.mechanism: c.scale for c in table.comparison if hasattr(c, "scale")}
    assert set(scales) == {"l1", "kantorovich", "relaxed", "optimal"}
    for mech, b in scales.items():
        assert _whole_loss(frame, b) <= eps + 1e-9, (mech, b)
    # the split costs little: the exact optimum of the whole release is not far below
    b = scales["optimal"]
    assert _whole_loss(frame, b) >= eps - 2 * atom.offset - 1e-6


def test_release_writes_the_missing_cells_and_says_so(tmp_path: Path) -> None:
    frame = _table(3)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    res = release(src, secret="s", public="x", pairs=["a,b"], epsilon=1.5, output=tmp_path / "o.csv",
                  prior_set="none", rng=2, keep_order=True)  # fmt: skip
    got = pd.read_csv(tmp_path / "o.csv", skip_blank_lines=False)
    assert got["x"].isna().tolist() == frame["x"].isna().tolist()  # missing is published as missing
    assert res.rows_missing == int(frame["x"].isna().sum())
    report = res.report
    assert report["missing_atom"]["rates"].keys() == {"a", "b"}
    assert report["guarantee"].startswith("Missing cells of 'x' (published as missing, inside the check)")
    assert _whole_loss(frame, res.chosen.scale) <= 1.5 + 1e-9  # type: ignore[union-attr]


def test_default_set_covers_every_vertex_of_the_rate_intervals(tmp_path: Path) -> None:
    # the rates' Clopper-Pearson intervals and the present values' 97.5% DKW bands: at every
    # vertex of the intervals (the present values at their estimate, a member of the band), the
    # whole release's loss stays <= eps
    rng = np.random.default_rng(11)
    n = 4000
    s = rng.choice(["a", "b"], size=n)
    x = rng.integers(0, 8, n).astype(float)
    x[rng.random(n) < 0.1] = np.nan
    frame = pd.DataFrame({"s": s, "x": x})
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    table = calibrate_table(src, secret="s", public="x", pairs=["a,b"], epsilon=1.0, mechanisms=["optimal"])
    atom = table.missing_atom
    assert atom is not None and atom.interval.startswith("Clopper-Pearson")
    assert table.comparison[0].prior_set["confidence"] == pytest.approx(0.975)  # type: ignore[union-attr]
    b = table.comparison[0].scale  # type: ignore[union-attr]
    for va in atom.bounds["a"]:
        for vb in atom.bounds["b"]:
            assert _whole_loss(frame, b, {"a": (va, va), "b": (vb, vb)}) <= 1.0 + 1e-9


def test_rates_alone_beyond_eps_are_refused_naming_them(tmp_path: Path) -> None:
    frame = pd.DataFrame({"s": ["a"] * 50 + ["b"] * 50, "x": [1.0] * 100})
    frame.loc[:4, "x"] = np.nan  # a: 10% missing
    frame.loc[50:51, "x"] = np.nan  # b: 4% missing
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    out = tmp_path / "o.csv"
    alone = r"missing cells of 'x' alone have privacy loss 0.916291 > epsilon 0.5 "
    with pytest.raises(DataError, match=alone + r"\(a: 10% missing; b: 4% missing\)"):
        release(src, secret="s", public="x", pairs=["a,b"], epsilon=0.5, output=out, prior_set="none")
    assert not out.exists()
    # one side never missing: 'missing' alone reveals the other
    frame.loc[50:51, "x"] = 1.0
    frame.to_csv(src, index=False)
    with pytest.raises(DataError, match="alone have privacy loss inf"):
        calibrate_table(src, secret="s", public="x", pairs=["a,b"], epsilon=5.0, prior_set="none")
    # the papers' convention still calibrates (rows left out), and a release refuses it
    table = calibrate_table(src, secret="s", public="x", pairs=["a,b"], epsilon=0.5, missing="omit")
    assert table.missing_atom is None and table.rows_dropped == 5
    with pytest.raises(DataError, match="missing='omit' leaves the 5 rows with 'x' missing out of the check"):
        release(src, secret="s", public="x", pairs=["a,b"], epsilon=0.5, output=out, missing="omit")


def test_several_columns_take_the_atom_per_column_and_priors_from_is_refused(tmp_path: Path) -> None:
    frame = _table(1).assign(y=lambda f: f["x"].fillna(0.0) * 2)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    # several columns: each numeric column's missing cells are its atom (tests/test_joint_missing.py)
    joint = calibrate_table(src, secret="s", public="x,y", pairs=["a,b"], epsilon=1.0, prior_set="none")
    assert joint.scenario.metric is not None and joint.scenario.metric.missing == (True, False)
    assert any(c.mechanism == "optimal" and getattr(c, "scale", None) for c in joint.comparison)
    with pytest.raises(
        DataError, match="has missing numbers; their check needs the rates of the table released"
    ):
        calibrate_table(src, secret="s", public="x", pairs=["a,b"], epsilon=1.0, priors_from=src)


def test_mutual_information_rows_are_skipped_under_the_atom(tmp_path: Path) -> None:
    frame = _table(2)
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    table = calibrate_table(src, secret="s", public="x", pairs=["a,b"], epsilon=1.5, prior_set="none",
                            mechanisms=["mi-laplace", "optimal"])  # fmt: skip
    (mi,) = [c for c in table.comparison if c.mechanism == "mi-laplace"]
    assert "not eps-MI" in mi.reason  # type: ignore[union-attr]


def test_atom_arithmetic_by_hand() -> None:
    present = [SecretGroup("a", 90, 90.0, 90.0), SecretGroup("b", 80, 80.0, 80.0)]
    absent = {"a": SecretGroup("a", 10, 10.0, 10.0), "b": SecretGroup("b", 20, 20.0, 20.0)}
    atom = missing_atom("x", present, absent, [("a", "b")], ("none", 0.95, None))
    assert atom.atom_loss == pytest.approx(math.log(2.0)) and atom.offset == pytest.approx(
        math.log(0.9 / 0.8)
    )
    assert atom.present_epsilon(1.0) == pytest.approx(1.0 - math.log(0.9 / 0.8) - ATOM_ROUNDING)
    ball = missing_atom("x", present, absent, [("a", "b")], ("l1", 0.95, 0.1))  # |m - m_hat| <= r / 2
    assert ball.bounds == {"a": (pytest.approx(0.05), pytest.approx(0.15)), "b": (pytest.approx(0.15), 0.25)}
    assert ball.atom_loss == pytest.approx(math.log(0.25 / 0.05))
    est = estimate_priors(pd.DataFrame({"s": ["a", "b", "a", "b"], "x": [1.0, None, 2.0, 3.0]}), secret="s",
                          public="x", pairs=[("a", "b")], missing="value")  # fmt: skip
    assert est.missing_cells == 1 and est.missing_groups == (SecretGroup("b", 1, 1.0, 1.0),)


def test_adult_rates_of_the_module_docstring() -> None:
    # the module docstring's example: workclass missing at 4.14% (Married-civ-spouse) and 7.66%
    # (Never-married) would cost c = 0.037 of eps, and 'missing' alone has loss 0.615
    est = estimate_priors("adult", secret="marital-status", public="workclass",
                          pairs=[("Married-civ-spouse", "Never-married")], missing="omit")  # fmt: skip
    absent = {s: SecretGroup(s, n, float(n), float(n)) for s, n in (("Married-civ-spouse", 927),
                                                                   ("Never-married", 1235))}  # fmt: skip
    rates = {g.secret: absent[g.secret].weight / (absent[g.secret].weight + g.weight) for g in est.groups}
    assert (
        round(100 * rates["Married-civ-spouse"], 2) == 4.14 and round(100 * rates["Never-married"], 2) == 7.66
    )
    atom = missing_atom("workclass", est.groups, absent, est.scenario.pairs, ("none", 0.95, None))
    assert round(atom.offset, 3) == 0.037 and round(atom.atom_loss, 3) == 0.615
