"""Multi-user summation queries (seed 000): model, sums, calibrators, system optimum, CLI."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from typer.testing import CliRunner

from pufferfish.calibration import PrivacyCheckError, Skipped
from pufferfish.cli.app import app
from pufferfish.loss.exact import privacy_loss
from pufferfish.multiuser import (
    THEOREMS,
    MultiUserCalibration,
    MultiUserSystem,
    User,
    calibrate_system,
    calibrate_user,
    compare_user,
    eq15_scale,
    others_distribution,
    pair_scenario,
    query_priors,
    release_sum,
    sum_distribution,
    thm3_eq13_scale,
)
from pufferfish.multiuser.convolution import _log_sum_direct, _log_sum_tilted
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.transport.line import kantorovich_plan

S = [1, 2, 3, 4, 5]
TABLE2 = [[0.01, 0.04, 0.1, 0.2, 0.65], [0.7, 0.2, 0.05, 0.04, 0.01], [0.2] * 5]  # seed 000 Table 2
P4 = [0.4, 0.1, 0.0, 0.1, 0.4]  # seed 000 Table 3
Q4 = [0.0, 0.05, 0.9, 0.05, 0.0]
EPSILONS = [0.1, 0.25, 0.5, 1.0, 1.5, 2.0]


def table2_users() -> list[User]:
    return [User(f"u{i + 1}", DiscretePrior(S, p)) for i, p in enumerate(TABLE2)]


@pytest.fixture(scope="module")
def four_users() -> MultiUserSystem:
    """Seed 000's 4-user example: Table 2 plus user 4 of Table 3 (a = 5, b = 3)."""
    u4 = User("u4", DiscretePrior(S, P4), alternative=DiscretePrior(S, Q4), values=(5, 3))
    return MultiUserSystem((*table2_users(), u4))


@pytest.fixture(scope="module")
def bernoulli_users() -> MultiUserSystem:
    """Seed 000 Fig 7-8: user 4 Bernoulli(0.2) vs Bernoulli(0.9) added to Table 2."""
    u4 = User("u4", DiscretePrior([0, 1], [0.8, 0.2]), alternative=DiscretePrior([0, 1], [0.1, 0.9]))
    return MultiUserSystem((*table2_users(), u4))


def brute_sum(priors: list[DiscretePrior]) -> dict[float, float]:
    out: dict[float, float] = {}
    for combo in itertools.product(*[list(zip(p.support, p.pmf, strict=True)) for p in priors]):
        x = round(sum(v for v, _ in combo), 9)
        out[x] = out.get(x, 0.0) + math.prod(w for _, w in combo)
    return out


# -- seed 000's worked example (text of sec 4, Figures 1-4 and 6-8) ------------------------------


@pytest.mark.parametrize(("pair_set", "sup"), [("ab", 2.0), ("a-bot", 5.0), ("P-bot", 5.0), ("P-Q", 2.0)])
def test_seed000_plan_displacements(four_users: MultiUserSystem, pair_set: str, sup: float) -> None:
    """Fig 1, 2, 3 and 6: sup over the Kantorovich plan's support of |x - x'| = 2, 5, 5, 2."""
    (_, a), (_, b) = query_priors(four_users, "u4", pair_set)
    assert kantorovich_plan(a, b).max_displacement == sup


@pytest.mark.parametrize(
    ("pair_set", "mechanism", "numerator"),
    [("ab", "thm1", 2.0), ("a-bot", "thm2", 5.0), ("P-bot", "thm3-eq14", 5.0), ("P-Q", "thm4", 2.0)],
)
@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_seed000_theorem_scales(
    four_users: MultiUserSystem, pair_set: str, mechanism: str, numerator: float, eps: float
) -> None:
    """Sec 4.1-4.4: Thm 1 gives 2/eps, Thm 2 5/eps, Thm 3 (14) 5/eps, Thm 4 2/eps; all pass."""
    res = calibrate_user(four_users, "u4", pair_set, eps, mechanism)
    assert res.scale == pytest.approx(numerator / eps, rel=1e-6)
    assert res.checked_loss <= eps
    assert res.uses_other_users is False


def test_seed000_fig4_eq13_below_eq14(four_users: MultiUserSystem) -> None:
    """Fig 4 / Remark 2: the root of eq (13) is below eq (14) at every eps."""
    for eps in EPSILONS:
        e13 = calibrate_user(four_users, "u4", "P-bot", eps, "thm3-eq13").scale
        e14 = calibrate_user(four_users, "u4", "P-bot", eps, "thm3-eq14").scale
        assert e13 < e14


def test_seed000_fig7_fig8_bernoulli(bernoulli_users: MultiUserSystem) -> None:
    """Fig 7: plan sup = 1 so Lemma 1 gives 1/eps; Fig 8: Lemma 2 is below 1/eps at every eps."""
    (_, a), (_, b) = query_priors(bernoulli_users, "u4", "P-Q")
    assert kantorovich_plan(a, b).max_displacement == 1.0
    for eps in EPSILONS:
        l1 = calibrate_user(bernoulli_users, "u4", "P-Q", eps, "lemma1")
        l2 = calibrate_user(bernoulli_users, "u4", "P-Q", eps, "lemma2")
        assert l1.scale == pytest.approx(1.0 / eps, rel=1e-6)
        assert l2.scale < l1.scale
        assert l2.uses_other_users is True


def test_eq15_is_eq13_for_bernoulli() -> None:
    """Eq (15) is the closed form of eq (13) for Bernoulli users."""
    for p in (0.01, 0.3, 0.9):
        u = User("b", DiscretePrior([0, 1], [1 - p, p]))
        for eps in EPSILONS:
            assert eq15_scale(u, eps).scale == pytest.approx(thm3_eq13_scale(u, eps).scale, rel=1e-9)


# -- sums ---------------------------------------------------------------------------------------


def test_sum_matches_brute_force_with_presence() -> None:
    users = [
        User("a", DiscretePrior([1, 2, 3], [0.2, 0.5, 0.3]), presence=0.7),
        User("b", DiscretePrior([-2, 0, 5], [0.1, 0.6, 0.3]), presence=0.4),
        User("c", DiscretePrior([0.5, 1.5], [0.5, 0.5])),
    ]
    got = sum_distribution([u.contribution() for u in users])
    want = brute_sum([u.contribution() for u in users])
    assert got.support.tolist() == pytest.approx(sorted(want))
    assert got.pmf == pytest.approx([want[k] for k in sorted(want)], abs=1e-15)


def test_sum_off_lattice_is_exact() -> None:
    ps = [DiscretePrior([0.0, math.pi], [0.5, 0.5]), DiscretePrior([0.0, math.sqrt(2)], [0.25, 0.75])]
    got = sum_distribution(ps)
    assert got.size == 4
    assert got.pmf == pytest.approx([0.125, 0.375, 0.125, 0.375])


def test_tilted_fft_matches_direct_log_convolution() -> None:
    rng = np.random.default_rng(3)
    logs = [np.log(rng.dirichlet(np.ones(5))) for _ in range(400)]
    direct, err_d = _log_sum_direct(logs)
    tilted = _log_sum_tilted(logs)
    assert tilted is not None
    log_t, err_t = tilted
    assert direct.min() < -700  # tails far below float64's smallest normal number
    assert np.max(np.abs(direct - log_t)) <= err_d + err_t


def test_tilted_fft_refuses_supports_with_gaps() -> None:
    """Summands on {0, 2}: odd sums are impossible; the windows cannot cover them: go direct."""
    logs = [np.array([math.log(0.5), -math.inf, math.log(0.5)]) for _ in range(50)]
    assert _log_sum_tilted(logs) is None
    got = sum_distribution([DiscretePrior([0, 2], [0.5, 0.5])] * 50)
    assert got.size == 51 and got.support[1] == 2.0


def test_large_system_keeps_tails_below_float64() -> None:
    """3,000 users on {0..4}: P(sum = 0) ~ 1e-1800; the exact loss still sees it."""
    rng = np.random.default_rng(5)
    system = MultiUserSystem.from_arrays([np.arange(5)] * 3000, list(rng.dirichlet(np.ones(5) * 2, 3000)))
    r = others_distribution(system, "u1")
    assert r.log_pmf is not None and r.log_pmf[0] < -1000 and r.pmf[0] == 0.0
    assert r.log_error < 1e-7
    res = calibrate_user(system, "u1", "P-bot", 1.0, "thm3-eq13", others=r)
    assert res.checked_loss <= 1.0
    # Thm 3 (13) is tight for one-signed D: the check passes only after the bounded safety step
    assert res.checked_loss == pytest.approx(1.0, abs=1e-5)
    assert res.calibration.safety_step <= 1e-6


# -- properties ---------------------------------------------------------------------------------

values = st.lists(st.integers(-3, 4), min_size=1, max_size=4, unique=True).map(sorted)


@st.composite
def small_systems(draw: st.DrawFn) -> MultiUserSystem:
    k = draw(st.integers(1, 4))
    users = []
    for i in range(k + 1):
        sup = draw(values)
        w = draw(st.lists(st.floats(0.05, 1.0), min_size=len(sup), max_size=len(sup)))
        pmf = np.array(w) / sum(w)
        alt_sup = draw(values)
        aw = draw(st.lists(st.floats(0.05, 1.0), min_size=len(alt_sup), max_size=len(alt_sup)))
        zeta = draw(st.sampled_from([1.0, 0.5, 0.9]))
        ab = draw(st.lists(st.integers(-3, 4), min_size=2, max_size=2, unique=True))
        users.append(
            User(
                f"u{i}",
                DiscretePrior(sup, pmf),
                presence=zeta,
                alternative=DiscretePrior(alt_sup, np.array(aw) / sum(aw)),
                values=tuple(float(v) for v in ab),
            )
        )
    return MultiUserSystem(tuple(users))


@given(small_systems(), st.sampled_from(["ab", "a-bot", "P-bot", "P-Q"]), st.sampled_from([0.2, 1.0, 2.5]))
def test_every_result_passes_and_optimal_is_smallest(
    system: MultiUserSystem, pair_set: str, eps: float
) -> None:
    user = system.names[-1]
    results = compare_user(system, user, pair_set, eps)
    done = [r for r in results if isinstance(r, MultiUserCalibration)]
    failed = [r for r in results if isinstance(r, Skipped) and "fails" in r.reason]
    assert not failed, failed
    opt = next(r for r in done if r.mechanism == "optimal")
    scenario = pair_scenario(system, pair_set, [user])
    for r in done:
        assert privacy_loss(scenario, r.scale).satisfies(eps)
        assert opt.scale <= r.scale * (1 + 1e-9)
    if pair_set in ("ab", "a-bot"):  # Thm 1 and 2 are tight: the shift's loss is |a - b| / theta
        thm = next(r for r in done if r.mechanism in THEOREMS[pair_set])
        assert opt.scale == pytest.approx(thm.scale, rel=1e-6)
    u = system.user(user)
    if pair_set == "P-bot" and (u.prior.support.min() >= 0 or u.prior.support.max() <= 0):
        e13 = next(r for r in done if r.mechanism == "thm3-eq13")
        assert opt.scale == pytest.approx(e13.scale, rel=1e-6)


def _mixed_sign_system() -> MultiUserSystem:
    """Found by the thorough profile: a mixed-sign P-bot user whose tail bound is 5e-5 below its
    optimum; the system scale took a 1e-4 safe-side step (3.82237 > 3.82216) instead of the
    exact user optimum."""
    zero = DiscretePrior([0.0], [1.0])
    p = np.exp([-1.5389571, -0.34710266, -3.23573679, -3.23573679])
    u0 = User("u0", DiscretePrior([-2.0, -1.0, 0.0, 1.0], p / p.sum()), 1.0, zero, (0.0, 1.0))
    return MultiUserSystem((u0, User("u1", zero, 1.0, zero, (0.0, 1.0))))


@given(small_systems(), st.sampled_from(["P-bot", "P-Q"]), st.sampled_from([0.3, 1.0]))
@example(_mixed_sign_system(), "P-bot", 0.3)
def test_system_optimum_is_max_of_user_optima(system: MultiUserSystem, pair_set: str, eps: float) -> None:
    got = calibrate_system(system, pair_set, eps)
    per_user = [calibrate_user(system, n, pair_set, eps, "optimal").scale for n in system.names]
    assert got.scale == pytest.approx(max(per_user), rel=1e-6, abs=1e-12)
    assert got.scale >= max(per_user) * (1 - 1e-9)
    assert got.certified_alone + got.checked_query == len(system.users)


@given(
    st.lists(st.floats(0.01, 0.99), min_size=1, max_size=5),
    st.floats(0.01, 0.99),
    st.floats(0.01, 0.99),
    st.sampled_from([0.1, 0.5, 1.0, 2.0]),
)
def test_lemma2_as_printed_passes_the_exact_check(
    others: list[float], p: float, q: float, eps: float
) -> None:
    """Lemma 2 keeps only the column condition; on Bernoulli systems its scale still passes."""
    if abs(p - q) < 1e-3:
        return
    users = [User(f"v{k}", DiscretePrior([0, 1], [1 - x, x])) for k, x in enumerate(others)]
    t = User("t", DiscretePrior([0, 1], [1 - p, p]), alternative=DiscretePrior([0, 1], [1 - q, q]))
    res = calibrate_user(MultiUserSystem((*users, t)), "t", "P-Q", eps, "lemma2")
    assert res.scale <= 1.0 / eps
    assert res.checked_loss <= eps


# -- errors -------------------------------------------------------------------------------------


def test_pair_set_must_fit_the_user(four_users: MultiUserSystem) -> None:
    plain = MultiUserSystem(tuple(table2_users()))
    with pytest.raises(ValueError, match=r'pair set P-Q needs an "alternative" distribution for user \'u1\''):
        calibrate_user(plain, "u1", "P-Q", 1.0)
    with pytest.raises(ValueError, match=r'pair set ab needs "values": \[a, b\]'):
        calibrate_user(plain, "u1", "ab", 1.0)
    with pytest.raises(ValueError, match="pair_set must be one of ab, a-bot, P-bot, P-Q, got 'P-R'"):
        calibrate_user(four_users, "u4", "P-R", 1.0)
    with pytest.raises(ValueError, match="mechanism lemma1 does not apply to user 'u4': needs Bernoulli"):
        calibrate_user(four_users, "u4", "P-Q", 1.0, "lemma1")
    with pytest.raises(ValueError, match="applies to pair set P-bot, not P-Q"):
        calibrate_user(four_users, "u4", "P-Q", 1.0, "thm3-eq13")
    with pytest.raises(ValueError, match="epsilon must be finite and > 0, got -1"):
        calibrate_user(four_users, "u4", "P-Q", -1.0)


def test_system_json_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='system must be an object with a "users" list'):
        MultiUserSystem.from_dict({"people": []})
    with pytest.raises(ValueError, match="presence of user 'a' must be in \\[0, 1\\], got 1.5"):
        MultiUserSystem.from_dict({"users": [{"name": "a", "support": [0], "pmf": [1], "presence": 1.5}]})
    with pytest.raises(ValueError, match="user 'a' has unknown keys \\['weights'\\]"):
        MultiUserSystem.from_dict({"users": [{"name": "a", "support": [0], "pmf": [1], "weights": 1}]})
    with pytest.raises(ValueError, match="user names must be unique, got 'a' twice"):
        MultiUserSystem.from_dict({"users": [{"name": "a", "support": [0], "pmf": [1]}] * 2})
    with pytest.raises(ValueError, match="user 'a': pmf must sum to 1"):
        MultiUserSystem.from_dict({"users": [{"name": "a", "support": [0, 1], "pmf": [0.5, 0.6]}]})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        MultiUserSystem.from_json(bad)


def test_roundtrip_json(four_users: MultiUserSystem) -> None:
    again = MultiUserSystem.from_dict(json.loads(json.dumps(four_users.to_dict())))
    assert again.names == four_users.names
    assert again.user("u4").values == (5.0, 3.0)


def test_check_failure_is_reported_not_hidden(
    four_users: MultiUserSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A theorem whose scale failed the exact check would show as Skipped with the reason."""
    import pufferfish.multiuser.theorems as mc

    def too_small(user: User, epsilon: float) -> mc.TheoremScale:
        return mc.TheoremScale("thm4", epsilon, 0.5 / epsilon, "deliberately too small")

    entry = mc.USER_MECHANISMS["thm4"]
    patched = dataclasses.replace(entry, scale=lambda user, epsilon, others: too_small(user, epsilon))
    monkeypatch.setitem(mc.USER_MECHANISMS, "thm4", patched)
    with pytest.raises(PrivacyCheckError):
        calibrate_user(four_users, "u4", "P-Q", 1.0, "thm4")
    out = compare_user(four_users, "u4", "P-Q", 1.0, ["thm4"])
    assert isinstance(out[0], Skipped) and out[0].reason.startswith("fails the exact privacy check")


def test_release_sum_seeded(four_users: MultiUserSystem) -> None:
    a = release_sum(four_users, 12.0, "P-bot", 1.0, rng=7)
    b = release_sum(four_users, 12.0, "P-bot", 1.0, rng=7)
    assert a.value == b.value and a.noise["secure"] is False
    assert a.scale == pytest.approx(calibrate_system(four_users, "P-bot", 1.0).scale)
    secure = release_sum(four_users, 12.0, "P-Q", 1.0, user="u4", mechanism="thm4")
    assert secure.noise["secure"] is True and secure.scale == pytest.approx(2.0)
    with pytest.raises(ValueError, match="value must be a finite number, got nan"):
        release_sum(four_users, float("nan"), "P-bot", 1.0)


# -- table and CLI ------------------------------------------------------------------------------


def test_users_from_adult_table() -> None:
    codes = {"Husband": 1, "Wife": 1, "Own-child": 0, "Not-in-family": 0, "Other-relative": 0, "Unmarried": 0}
    system = MultiUserSystem.from_table("adult", value="relationship", user_by="race", codes=codes)
    assert system.names == ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")
    api = system.user("Asian-Pac-Islander").prior
    assert api.support.tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="codes has no number for label"):
        MultiUserSystem.from_table("adult", value="relationship", user_by="race", codes={"Husband": 1})
    with pytest.raises(ValueError, match="holds text: give codes"):
        MultiUserSystem.from_table("adult", value="relationship", user_by="race")


def test_users_from_table_keep_labels_as_written(tmp_path: Path) -> None:
    # DuckDB's sniffer reads yes/no as BOOLEAN and 007 as 7; class names and coded labels are the
    # file's text.
    csv = tmp_path / "loans.csv"
    csv.write_text("branch,paid\n007,yes\n007,no\n007,yes\n010,no\n010,no\n")
    system = MultiUserSystem.from_table(csv, value="paid", user_by="branch", codes={"yes": 1, "no": 0})
    assert system.names == ("007", "010")
    assert system.user("007").prior.support.tolist() == [0.0, 1.0]
    assert system.user("007").prior.pmf.tolist() == pytest.approx([1 / 3, 2 / 3])
    assert system.user("010").prior.pmf.tolist() == [1.0]
    with pytest.raises(ValueError, match="codes has no number for label 'no'"):
        MultiUserSystem.from_table(csv, value="paid", user_by="branch", codes={"yes": 1, "true": 0})


def write_system(path: Path, system: MultiUserSystem) -> Path:
    path.write_text(json.dumps(system.to_dict()))
    return path


def test_cli_multiuser_json_contract(tmp_path: Path, four_users: MultiUserSystem) -> None:
    f = write_system(tmp_path / "sys.json", four_users)
    res = CliRunner().invoke(
        app,
        [
            "multiuser",
            str(f),
            "--user",
            "u4",
            "--pair-set",
            "P-Q",
            "--epsilon",
            "1",
            "--epsilon",
            "0.5",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    rows = out["results"]
    assert {r["mechanism"] for r in rows} == {"thm4", "lemma1", "lemma2", "kantorovich", "relaxed", "optimal"}
    for r in rows:
        assert {"mechanism", "epsilon", "scale", "checked_loss"} <= set(r)
    thm4 = next(r for r in rows if r["mechanism"] == "thm4" and r["epsilon"] == 0.5)
    assert thm4["scale"] == pytest.approx(4.0)
    lemma1 = next(r for r in rows if r["mechanism"] == "lemma1")
    assert lemma1["scale"] is None and "Bernoulli" in lemma1["reason"]


def test_cli_multiuser_every_user_and_release(tmp_path: Path, four_users: MultiUserSystem) -> None:
    f = write_system(tmp_path / "sys.json", four_users)
    res = CliRunner().invoke(app, ["multiuser", str(f), "--pair-set", "P-bot", "--epsilon", "1", "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.output)["results"][0]
    assert row["scale"] == pytest.approx(calibrate_system(four_users, "P-bot", 1.0).scale)
    res = CliRunner().invoke(
        app, ["multiuser-release", str(f), "--pair-set", "P-bot", "--sum", "12", "--epsilon", "1", "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["noise"]["secure"] is True
    # issue 41: what is published is the noisy sum only, the value the check covers
    assert out["output_columns"]["written"] == out["output_columns"]["covered_by_the_guarantee"]
    assert out["output_columns"]["written"] == ["released_sum"] and "released_sum" in out


def test_cli_multiuser_errors_are_one_line(tmp_path: Path) -> None:
    f = write_system(tmp_path / "sys.json", MultiUserSystem(tuple(table2_users())))
    cmd = [
        sys.executable,
        "-m",
        "pufferfish.cli.app",
        "multiuser",
        str(f),
        "--user",
        "u1",
        "--pair-set",
        "P-Q",
    ]
    proc = subprocess.run([*cmd, "--epsilon", "1"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: pair set P-Q needs an \"alternative\" distribution for user 'u1', got none"
    ]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pufferfish.cli.app",
            "multiuser",
            str(tmp_path / "nope.json"),
            "--pair-set",
            "P-bot",
            "--epsilon",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("error: cannot read system file")


def test_leave_one_out_shares_sums_between_identical_users() -> None:
    from pufferfish.multiuser import leave_one_out

    same = [User(f"s{k}", DiscretePrior([0, 1, 2], [0.2, 0.3, 0.5])) for k in range(6)]
    other = User("o", DiscretePrior([0, 3], [0.5, 0.5]), presence=0.8)
    system = MultiUserSystem((*same, other))
    loo = leave_one_out(system)
    assert loo["s0"] is loo["s5"]  # one sum for the six look-alikes
    for name in ("s2", "o"):
        want = others_distribution(system, name)
        assert loo[name].support.tolist() == want.support.tolist()
        assert loo[name].pmf == pytest.approx(want.pmf, abs=1e-15)


def test_cli_multiuser_json_p_bot_is_valid_json(tmp_path: Path, four_users: MultiUserSystem) -> None:
    f = write_system(tmp_path / "sys.json", four_users)
    args = ["multiuser", str(f), "--user", "u4", "--pair-set", "P-bot", "--epsilon", "1", "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["results"]
    e13 = next(r for r in rows if r["mechanism"] == "thm3-eq13")
    e14 = next(r for r in rows if r["mechanism"] == "thm3-eq14")
    lo, hi = e13["root"]["bracket"]
    assert lo <= e13["scale"] <= hi == pytest.approx(e14["scale"])


def test_lemma2_p_above_q_as_printed_is_not_condition_20() -> None:
    """Finding: for p > q, eq (21) as printed is not the column condition (20) of its own proof.

    The proof's plan has pi(x'+1, x') = (p - q) r(x'), not (p - q) r(x' - 1); condition (20)
    then gives the relaxed (column) scale, while the printed formula gives the p < q value with P
    and Q exchanged. Both pass the exact check here (and in the property test above).
    """
    from pufferfish.multiuser import lemma2_scale

    def system(p: float, q: float) -> MultiUserSystem:
        t = User("u4", DiscretePrior([0, 1], [1 - p, p]), alternative=DiscretePrior([0, 1], [1 - q, q]))
        return MultiUserSystem((*table2_users(), t))

    above, below = system(0.9, 0.2), system(0.2, 0.9)
    r = others_distribution(above, "u4")
    rr = dict(zip(r.support.astype(int).tolist(), r.pmf.tolist(), strict=True))
    eps = 0.1
    e = math.exp(eps)
    derived = max(
        1.0 / math.log(e + (e - 1.0) * ((0.1 * rr[x] + 0.2 * rr.get(x - 1, 0.0)) / (0.7 * rr[x]))) for x in rr
    )
    printed = lemma2_scale(above.user("u4"), eps, r).scale
    assert printed == pytest.approx(lemma2_scale(below.user("u4"), eps, r).scale, rel=1e-12)
    assert printed == pytest.approx(7.8848, abs=1e-4)
    assert derived == pytest.approx(8.8103, abs=1e-4)
    assert derived == pytest.approx(calibrate_user(above, "u4", "P-Q", eps, "relaxed").scale, rel=1e-6)
    assert calibrate_user(above, "u4", "P-Q", eps, "lemma2").checked_loss <= eps


def test_cli_reports_of_a_sum_name_only_what_was_calibrated_and_released(
    tmp_path: Path, four_users: MultiUserSystem
) -> None:
    """Issue 46: the report of a sum (calibration and release): the users, the mechanisms' rows
    (the JSON's numbers), the scales and the sum's distributions under the deciding user's two
    secrets; nothing of a table's release; an existing report is kept without --force."""
    import re

    f = write_system(tmp_path / "sys.json", four_users)
    page_path = tmp_path / "sum.html"
    args = ["multiuser", str(f), "--user", "u4", "--pair-set", "P-Q", "--epsilon", "1", "--epsilon", "0.5",
            "--report", str(page_path), "--json"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    page = page_path.read_text()
    assert re.findall(r'<figure id="([^"]+)"', page) == ["fig-scales", "fig-priors"]
    for other in ("Kantorovich transport plan", "Randomized mapping", "Labels in the table", "Released sum"):
        assert other not in page, other
    embedded = json.loads(re.search(r'id="report-json">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert embedded == json.loads(res.output)
    for row in embedded["results"]:
        if row["scale"] is not None:
            shown = re.search(rf'data-key="scale:{row["mechanism"]}:{row["epsilon"]:g}">([^<]*)<', page)
            assert shown is not None and float(shown.group(1)) == pytest.approx(row["scale"], rel=1e-5)
    assert "The sum under the two secrets of u4" in page
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 1 and "--force" in again.output
    release_page = tmp_path / "release.html"
    rel_args = ["multiuser-release", str(f), "--pair-set", "P-bot", "--sum", "12", "--epsilon", "1",
                "--report", str(release_page), "--json"]  # fmt: skip
    res = CliRunner().invoke(app, rel_args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    page = release_page.read_text()
    shown = re.search(r'data-key="released_sum">([^<]*)<', page)
    assert shown is not None and float(shown.group(1)) == pytest.approx(out["released_sum"], rel=1e-5)
    assert f"The sum under the two secrets of {out['calibration']['user']}" in page
    assert "The true sum and the users' values are not written" in page
    bad = CliRunner().invoke(app, ["multiuser", str(f), "--pair-set", "P-bot", "--epsilon", "1",
                                   "--report", str(tmp_path / "x.txt")])  # fmt: skip
    assert bad.exit_code == 1 and "html" in bad.output
