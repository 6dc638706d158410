"""Issue 34: large alphabets in bounded memory, long labels, temporary files, start-up signals.

Randomized response as a two-weight channel (checked in O(k), with and without prior sets, against
the dense matrix), its exact draw, the eps-MI check of Laplace noise on atoms in linear memory
(against the kernel path and against quadrature), the checks that answer "not run: needs about
N GiB" before allocating, and the CLI on a column of 1,200 labels (above the dense limit of 1,000:
the 10,000-label figures are in benchmarks/bench_labels.py).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import chisquare
from typer.testing import CliRunner

from pufferfish import AdversaryPrior, DiscretePrior, Scenario
from pufferfish.calibration import calibrate_mapping, compare
from pufferfish.calibration.check import check_information
from pufferfish.calibration.mapping import MAPPING_MAX_K, mapping_loss
from pufferfish.cli.app import app
from pufferfish.loss import divergence as div
from pufferfish.loss.density import release_density
from pufferfish.noise.channels import ONE, DenseChannel, RandomizedResponseChannel
from pufferfish.noise.samplers import sample_mapping
from pufferfish.priors.sets import PriorSet, point_mass_extremes, set_extremes
from pufferfish.tables import duckdb_engine
from pufferfish.tables.duckdb_read import close_database
from pufferfish.tables.source import remove_stale_spills

runner = CliRunner()


@st.composite
def rr_cases(draw: st.DrawFn) -> tuple[Scenario, RandomizedResponseChannel]:
    k = draw(st.integers(2, 8))
    masses = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), min_size=k, max_size=k)
    p, q = np.asarray(draw(masses)), np.asarray(draw(masses))
    for v in (p, q):
        if v.sum() == 0:
            v[draw(st.integers(0, k - 1))] = 1.0
    a = np.arange(k, dtype=float)
    sc = Scenario.single(DiscretePrior(a, p / p.sum()), DiscretePrior(a, q / q.sum()))
    kind = draw(st.sampled_from(["none", "dkw", "l1"]))
    if kind != "none":
        r = draw(st.one_of(st.just(1e-70), st.floats(0.0, 0.5)))
        rho = sc.priors[0]
        sets = {s: PriorSet(kind, a, pr.pmf, r) for s, pr in rho.conditionals.items()}  # type: ignore[union-attr]
        sc = Scenario(sc.pairs, (AdversaryPrior(rho.name, rho.conditionals, sets),))
    keep_p = draw(st.one_of(st.just(1.0), st.just(1.0 / k), st.floats(1.0 / k, 1.0)))
    return sc, RandomizedResponseChannel.from_probability(k, keep_p)


@given(rr_cases())
def test_randomized_response_channel_check_equals_the_dense_check(case) -> None:
    sc, chan = case
    support = np.arange(chan.k, dtype=float)
    fast = mapping_loss(sc, chan, support)
    dense = mapping_loss(sc, chan.dense_weights() / float(ONE), support)
    if math.isinf(dense.loss + dense.error):
        assert math.isinf(fast.loss + fast.error)  # never certified where the dense check is not
    elif math.isfinite(fast.loss + fast.error):
        assert abs(fast.loss - dense.loss) <= fast.error + dense.error + 1e-12
    else:  # the structured check may only be more careful, never less
        assert fast.error == math.inf


@pytest.mark.parametrize("kind", ["dkw", "l1"])
@pytest.mark.parametrize("radius", [0.0, 1e-70, 0.01, 0.2, 0.9])
def test_point_mass_extremes_are_the_set_extremes_of_the_identity_columns(kind, radius) -> None:
    gen = np.random.default_rng(5)
    for k in (1, 2, 5, 30):
        center = gen.dirichlet(np.ones(k))
        center[gen.random(k) < 0.3] = 0.0
        if center.sum() == 0:
            center[0] = 1.0
        ps = PriorSet(kind, np.arange(k, dtype=float), center / center.sum(), radius)
        low, high, bound = point_mass_extremes(ps)
        top = set_extremes(ps, np.eye(k), maximize=True)
        bottom = set_extremes(ps, np.eye(k), maximize=False)
        assert np.allclose(high, np.diag(top), atol=bound + 1e-15)
        assert np.allclose(low, np.diag(bottom), atol=bound + 1e-15)


def test_randomized_response_draw_is_exact_at_the_boundaries_and_in_frequency() -> None:
    chan = RandomizedResponseChannel.from_probability(5, 0.6)
    assert chan.keep + 4 * chan.other == ONE and chan.keep >= chan.other
    x = np.array([2, 2, 2, 2, 0, 4], dtype=np.int64)
    u = np.array([0, chan.keep - 1, chan.keep, ONE - 1, ONE - 1, chan.keep], dtype=np.int64)
    assert chan.draw(x, u).tolist() == [2, 2, 0, 4, 4, 0]
    n = 300_000
    drawn = sample_mapping(np.full(n, 3), chan, random_bytes=np.random.default_rng(34).bytes)
    freq = np.bincount(drawn.indices, minlength=5)
    expected = n * (chan.dense_weights()[3] / ONE)
    assert chisquare(freq, expected).pvalue > 1e-4
    assert drawn.secure
    # the dense channel of the same weights gives each output a range of the same length: on a
    # regular grid of uniforms the counts differ by at most 2 (one per end of a range)
    dense = DenseChannel(chan.dense_weights())
    grid = np.arange(0, ONE, ONE // 997, dtype=np.int64)
    for row in range(5):
        xs = np.full(grid.size, row, dtype=np.int64)
        a, b = (np.bincount(c.draw(xs, grid), minlength=5) for c in (dense, chan))
        assert np.max(np.abs(a - b)) <= 2


def test_randomized_response_channel_refuses_bad_weights() -> None:
    with pytest.raises(ValueError, match="keep >= other >= 0, got k=3, keep=1, other=2"):
        RandomizedResponseChannel(3, 1, 2)
    with pytest.raises(ValueError, match="p must be in"):
        RandomizedResponseChannel.from_probability(3, 1.5)


def _atoms(seed: int, n: int) -> Scenario:
    gen = np.random.default_rng(seed)
    a = np.sort(gen.choice(np.arange(60.0), n, replace=False))
    p, q = gen.dirichlet(np.ones(n)), gen.dirichlet(np.ones(n))
    return Scenario.single(DiscretePrior(a, p), DiscretePrior(a, q))


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "n", "scale"), [(1, 2, 0.7), (2, 5, 3.0), (3, 12, 0.05), (4, 30, 20.0)])
def test_information_on_atoms_agrees_with_the_kernel_path(monkeypatch, seed, n, scale) -> None:
    sc = _atoms(seed, n)
    dens = [release_density(p, "laplace", scale) for p in sc.priors[0].conditionals.values()]
    fast = div.mutual_information(dens, [0.3, 0.7], tol=1e-6)
    monkeypatch.setattr(div, "_atoms_apply", lambda densities: False)
    slow = div.mutual_information(dens, [0.3, 0.7], tol=1e-4, max_intervals=100_000)
    assert abs(fast.information - slow.information) <= fast.error_bound + slow.error_bound
    assert fast.error_bound <= 2e-6
    # and the check of the mechanism uses the linear path
    monkeypatch.undo()
    assert check_information(sc, "laplace", scale, tol=1e-6).error <= 2e-6


def test_information_on_atoms_against_quadrature() -> None:
    p = DiscretePrior(np.array([0.0, 1.0, 4.0]), np.array([0.5, 0.3, 0.2]))
    q = DiscretePrior(np.array([0.0, 2.0]), np.array([0.25, 0.75]))
    b = 1.3
    dens = [release_density(d, "laplace", b) for d in (p, q)]
    got = div.mutual_information(dens, [0.4, 0.6], tol=1e-7)

    def f(prior: DiscretePrior, y: float) -> float:
        return float(np.sum(prior.pmf * np.exp(-np.abs(y - prior.support) / b)) / (2 * b))

    def integrand(y: float) -> float:
        fi, fj = f(p, y), f(q, y)
        bar = 0.4 * fi + 0.6 * fj
        return 0.4 * fi * math.log(fi / bar) + 0.6 * fj * math.log(fj / bar)

    exact = sum(
        integrate.quad(integrand, lo, hi, epsabs=1e-13, limit=200)[0]
        for lo, hi in ((-80.0, 0.0), (0.0, 1.0), (1.0, 2.0), (2.0, 4.0), (4.0, 80.0))
    )
    assert abs(got.information - exact) <= got.error_bound + 1e-11
    assert got.error_bound < 2e-7


def test_checks_past_the_memory_limit_answer_not_run_before_allocating(monkeypatch) -> None:
    sc = _atoms(7, 20)
    monkeypatch.setattr(div, "KERNEL_ENTRIES", 1_000)
    rows = compare(sc, 1.0, ["optimal", "mi-gaussian"], noise="gaussian", delta=1e-5)
    for row in rows:
        assert row.reason.startswith("not run: needs about") and "GiB" in row.reason  # type: ignore[union-attr]
    # Laplace noise with delta > 0 falls back to the pure-eps optimum (a check in linear memory)
    (lap,) = compare(sc, 1.0, ["optimal"], delta=1e-5)
    assert lap.scale > 0 and "pure eps optimum" in lap.decided_by  # type: ignore[union-attr]
    # the eps-MI check on atoms with Laplace noise does not need the kernel arrays
    (mi,) = compare(sc, 1.0, ["mi-laplace"])
    assert mi.scale > 0  # type: ignore[union-attr]


def _wide_csv(path, k: int = MAPPING_MAX_K + 200) -> None:
    gen = np.random.default_rng(34)
    codes = np.concatenate([np.arange(k), gen.integers(0, k, 2 * k)])
    secret = np.where(gen.random(codes.size) < 0.5, "A", "B")
    shift = np.where(secret == "A", codes, np.minimum(codes + gen.integers(0, 30, codes.size), k - 1))
    shift[:k] = np.arange(k)  # every label appears
    path.write_text("s,v\n" + "".join(f"{s},item-{c:05d}\n" for s, c in zip(secret, shift, strict=True)))


def test_cli_release_of_more_labels_than_a_dense_mapping_takes(tmp_path) -> None:
    src = tmp_path / "wide.csv"
    _wide_csv(src)
    out = tmp_path / "out.csv"
    res = runner.invoke(
        app, ["release", str(src), "--secret", "s", "--public", "v", "--pair", "A,B", "--epsilon", "1",
              "--output", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.replace("│", " ").split())  # the words, whatever the wrapping
    assert "optimal-mapping: needs about 0.5 GiB for 1,200 labels" in text
    assert "mechanism: randomized-response" in text and "its two weights are in the report" in text
    # both long tables are cut to a head and a tail, naming where every row is
    assert "(1,160 more values: every one in --json and in --report)" in text
    assert f"(1,160 more values: every one in {tmp_path / 'out.report.json'})" in text
    assert len(res.output.splitlines()) < 400
    released = out.read_text().splitlines()
    assert released[0] == "v" and all(line.startswith("item-") for line in released[1:])  # no secret
    report = json.loads((tmp_path / "out.report.json").read_text())
    chosen = report["chosen"]
    assert chosen["matrix"] is None and chosen["channel"]["kind"] == "randomized-response"
    assert len(report["noise"]["counts"]["values"]) == 1200


def test_calibrate_rows_of_the_dense_mappings_name_the_memory(tmp_path) -> None:
    src = tmp_path / "wide.csv"
    _wide_csv(src)
    res = runner.invoke(
        app, ["calibrate", str(src), "--secret", "s", "--public", "v", "--pair", "A,B", "--epsilon", "1",
              "--mechanism", "all", "--prior-set", "none", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = {r["mechanism"]: r for r in json.loads(res.output)["results"]}
    assert rows["randomized-response"]["checked_loss"] <= 1.0
    assert rows["optimal"]["scale"] > 0 and rows["mi-laplace"]["scale"] > 0
    for name in ("geometric", "optimal-mapping"):
        assert "GiB for 1,200 labels" in rows[name]["reason"]


def test_calibrate_mapping_refuses_a_dense_matrix_past_the_limit_without_building_it() -> None:
    k = 1100  # above the dense limits of a mapping (1,000) and of a matrix (1,024)
    a = np.arange(k, dtype=float)
    sc = Scenario.single(DiscretePrior(a, np.full(k, 1.0 / k)), DiscretePrior(a, np.full(k, 1.0 / k)))
    with pytest.raises(ValueError, match="needs about 0.1 GiB for 1,100 labels"):
        calibrate_mapping(sc, 1.0, "geometric")
    rr = calibrate_mapping(sc, 1.0, "randomized-response")
    with pytest.raises(ValueError, match="not built"):
        _ = rr.weights
    assert rr.noiseless and rr.channel.keep == ONE  # identical priors: nothing to hide


def test_long_labels_are_shortened_in_tables_and_messages(tmp_path) -> None:
    big_secret, big_value = "S" * 60_000, "V" * 60_000
    src = tmp_path / "long.csv"
    rows = [f"{big_secret if i % 2 else 'short'},{big_value if i % 3 == 0 else 'x'}" for i in range(10)]
    src.write_text("s,v\n" + "\n".join(rows) + "\n")
    res = runner.invoke(
        app, ["calibrate", str(src), "--secret", "s", "--public", "v", "--pair", f"short,{big_secret}",
              "--epsilon", "1"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output[:2000]
    assert len(res.output) < 20_000 and "(60,000 characters)" in res.output
    assert big_secret not in res.output and big_value not in res.output
    bad = runner.invoke(
        app, ["calibrate", str(src), "--secret", "s", "--public", "v", "--pair", "a,b", "--epsilon", "1"]
    )
    lines = bad.output.strip().splitlines()
    assert bad.exit_code == 1 and len(lines) == 1 and len(lines[0]) < 300, bad.output[:500]
    assert "values are 'SSSS" in lines[0] and "… (60,000 characters), 'short'" in lines[0]
    # the labels are the user's: the release writes them whole
    out = tmp_path / "out.csv"
    rel = runner.invoke(
        app, ["release", str(src), "--secret", "s", "--public", "v", "--pair", f"short,{big_secret}",
              "--epsilon", "1", "--output", str(out)],
    )  # fmt: skip
    assert rel.exit_code == 0, rel.output[:2000]
    assert big_value not in rel.output
    assert set(out.read_text().splitlines()[1:]) <= {big_value, "x"}  # the released column only


def _dead_pid() -> int:
    """A process id that no longer runs (a child that has exited and been waited for)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(proc.stdout)


def test_temporary_files_are_hidden_recognisable_and_removed_by_the_next_run(tmp_path) -> None:
    src = tmp_path / "t.csv"
    src.write_text("s,v\n" + "".join(f"{'ab'[i % 2]},{i % 5}\n" for i in range(40)))
    out = tmp_path / "out.csv"
    dead = _dead_pid()
    stale = tmp_path / f".out.csv.pufferfish-{dead}-abc123.tmp"  # left by a killed run
    stale.write_text("partial")
    alive = tmp_path / f".out.csv.pufferfish-{os.getpid()}-xyz789.tmp"  # a run still going
    alive.write_text("in progress")
    other = tmp_path / f".other.csv.pufferfish-{dead}-abc123.tmp"  # another output's, of a killed run
    other.write_text("x")  # removed too (issue 54: it may hold drawn noise)
    mine = tmp_path / f".other.csv.pufferfish-{os.getpid()}-abc123.tmp"  # another output's, running
    mine.write_text("y")
    spill = Path(tempfile.gettempdir()) / f"pufferfish-duckdb-{dead}-0"
    spill.mkdir(exist_ok=True)
    (spill / "duckdb_temp_block").write_bytes(b"0" * 100)
    buckets = Path(tempfile.gettempdir()) / f"pufferfish-duckdb-{dead}-1"  # tables.shuffle's buckets
    buckets.mkdir(exist_ok=True)
    (buckets / "0.arrows").write_bytes(b"0" * 100)
    seen: list[str] = []
    real_copy = duckdb_engine.duckdb.connect

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs.get("config", {}).get("temp_directory", ""))
        return real_copy(*args, **kwargs)

    duckdb_engine.duckdb.connect = spy
    remove_stale_spills.cache_clear()  # a new run (a new process) looks again
    close_database()  # and opens its own database
    try:
        res = runner.invoke(
            app, ["release", str(src), "--secret", "s", "--public", "v", "--pair", "a,b", "--epsilon", "1",
                  "--output", str(out)],
        )  # fmt: skip
    finally:
        duckdb_engine.duckdb.connect = real_copy
    assert res.exit_code == 0, res.output
    assert not stale.exists() and not spill.exists() and not other.exists() and not buckets.exists()
    assert alive.exists() and mine.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [alive.name, mine.name, "out.csv", "out.report.json", "t.csv"]
    )  # nothing of this run is left, and DuckDB wrote no tmp_ file beside the output
    assert seen and all(Path(d).name.startswith(f"pufferfish-duckdb-{os.getpid()}-") for d in seen)
    assert not any(p.is_file() for d in seen for p in Path(d).rglob("*"))  # DuckDB removed its blocks
    close_database()  # as at the process's exit
    assert not any(Path(d).exists() for d in seen)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_command_line_loads_is_one_line(sig, code) -> None:
    # deterministic: the signal is sent from an import hook while pufferfish.cli.app loads
    child = f"""
import os, sys
class Hook:
    def find_spec(self, name, path, target=None):
        if name == "pufferfish.cli.app":
            os.kill(os.getpid(), {int(sig)})
        return None
sys.meta_path.insert(0, Hook())
sys.argv = ["pufferfish", "--help"]
from pufferfish.cli.entry import main
main()
"""
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert proc.returncode == code
    assert proc.stderr.strip().splitlines() == [
        "pufferfish: interrupted while starting; nothing was read or written"
    ]
    assert proc.stdout == ""


def test_a_release_that_needs_no_noise_says_so_once(tmp_path) -> None:
    src = tmp_path / "same.csv"
    src.write_text("s,v\n" + "".join(f"{'ab'[i % 2]},{(i // 2) % 4}\n" for i in range(40)))
    res = runner.invoke(
        app, ["release", str(src), "--secret", "s", "--public", "v", "--pair", "a,b", "--epsilon", "1",
              "--prior-set", "none", "--output", str(tmp_path / "out.csv")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert text.count("no noise is needed") == 1 and "with noise" not in text
    assert "scale 0 means" not in text and "noise: none" not in text


def test_write_errors_name_the_users_file_not_the_temporary_one(tmp_path) -> None:
    """Issue 44: an OS error (or an engine's message) while writing names the output the user
    asked for; nothing is left behind."""
    import errno

    from pufferfish.tables.source import DataError, atomic_outputs

    final = tmp_path / "o.csv"
    with pytest.raises(OSError) as err:
        with atomic_outputs([final], force=False) as (tmp,):
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
    assert err.value.filename == str(final) and ".tmp" not in str(err.value)
    with pytest.raises(DataError, match=f"cannot write {final}$"):
        with atomic_outputs([final], force=False) as (tmp,):
            raise DataError(f"cannot write {tmp}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_release_opens_one_database(tmp_path: Path, fmt: str) -> None:
    # Opening a DuckDB database costs about 14 ms; a release's stages (counts, columns, reading,
    # writing) each take a cursor of the process's one database. A Parquet copy runs on one thread
    # (a setting of a whole database): that copy alone opens a database of its own.
    src = tmp_path / "t.csv"
    src.write_text("s,v\n" + "".join(f"{'ab'[i % 2]},{i % 5}\n" for i in range(200)))
    close_database()
    opened: list[dict[str, object]] = []
    real_connect = duckdb_engine.duckdb.connect

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(dict(kwargs.get("config", {})))
        return real_connect(*args, **kwargs)

    duckdb_engine.duckdb.connect = spy
    try:
        res = runner.invoke(
            app, ["release", str(src), "--secret", "s", "--public", "v", "--pair", "a,b", "--epsilon", "1",
                  "--output", str(tmp_path / f"out.{fmt}")],
        )  # fmt: skip
    finally:
        duckdb_engine.duckdb.connect = real_connect
    assert res.exit_code == 0, res.output
    shared = [c for c in opened if "threads" not in c]
    assert len(shared) == 1
    assert [c.get("threads") for c in opened if "threads" in c] == ([1] if fmt == "parquet" else [])
