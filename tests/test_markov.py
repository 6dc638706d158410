"""Issue 30: pufferfish privacy for a count on a Markov chain.

Reference values: the figures of Song, Wang and Chaudhuri's MATLAB code (SIGMOD 2017, arXiv
1603.03977; run_synthetic.m, T = 100, eps 1, binary chain with flip probability f, stationary
start), reproduced independently in issue 30: f = 0.1: MQMExact 31.7378, MQMApprox 49.2202, group
DP 100; f = 0.4: MQMExact 3.5718, MQMApprox 11.5368, GK16 3.8873. Exact optimum (issue 30, an
independent implementation): 8.6404 (f = 0.1), 1.4673 (f = 0.4).
"""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pufferfish.calibration import Calibration, compare
from pufferfish.cli.app import app
from pufferfish.markov import CountModel, MarkovChain, count_priors, count_scenario

runner = CliRunner()


def _flip(f: float) -> MarkovChain:
    return MarkovChain([[1 - f, f], [f, 1 - f]])


def _scales(model: CountModel, names: list[str], eps: float = 1.0) -> dict[str, float]:
    out = {}
    for r in compare(count_scenario(model), eps, names):
        assert isinstance(r, Calibration), r
        assert r.checked_loss is not None and r.checked_loss + r.check_error_bound <= eps  # checked exactly
        out[r.mechanism] = r.scale
    return out


@pytest.mark.parametrize(
    ("f", "expected"),
    [
        (0.1, {"mqm-exact": 31.7378, "mqm-approx": 49.2202, "group-dp": 100.0, "optimal": 8.6404}),
        (
            0.4,
            {
                "mqm-exact": 3.5718,
                "mqm-approx": 11.5368,
                "gk16": 3.8873,
                "optimal": 1.4673,
                "group-dp": 100.0,
            },
        ),
    ],
)
def test_reference_values_of_the_matlab_code_and_the_exact_optimum(f, expected) -> None:
    got = _scales(CountModel((_flip(f),), 100, "1"), list(expected))
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=5e-5), name


def test_gk16_refuses_a_chain_whose_gamma_matrix_is_too_large() -> None:
    (row,) = compare(count_scenario(CountModel((_flip(0.1),), 100, "1")), 1.0, ["gk16"])
    assert "spectral norm of Gamma below 1" in row.reason  # type: ignore[union-attr]


@st.composite
def chains(draw: st.DrawFn, max_states: int = 4) -> MarkovChain:
    k = draw(st.integers(2, max_states))
    rows = [draw(st.lists(st.floats(0.05, 1.0), min_size=k, max_size=k)) for _ in range(k)]
    m = np.array(rows)
    m = m / m.sum(axis=1, keepdims=True)
    stationary = draw(st.booleans())
    if stationary:
        return MarkovChain(m)
    q0 = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=k, max_size=k)))
    return MarkovChain(m, q0 / q0.sum())


@settings(max_examples=25, deadline=None)
@given(chains(), st.integers(2, 10))
def test_count_priors_equal_brute_force_enumeration(chain, length) -> None:
    k = chain.k
    length = min(length, {2: 10, 3: 7}.get(k, 6))  # T <= 10 for two states (issue 30), k^T sequences
    got = count_priors(chain, length, chain.states[-1])
    brute: dict[tuple[int, int], np.ndarray] = {}
    for seq in itertools.product(range(k), repeat=length):
        p = chain.initial_distribution[seq[0]] * np.prod(
            [chain.transition[seq[t], seq[t + 1]] for t in range(length - 1)]
        )
        c = sum(1 for x in seq if x == k - 1)
        for i, a in enumerate(seq):
            brute.setdefault((i, a), np.zeros(length + 1))[c] += p
    assert set(got) == {key for key, v in brute.items() if v.sum() > 0}
    for key, prior in got.items():
        expected = brute[key] / brute[key].sum()
        assert np.allclose(prior.pmf, expected, rtol=1e-12, atol=1e-15)
        assert prior.log_error < 1e-9


@settings(max_examples=15, deadline=None)
@given(chains(), st.integers(2, 60), st.sampled_from([0.5, 1.0, 2.0]))
def test_optimal_below_mqm_exact_below_mqm_approx_and_group_dp(chain, length, eps) -> None:
    names = ["optimal", "mqm-exact", "group-dp"] + (["mqm-approx"] if chain.stationary else [])
    got = _scales(CountModel((chain,), length, chain.states[-1]), names, eps)
    assert got["optimal"] <= got["mqm-exact"] * (1 + 1e-9)
    assert got["optimal"] <= got["group-dp"] * (1 + 1e-9)
    assert got["mqm-exact"] <= got["group-dp"] * (1 + 1e-12)  # the trivial quilt
    if "mqm-approx" in got:
        assert got["mqm-exact"] <= got["mqm-approx"] * (1 + 1e-9)


@settings(max_examples=15, deadline=None)
@given(st.floats(0.02, 0.98), st.floats(0.02, 0.98), st.integers(2, 40))
def test_a_time_reversible_chain_checks_half_the_times(p01, p10, length) -> None:
    # a stationary binary chain has the law of its time reversal: P(C | X_i) = P(C | X_{T-1-i})
    chain = MarkovChain([[1 - p01, p01], [p10, 1 - p10]])
    assert chain.time_reversible and chain.start_log_error > 0
    priors = count_priors(chain, length, "1")
    for (i, a), prior in priors.items():
        mirror = priors[(length - 1 - i, a)]
        assert prior.log_pmf is not None and mirror.log_pmf is not None
        finite = np.isfinite(prior.log_pmf)
        assert np.array_equal(finite, np.isfinite(mirror.log_pmf))
        assert np.abs(prior.log_pmf[finite] - mirror.log_pmf[finite]).max() <= 2 * prior.log_error
    model = CountModel((chain,), length, "1")
    assert model.mirrored and list(model.checked_times) == list(range((length + 1) // 2))
    assert {int(a.split("]")[0][2:]) for a, _ in count_scenario(model).pairs} == set(model.checked_times)
    # the same chain with its start given as a vector is checked at every time: same scale
    every = CountModel((MarkovChain(chain.transition, chain.initial_distribution),), length, "1")
    assert not every.mirrored
    half, whole = _scales(model, ["optimal"]), _scales(every, ["optimal"])
    assert half["optimal"] == pytest.approx(whole["optimal"], rel=1e-8)


def test_only_binary_or_exactly_symmetric_stationary_chains_are_mirrored() -> None:
    third = [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    assert MarkovChain(third).time_reversible
    assert MarkovChain(third).initial_distribution.tolist() == [1 / 3] * 3
    drifting = [[0.6, 0.3, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]]
    assert not MarkovChain(drifting).time_reversible
    assert not MarkovChain(third, [0.2, 0.3, 0.5]).time_reversible
    assert not CountModel((MarkovChain(third, "any"),), 10, "2").mirrored


def test_frequency_scales_are_count_scales_over_t() -> None:
    count = _scales(CountModel((_flip(0.3),), 40, "1"), ["optimal", "mqm-exact"])
    freq = _scales(CountModel((_flip(0.3),), 40, "1", "frequency"), ["optimal", "mqm-exact"])
    assert freq["mqm-exact"] == pytest.approx(count["mqm-exact"] / 40, rel=1e-12)
    assert freq["optimal"] == pytest.approx(count["optimal"] / 40, rel=1e-6)


def test_a_class_of_chains_takes_the_worst() -> None:
    one = _scales(CountModel((_flip(0.2),), 30, "1"), ["optimal", "mqm-exact"])
    two = _scales(CountModel((_flip(0.3),), 30, "1"), ["optimal", "mqm-exact"])
    both = _scales(CountModel((_flip(0.2), _flip(0.3)), 30, "1"), ["optimal", "mqm-exact"])
    for name in ("optimal", "mqm-exact"):
        assert both[name] == pytest.approx(max(one[name], two[name]), rel=1e-6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"transition": [[0.5, 0.5, 0.0]]}, "square matrix, got shape (1, 3)"),
        ({"transition": [[1.0]]}, "at least 2 states, got 1"),
        ({"transition": [[0.5, 0.6], [0.5, 0.5]]}, "row 0 sums to 1.1"),
        ({"transition": [[1.2, -0.2], [0.5, 0.5]]}, "must be >= 0, got -0.2 at row 0, column 1"),
        ({"transition": [[float("nan"), 1.0], [0.5, 0.5]]}, "must be finite"),
        ({"transition": [[1.0, 0.0], [0.0, 1.0]]}, "several closed classes"),
        ({"transition": [[0.9, 0.1], [0.1, 0.9]], "initial": [0.2, 0.2]}, "initial must sum to 1"),
        ({"transition": [[0.9, 0.1], [0.1, 0.9]], "initial": "some"}, "initial must be .stationary., .any."),
        ({"transition": "0.9,x;0.1,0.9"}, "transition entry 'x' in row 0 is not a number"),
        ({"transition": [[0.9, 0.1], [0.1, 0.9]], "states": ["a", "a"]}, "states must be 2 distinct names"),
    ],
)
def test_bad_chains_name_the_argument(args, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MarkovChain(**args)


def test_bad_models_name_the_argument() -> None:
    chain = _flip(0.2)
    with pytest.raises(ValueError, match="length must be an integer >= 1, got 0"):
        CountModel((chain,), 0, "1")
    with pytest.raises(ValueError, match=r"target must be one of the states \['0', '1'\], got 'z'"):
        CountModel((chain,), 10, "z")
    with pytest.raises(ValueError, match="query must be one of count, frequency, histogram, got 'median'"):
        CountModel((chain,), 10, "1", "median")
    three = MarkovChain([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    with pytest.raises(ValueError, match="'histogram' is available for two states, got 3"):
        CountModel((three,), 10, "1", "histogram")
    with pytest.raises(ValueError, match="checked up to length 1,000"):
        CountModel((chain,), 1001, "1", "histogram")


def test_histogram_of_a_binary_chain_against_a_direct_sum() -> None:
    # each bar (visits to 0, visits to 1) gets Laplace(b); the loss is the sup over the vertices of
    # the count grid (pufferfish.loss.product), computed here directly from all 2^6 sequences
    chain = MarkovChain([[0.8, 0.2], [0.35, 0.65]], [0.3, 0.7])
    length = 6
    model = CountModel((chain,), length, "1", "histogram")
    names = ["group-dp", "gk16", "mqm-exact", "optimal"]
    rows = {r.mechanism: r for r in compare(count_scenario(model), 1.0, names)}
    assert "not a histogram" in rows["gk16"].reason  # type: ignore[union-attr]
    count = _scales(CountModel((chain,), length, "1"), ["mqm-exact"])
    assert rows["group-dp"].scale == 2 * length  # type: ignore[union-attr]
    assert rows["mqm-exact"].scale == pytest.approx(2 * count["mqm-exact"], rel=1e-12)  # type: ignore[union-attr]
    best = rows["optimal"]
    assert isinstance(best, Calibration) and best.scale <= rows["mqm-exact"].scale  # type: ignore[union-attr]
    joint = np.zeros((length, 2, length + 1))
    for seq in itertools.product(range(2), repeat=length):
        p = chain.initial_distribution[seq[0]] * np.prod(
            [chain.transition[seq[t], seq[t + 1]] for t in range(5)]
        )
        for i, a in enumerate(seq):
            joint[i, a, sum(seq)] += p
    c = np.arange(length + 1.0)
    u, v = np.meshgrid(c, c, indexing="ij")  # vertices: released visits to 0 and to 1

    def loss(b: float) -> float:
        kernel = np.exp(-(np.abs(u[..., None] - (length - c)) + np.abs(v[..., None] - c)) / b)
        worst = 0.0
        for i in range(length):
            dens = [kernel @ (joint[i, a] / joint[i, a].sum()) for a in range(2)]
            worst = max(worst, float(np.abs(np.log(dens[0]) - np.log(dens[1])).max()))
        return worst

    assert loss(best.scale) <= 1.0 + 1e-9 and loss(best.scale * 0.999) > 1.0
    assert best.checked_loss == pytest.approx(loss(best.scale), rel=1e-9)


def test_release_of_a_frequency_draws_t_times_its_scale_on_the_counts(tmp_path, monkeypatch) -> None:
    # the calibrated scale of a frequency is in shares of T; its noise is drawn on the counts, so
    # the counts must get T times it (a T-times-too-small noise was released before this test)
    import pufferfish.markov.release as rel

    drawn: list[float] = []
    sampler = rel.add_laplace

    def spy(values, scale, rng=None):
        drawn.append(scale)
        return sampler(values, scale, rng=rng)

    monkeypatch.setattr(rel, "add_laplace", spy)
    src = tmp_path / "activity.csv"
    _activity_csv(src)
    request = rel.SeriesRequest(
        src, "person", "time", "activity", "run", 1.0, query="frequency", prior_set="none"
    )
    out = rel.release_series(request, tmp_path / "f.csv", rng=2)
    assert sorted(out.scales) == [12, 13, 14] and len(drawn) == 3
    for t, count_scale in zip(sorted(out.scales), drawn, strict=True):
        calibrated, used = out.scales[t]
        assert count_scale >= calibrated * t and count_scale == pytest.approx(calibrated * t, rel=1e-12)
        assert used >= calibrated
    assert (tmp_path / "f.csv").read_text().startswith("id,T,frequency_run\n")


def test_cli_histogram_calibrate_and_release(tmp_path) -> None:
    res = runner.invoke(app, ["markov", "calibrate", "--transition", "0.9,0.1;0.1,0.9", "--length", "40",
                              "--epsilon", "1", "--query", "histogram", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = {r["mechanism"]: r for r in json.loads(res.stdout)["results"]}
    assert rows["group-dp"]["scale"] == 80.0 and rows["optimal"]["checked_loss"] <= 1.0
    src = tmp_path / "two.csv"
    gen = np.random.default_rng(5)
    lines = ["who,step,state"] + [f"w{n},{t},{'on' if gen.random() < 0.4 else 'off'}" for n in range(20)
                                  for t in range(15)]  # fmt: skip
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "hist.csv"
    res = runner.invoke(app, ["markov", "release", str(src), "--id", "who", "--time", "step", "--state",
                              "state", "--target-state", "on", "--epsilon", "1", "--query", "histogram",
                              "--prior-set", "none", "--output", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    text = out.read_text().splitlines()
    assert text[0] == "id,T,count_off,count_on" and len(text) == 21
    three = tmp_path / "three.csv"
    three.write_text("i,t,s\n" + "".join(f"a,{t},{'xyz'[t % 3]}\n" for t in range(9)))
    res = runner.invoke(app, ["markov", "calibrate", str(three), "--id", "i", "--time", "t", "--state", "s",
                              "--target-state", "x", "--epsilon", "1", "--query", "histogram"])  # fmt: skip
    assert res.exit_code == 1 and "available for two states, got 3" in res.output


def test_cli_markov_calibrate_prints_every_mechanism_checked() -> None:
    res = runner.invoke(
        app,
        [
            "markov",
            "calibrate",
            "--transition",
            "0.6,0.4;0.4,0.6",
            "--length",
            "100",
            "--epsilon",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = {r["mechanism"]: r for r in json.loads(res.output)["results"]}
    assert rows["optimal"]["scale"] == pytest.approx(1.4673, abs=5e-5)
    assert rows["gk16"]["scale"] == pytest.approx(3.8873, abs=5e-5)
    assert rows["mqm-exact"]["pair"] == ["X[2]=0", "X[2]=1"]
    assert all(r["checked_loss"] <= 1.0 for r in rows.values() if r["scale"] is not None)
    table = runner.invoke(
        app, ["markov", "calibrate", "--transition", "0.9,0.1;0.1,0.9", "--length", "100", "--epsilon", "1",
              "--states", "rest,walk", "--target-state", "walk"],
    )  # fmt: skip
    assert table.exit_code == 0, table.output
    text = " ".join(table.output.replace("│", " ").split())
    assert "query: count of state 'walk'" in text and "mqm-exact" in text and "]=rest vs X[" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--transition", "0.9,0.2;0.1,0.9"], "transition rows must sum to 1"),
        (["--transition", "0.9,0.1;0.1,0.9", "--initial", "0.5,x"], "--initial must be 'stationary'"),
        (["--transition", "0.9,0.1;0.1,0.9", "--target-state", "7"], "target must be one of the states"),
        (["--transition", "0.9,0.1;0.1,0.9", "--mechanism", "nope"], "mechanism must be one of"),
    ],
)
def test_cli_markov_bad_input_is_one_line(args, message) -> None:
    res = runner.invoke(app, ["markov", "calibrate", "--length", "20", "--epsilon", "1", *args])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1 and message in lines[0], res.output


def _activity_csv(path, ids: int = 30, seed: int = 3) -> None:
    gen = np.random.default_rng(seed)
    m = np.array([[0.8, 0.15, 0.05], [0.2, 0.7, 0.1], [0.1, 0.3, 0.6]])
    labels = ["rest", "walk", "run"]
    rows = ["person,time,activity"]
    for pid in range(ids):
        s = int(gen.choice(3, p=[0.4, 0.4, 0.2]))
        for t in range(int(gen.integers(12, 15))):
            rows.append(f"p{pid:03d},{t},{labels[s]}")
            s = int(gen.choice(3, p=m[s]))
    body = rows[1:]
    gen.shuffle(body)  # row order does not matter: the time column orders each series
    path.write_text("\n".join([rows[0], *body]) + "\n")


def test_chain_estimated_from_a_table_and_its_confidence_chains(tmp_path) -> None:
    from pufferfish.markov.estimate import confidence_chains, estimated_chain, read_series, row_radii

    src = tmp_path / "activity.csv"
    _activity_csv(src)
    series = read_series(src, id_column="person", time_column="time", state_column="activity")
    assert series.states == ("rest", "run", "walk") and len(series.ids) == 30
    assert int(series.transitions.sum()) == int(series.lengths.sum()) - 30  # T - 1 steps per id
    assert np.array_equal(series.visits.sum(axis=1), series.lengths)
    chain = estimated_chain(series)
    assert np.allclose(chain.transition.sum(axis=1), 1.0)
    n = series.transitions.sum(axis=1)
    radii = row_radii(series, 0.95)
    assert np.allclose(radii, np.sqrt(2 * (np.log(2**3 - 2) + np.log(3 / 0.05)) / n))
    chains, info = confidence_chains(series, chain, 0.95)
    assert chains[0] is chain and info["certified"] is False and len(chains) == info["chains_checked"]
    for c in chains[1:]:  # every listed chain is inside the set: each row within its radius
        assert np.all(np.abs(c.transition - chain.transition).sum(axis=1) <= radii + 1e-12)


def test_cli_markov_release_of_a_table(tmp_path) -> None:
    src = tmp_path / "activity.csv"
    _activity_csv(src)
    out = tmp_path / "released.csv"
    args = ["markov", "release", str(src), "--id", "person", "--time", "time", "--state", "activity",
            "--target-state", "run", "--epsilon", "1", "--prior-set", "none",
            "--output", str(out)]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "id,T,count_run" and len(lines) == 31
    report = json.loads((tmp_path / "released.report.json").read_text())
    assert report["mechanism"] == "optimal" and report["noise"]["secure"] is True
    for t, rows in report["results"].items():
        (row,) = rows
        assert row["checked_loss"] + row["check_error_bound"] <= 1.0
        assert report["scales"][t]["drawn"] >= report["scales"][t]["calibrated"]
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "--force" in again.output  # nothing overwritten
    same = runner.invoke(app, [*args[:-2], "--output", str(src), "--force"])
    assert same.exit_code == 1 and "input" in same.output
    assert src.read_text().startswith("person,time,activity")


def test_audit_of_a_scale_equals_a_direct_sum_over_every_sequence() -> None:
    # independent of count_priors and of the check's prefix sums: enumerate the 3^7 sequences,
    # form each secret's release density at every count (the loss's maximum is on the support)
    from pufferfish.markov.audit import audit_scale

    chain = MarkovChain([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.05, 0.15, 0.8]], [0.2, 0.5, 0.3])
    length, scale = 7, 0.7
    joint = np.zeros((length, 3, length + 1))
    for seq in itertools.product(range(3), repeat=length):
        p = chain.initial_distribution[seq[0]] * np.prod(
            [chain.transition[seq[t], seq[t + 1]] for t in range(6)]
        )
        c = seq.count(2)
        for i, a in enumerate(seq):
            joint[i, a, c] += p
    y = np.arange(length + 1.0)
    kernel = np.exp(-np.abs(y[:, None] - y[None, :]) / scale)  # (released value, count)
    worst = (0.0, -1)
    for i in range(length):
        dens = [kernel @ (joint[i, a] / joint[i, a].sum()) for a in range(3)]
        for a, b in itertools.combinations(range(3), 2):
            worst = max(worst, (float(np.abs(np.log(dens[a]) - np.log(dens[b])).max()), i))
    got = audit_scale(CountModel((chain,), length, "2"), scale)
    assert got.loss == pytest.approx(worst[0], rel=1e-9) and got.worst.time == worst[1]
    assert got.certified and got.epsilon_dp == pytest.approx(1 / 0.7)
    assert got.satisfies(got.loss + 2 * got.error_bound) and not got.satisfies(got.loss - 1e-6)


def test_json_rows_say_the_worst_time_and_what_is_certified(tmp_path) -> None:
    base = ["markov", "calibrate", "--length", "12", "--epsilon", "1", "--json"]
    one = runner.invoke(app, [*base, "--transition", "0.8,0.2;0.3,0.7", "--mechanism", "optimal,gk16"])
    rows = {r["mechanism"]: r for r in json.loads(one.stdout)["results"]}
    assert rows["optimal"]["certified"] and rows["optimal"]["worst"]["pair"] == ["0", "1"]
    assert f"X[{rows['optimal']['worst']['time']}]=0" == rows["optimal"]["pair"][0]
    assert rows["gk16"]["worst"] is None or rows["gk16"]["certified"] is True
    cls = runner.invoke(
        app, [*base, "--interval", "0.2,0.3", "--grid", "2", "--mechanism", "optimal,mqm-approx"]
    )
    rows = {r["mechanism"]: r for r in json.loads(cls.stdout)["results"]}
    assert rows["mqm-approx"]["certified"] and not rows["optimal"]["certified"]
    assert "NOT certified" in rows["optimal"]["note"]
    src = tmp_path / "activity.csv"
    _activity_csv(src)
    data = runner.invoke(app, ["markov", "calibrate", str(src), "--id", "person", "--time", "time", "--state",
                               "activity", "--target-state", "run", "--epsilon", "1",
                               "--mechanism", "optimal,group-dp", "--json"])  # fmt: skip
    rows = {r["mechanism"]: r for r in json.loads(data.stdout)["results"]["14"]}
    assert rows["group-dp"]["certified"] and not rows["optimal"]["certified"]


def test_cli_audit_of_a_differentially_private_scale(tmp_path) -> None:
    # Laplace(1) is eps = 1 DP for a count; on a chain with flip 0.1 it leaks far more
    base = ["markov", "calibrate", "--transition", "0.9,0.1;0.1,0.9", "--length", "100"]
    res = runner.invoke(app, [*base, "--scale", "1", "--epsilon", "1", "--json"])
    assert res.exit_code == 0, res.output
    audit = json.loads(res.stdout)["audit"]["100"]
    assert audit["loss"] > 4.0 and audit["epsilon_dp"] == 1.0 and audit["satisfies"] == {"1.0": False}
    optimal = _scales(CountModel((_flip(0.1),), 100, "1"), ["optimal"])["optimal"]
    res = runner.invoke(app, [*base, "--scale", repr(optimal), "--epsilon", "1", "--json"])
    assert json.loads(res.stdout)["audit"]["100"]["satisfies"] == {"1.0": True}
    text = runner.invoke(app, [*base, "--scale", "1"])
    assert text.exit_code == 0 and "exact pufferfish loss 4.4" in text.output
    refused = runner.invoke(app, [*base, "--scale", "1", "--mechanism", "optimal"])
    assert refused.exit_code == 1 and "--scale audits a given scale" in refused.output
    src = tmp_path / "activity.csv"
    _activity_csv(src)
    data = ["markov", "calibrate", str(src), "--id", "person", "--time", "time", "--state", "activity",
            "--target-state", "run", "--scale", "2", "--json"]  # fmt: skip
    res = runner.invoke(app, data)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["chains_checked"] > 1 and all(a["scale"] == 2.0 for a in out["audit"].values())
    assert list(out["audit"]) == ["14"]  # the longest series by default (lengths 12 to 14)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["p,t,s", "a,1,x", "a,1,y", "a,2,x"], "id 'a' has two rows at time 1"),
        (["p,t,s", "a,1,x", "a,2,x"], "holds 1 state(s)"),
        (["p,t,s", "a,1,x", "b,1,y"], "no id has two consecutive steps"),
        (["p,t,s", "a,1,x", "a,2,y"], "state 'y' is never followed by another step"),
    ],
)
def test_tables_that_do_not_determine_a_chain_are_one_line(tmp_path, rows, message) -> None:
    src = tmp_path / "bad.csv"
    src.write_text("\n".join(rows) + "\n")
    res = runner.invoke(
        app, ["markov", "calibrate", str(src), "--id", "p", "--time", "t", "--state", "s",
              "--target-state", "x", "--epsilon", "1"],
    )  # fmt: skip
    lines = res.output.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1 and message in lines[0], res.output


def test_interval_class_certifies_mqm_approx_and_checks_the_rest_on_a_grid() -> None:
    from pufferfish.markov.chain import binary_interval_chains, interval_class_bounds

    assert interval_class_bounds(0.1, 0.2) == pytest.approx((0.2, 1 / 3))
    # the bounds are the worst over a fine grid of the class
    grid = np.linspace(0.1, 0.2, 21)
    gaps = [1 - abs(1 - a - b) for a in grid for b in grid]
    pis = [min(a, b) / (a + b) for a in grid for b in grid]
    assert min(gaps) == pytest.approx(0.2) and min(pis) == pytest.approx(1 / 3)
    res = runner.invoke(
        app, ["markov", "calibrate", "--interval", "0.1,0.2", "--grid", "3", "--length", "50",
              "--epsilon", "1", "--mechanism", "optimal,mqm-approx,mqm-exact", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["model"]["interval"] == [0.1, 0.2] and len(out["model"]["chains"]) == 9
    assert any("mqm-approx" in c for c in out["certified_over_class"])
    assert not any("optimal" in c for c in out["certified_over_class"])
    rows = {r["mechanism"]: r for r in out["results"]}
    single = _scales(CountModel(binary_interval_chains(0.1, 0.2, 3), 50, "1"), ["optimal"])
    assert rows["optimal"]["scale"] == pytest.approx(single["optimal"])
    text = runner.invoke(
        app, ["markov", "calibrate", "--interval", "0.1,0.2", "--grid", "3", "--length", "50",
              "--epsilon", "1", "--mechanism", "optimal"],
    )  # fmt: skip
    words = " ".join(text.output.split())
    assert "NOT certified: checked on the 9 chains" in words and "X[i]=a for every time i" in words


def test_every_start_is_bounded_by_mqm_exact_and_checked_on_starts_for_the_rest() -> None:
    chain = MarkovChain("0.9,0.1;0.2,0.8", "any")
    assert chain.any_start and not chain.stationary and len(chain.starts()) == 3
    model = CountModel((chain,), 30, "1")
    any_scales = _scales(model, ["optimal", "mqm-exact", "group-dp"])
    # MQMExact over every start is at least MQMExact for each start it covers
    for start in ([1.0, 0.0], [0.0, 1.0], [0.5, 0.5], "stationary"):
        one = _scales(CountModel((MarkovChain("0.9,0.1;0.2,0.8", start),), 30, "1"), ["mqm-exact"])
        assert one["mqm-exact"] <= any_scales["mqm-exact"] * (1 + 1e-12)
    (skipped,) = compare(count_scenario(model), 1.0, ["mqm-approx"])
    assert "stationary chain" in skipped.reason  # type: ignore[union-attr]
    res = runner.invoke(
        app, ["markov", "calibrate", "--transition", "0.9,0.1;0.2,0.8", "--initial", "any", "--length", "30",
              "--epsilon", "1", "--mechanism", "optimal,mqm-exact"],
    )  # fmt: skip
    words = " ".join(res.output.split())
    assert (
        res.exit_code == 0
        and "X_0: any distribution" in words
        and "NOT certified: checked on 3 starts" in words
    )


def test_cli_markov_report_shows_the_payload_numbers(tmp_path) -> None:
    import re as _re

    page_path = tmp_path / "chain.html"
    args = ["markov", "calibrate", "--transition", "0.6,0.4;0.4,0.6", "--length", "60", "--epsilon", "1",
            "--mechanism", "gk16,mqm-exact,optimal", "--report", str(page_path)]  # fmt: skip
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    page = page_path.read_text()
    for fig in ("fig-scales", "fig-priors", "fig-length", "mechanisms", "transition", "report-json"):
        assert f'id="{fig}"' in page
    # issue 46: a series' report draws the series' figures only, the scales' bars from 0
    assert _re.findall(r'<figure id="([^"]+)"', page) == ["fig-scales", "fig-length", "fig-priors"]
    for other in ("Kantorovich", "Randomized mapping", "Labels in the table", "fig-release"):
        assert other not in page, other
    assert "(log scale)" not in page
    assert "3 lengths: 10, 20, 50" not in page and "4 lengths: 10, 20, 50, 60" in page
    payload = json.loads(_re.search(r'id="report-json">(.*?)</script>', page, _re.S).group(1))  # type: ignore[union-attr]
    assert payload == json.loads(res.output)
    for row in payload["results"]:
        shown = _re.search(rf'data-key="{row["mechanism"]}:scale">([^<]*)<', page).group(1)  # type: ignore[union-attr]
        assert float(shown) == pytest.approx(row["scale"], rel=1e-5)
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "--force" in again.output
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    bad = runner.invoke(
        app, ["markov", "calibrate", str(page_path), "--id", "a", "--time", "b", "--state", "c",
              "--target-state", "x", "--epsilon", "1", "--report", str(tmp_path / "x.txt")],
    )  # fmt: skip
    assert bad.exit_code == 1 and "report must be an .html file" in bad.output


def test_reports_of_a_table_calibration_and_release(tmp_path) -> None:
    src = tmp_path / "activity.csv"
    _activity_csv(src)
    columns = ["--id", "person", "--time", "time", "--state", "activity", "--target-state", "run",
               "--epsilon", "1", "--prior-set", "none"]  # fmt: skip
    page = tmp_path / "cal.html"
    res = runner.invoke(app, ["markov", "calibrate", str(src), *columns, "--report", str(page), "--json"])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert 'id="fig-priors"' in text and 'id="fig-length"' not in text  # one length: the longest
    assert "T = 14" in text
    out, html_page = tmp_path / "rel.csv", tmp_path / "rel.html"
    res = runner.invoke(app, ["markov", "release", str(src), *columns, "--output", str(out),
                              "--report", str(html_page)])  # fmt: skip
    assert res.exit_code == 0, res.output
    text = html_page.read_text()
    assert 'id="fig-length"' in text and "3 lengths: 12, 13, 14" in text  # every length released
    report = json.loads((tmp_path / "rel.report.json").read_text())
    for t in ("12", "13", "14"):
        (row,) = report["results"][t]
        shown = re.search(r'data-key="optimal:scale">([^<]*)<', text)
        assert shown is not None and row["checked_loss"] + row["check_error_bound"] <= 1.0
    same = runner.invoke(app, ["markov", "release", str(src), *columns, "--output", str(tmp_path / "b.csv"),
                               "--report", str(src)])  # fmt: skip
    assert same.exit_code == 1 and "report must be an .html file" in same.output


def test_mvad_example_of_the_docs() -> None:
    # docs/markov.rst: the shipped school-to-work sequences, joblessness counted over T = 72 months
    args = ["markov", "calibrate", "mvad", "--id", "id", "--time", "month", "--state", "activity",
            "--target-state", "joblessness", "--epsilon", "1", "--prior-set", "none",
            "--mechanism", "optimal,group-dp", "--json"]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["data"]["ids"] == 712 and out["data"]["rows"] == 51264
    rows = {r["mechanism"]: r for r in out["results"]["72"]}
    assert rows["group-dp"]["scale"] == 72.0
    assert rows["optimal"]["scale"] == pytest.approx(24.1717, abs=5e-5)
    assert rows["optimal"]["checked_loss"] + rows["optimal"]["check_error_bound"] <= 1.0
    assert rows["optimal"]["pair"] == ["X[36]=HE", "X[36]=joblessness"]


def test_histogram_audit_at_twice_the_scale_equals_the_count_audit() -> None:
    # two bars with Laplace(2b) each are two noisy copies of the count; at the vertices u = v the
    # product kernel is the count's Laplace(b) kernel and elsewhere smaller: the 2-D check
    # (product contraction) and the 1-D check (prefix sums) agree on the same loss
    from pufferfish.markov.audit import audit_scale

    for chain in (_flip(0.1), MarkovChain([[0.7, 0.3], [0.45, 0.55]], [0.9, 0.1])):
        for b in (0.8, 3.0):
            count = audit_scale(CountModel((chain,), 30, "1"), b)
            hist = audit_scale(CountModel((chain,), 30, "1", "histogram"), 2 * b)
            assert hist.loss == pytest.approx(count.loss, rel=1e-9)
            assert hist.worst.time in (count.worst.time, 29 - count.worst.time)
            assert len(hist.worst.worst_y) == 2
    with pytest.raises(ValueError, match="scale must be > 0 to audit a histogram"):
        audit_scale(CountModel((_flip(0.1),), 5, "1", "histogram"), 0.0)


def test_histogram_optimum_of_the_reference_chain_is_twice_the_count() -> None:
    # README and docs/markov.rst: f = 0.1, T = 100, eps 1: 17.2809 = 2 x 8.6404
    got = _scales(CountModel((_flip(0.1),), 100, "1", "histogram"), ["optimal"])
    assert got["optimal"] == pytest.approx(17.2809, abs=1e-4)


def _step_reference(table: np.ndarray, log_m: np.ndarray) -> np.ndarray:
    """The table step as first written: every column, a logsumexp by the largest term."""
    terms = table[:, None, :] + log_m[:, :, None]
    top = terms.max(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.log(np.exp(terms - top).sum(axis=0)) + top
    out[top == -np.inf] = -np.inf
    return out


def test_the_table_step_on_the_reachable_counts_equals_the_step_on_every_count() -> None:
    from pufferfish.markov import counts

    rng = np.random.default_rng(4)
    for k in (1, 2, 3, 5):
        for _ in range(20):
            with np.errstate(divide="ignore"):
                log_m = np.log(rng.dirichlet(np.ones(k), size=k) * (rng.random((k, k)) < 0.8))
                table = np.log(rng.random((k, 40)))
            table[:, rng.integers(0, 41) :] = -np.inf
            table[rng.random((k, 40)) < 0.2] = -np.inf
            assert np.array_equal(counts._step(table, log_m), _step_reference(table, log_m))


@pytest.mark.parametrize(
    "matrix", [[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.3, 0.2], [0.0, 0.6, 0.4], [0.3, 0.3, 0.4]]]
)
def test_count_priors_on_worker_threads_equal_those_of_one_thread(matrix, monkeypatch) -> None:
    from pufferfish.markov import counts

    chain = MarkovChain(np.array(matrix), "stationary")
    monkeypatch.setattr(counts, "_THREADS_FROM", 1)
    threaded = count_priors(chain, 240, chain.states[-1])
    monkeypatch.setattr(counts, "_THREADS_FROM", 10**9)
    single = count_priors(chain, 240, chain.states[-1])
    assert threaded.keys() == single.keys()
    for key, p in single.items():
        assert np.array_equal(threaded[key].log_pmf, p.log_pmf) and threaded[key].log_error == p.log_error


def test_the_check_of_many_pairs_is_the_same_in_chunks_on_two_threads(monkeypatch) -> None:
    from pufferfish.loss import exact

    chain = MarkovChain(np.array([[0.8, 0.2], [0.3, 0.7]]), "stationary")
    scenario = count_scenario(CountModel((chain,), 300, "1"))
    for scale in (0.0, 3.0, 40.0):
        monkeypatch.setattr(exact, "_CHUNK_ENTRIES", 10**9)  # one chunk
        whole = exact.privacy_loss(scenario, scale)
        monkeypatch.setattr(exact, "_CHUNK_ENTRIES", 3_000)  # 10 pairs a chunk, on two threads
        assert exact.privacy_loss(scenario, scale) == whole


def test_a_prior_that_keeps_only_its_logs_gives_its_pmf_when_read() -> None:
    import dataclasses
    import pickle

    from pufferfish.priors.distributions import DiscretePrior

    logs = np.array([np.log(0.2), -np.inf, np.log(0.5), np.log(0.3)])
    kept = DiscretePrior.from_log_pmf([0, 1, 2, 3], logs)
    lean = DiscretePrior.from_log_pmf([0, 1, 2, 3], logs, keep_pmf=False)
    assert "pmf" not in vars(lean)
    assert np.allclose(lean.pmf, kept.pmf, rtol=1e-15, atol=0) and not lean.pmf.flags.writeable
    assert np.array_equal(lean.log_pmf, kept.log_pmf) and lean.mean == pytest.approx(kept.mean, rel=1e-15)
    assert np.array_equal(pickle.loads(pickle.dumps(lean)).pmf, lean.pmf)
    assert np.array_equal(dataclasses.replace(lean, log_error=1e-9).pmf, lean.pmf)
    with pytest.raises(AttributeError, match="no attribute 'pfm'"):
        _ = lean.pfm  # type: ignore[attr-defined]


def test_an_unknown_target_among_many_states_is_named_in_one_short_line() -> None:
    # issue 55: an unknown target printed all 500 state names on one line
    from pufferfish.markov import CountModel, MarkovChain

    k = 500
    m = np.roll(np.eye(k), 1, axis=1) * 0.5 + np.eye(k) * 0.5
    chain = MarkovChain(m, states=[f"s{i}" for i in range(k)])
    with pytest.raises(
        ValueError, match=r"\['s0', 's1', .*, \.\.\., 's499'\] \(500 in all\), got 'zzz'$"
    ) as err:
        CountModel((chain,), 5, "zzz")
    assert len(str(err.value)) < 200
