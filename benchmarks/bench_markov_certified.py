"""Scales certified over the whole 95% set of row balls against the optimum over its listed chains
(issue 55), with times: ``python benchmarks/bench_markov_certified.py [--quick]``.

Each case runs ``pufferfish markov calibrate DATA ... --json`` in a fresh process
(:func:`_timing.cli_runs`: wall time and peak memory) and prints, at the longest length:

* ``listed``: ``optimal`` over the listed chains (the estimate and each row's one-pair moves): NOT a
  guarantee for the set;
* ``certified``: the smallest scale certified over the whole set (``optimal-set`` for a binary
  chain, else ``mqm-approx`` with the set's bounds, else ``group-dp``), and which;
* ``mqm-exact`` (over the listed chains: not certified over the set) and ``group-dp`` (``T / eps``);
* ``attack``: the largest exact loss a worst-chain search found in the set at the listed optimum;

and the time of ``markov release`` (its default: the smallest scale certified over the set) on the
longest binary table.

Cases: the shipped ``activity`` (8 states, T = 144) and ``mvad`` (6 states, T = 72) logs; synthetic
binary tables (``P(0 -> 1) = 0.15``, ``P(1 -> 0) = 0.25``, 2,000 ids) at T = 20, 100, 400, 1,000;
3- and 4-state tables at T = 100; a 500-state table at T = 20 (the default comparison); and a
binary series of T = 20,000 (refused in one line, its time printed). ``--quick`` runs the binary
T = 20 and T = 100 cases only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import cli_runs, machine

from pufferfish.markov.release import TIE_ORDER  # a tie goes as the release takes it


def _walks(path: Path, m: np.ndarray, ids: int, length: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = m.shape[0]
    w, v = np.linalg.eig(m.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    pi = pi / pi.sum()
    names = [f"s{j}" for j in range(k)]
    with path.open("w") as f:
        f.write("id,t,state\n")
        for p in range(ids):
            x = int(rng.choice(k, p=pi))
            for t in range(length):
                f.write(f"{p},{t},{names[x]}\n")
                x = int(rng.choice(k, p=m[x]))


def _row(name: str, args: list[str], length: str) -> None:
    seconds, peak, out = cli_runs(["markov", "calibrate", *args, "--epsilon", "1", "--json"], 1)
    got = json.loads(out)
    rows = {r["mechanism"]: r for r in got["results"][length]}
    certified = [r for r in rows.values() if r.get("certified") and r.get("scale") is not None]
    best = min(certified, key=lambda r: (r["scale"], TIE_ORDER.get(r["mechanism"], len(TIE_ORDER))))
    listed = rows.get("optimal", {}).get("scale")
    attack = got.get("attack", {}).get("optimal", {}).get("worst_loss_found", "-")
    exact = rows.get("mqm-exact", {}).get("scale")
    ratio = best["scale"] / listed if listed else float("nan")
    print(
        f"{name:<30} {seconds:>7.1f} {peak:>6.0f} {listed or 0:>9.4f} {best['scale']:>9.4f} "
        f"{best['mechanism']:<12} {ratio:>6.3f} {exact if exact is not None else float('nan'):>9.4f} "
        f"{rows['group-dp']['scale']:>7.1f} {attack if isinstance(attack, str) else f'{attack:.4f}':>7}"
    )


def _args(data: str, cols: tuple[str, str, str], target: str, *rest: str) -> list[str]:
    return [data, "--id", cols[0], "--time", cols[1], "--state", cols[2], "--target-state", target, *rest]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    print(machine())
    print(
        f"{'case':<30} {'s':>7} {'MiB':>6} {'listed':>9} {'certified':>9} {'by':<12} {'ratio':>6} "
        f"{'mqm-exact':>9} {'grp-dp':>7} {'attack':>7}"
    )
    names = ("--mechanism", "optimal,optimal-set,mqm-approx,mqm-exact,group-dp")
    ids = ("id", "t", "state")
    binary = np.array([[0.85, 0.15], [0.25, 0.75]])
    with tempfile.TemporaryDirectory() as tmp:
        for length in (20, 100) if opts.quick else (20, 100, 400, 1000):
            path = Path(tmp) / f"b{length}.csv"
            _walks(path, binary, 2000, length, length)
            _row(f"binary T = {length}", _args(str(path), ids, "s1", *names), str(length))
        out = Path(tmp) / "released.csv"
        release = ["markov", "release", *_args(str(path), ids, "s1", "--epsilon", "1", "--output", str(out))]
        seconds, peak, _ = cli_runs(release, 1)
        report = json.loads(out.with_name("released.report.json").read_text())
        scale = report["scales"][str(length)]["calibrated"]
        by = report["mechanism"]
        print(f"binary T = {length} release (default): {seconds:.1f} s, {peak:.0f} MiB, {by} {scale:.4f}")
        if opts.quick:
            return
        for k in (3, 4):
            path = Path(tmp) / f"k{k}.csv"
            m = np.full((k, k), 0.1 / (k - 1)) + np.eye(k) * (0.9 - 0.1 / (k - 1))
            _walks(path, m, 2000, 100, k)
            _row(f"{k} states T = 100", _args(str(path), ids, "s1", *names), "100")
        activity = _args("activity", ("day", "slot", "activity"), "work", *names)
        _row("activity (8 states, T = 144)", activity, "144")
        mvad = _args("mvad", ("id", "month", "activity"), "joblessness", *names)
        _row("mvad (6 states, T = 72)", mvad, "72")
        big = Path(tmp) / "s500.csv"
        rng = np.random.default_rng(0)
        with big.open("w") as f:
            f.write("id,t,state\n")
            for p in range(400):
                x = int(rng.integers(500))
                for t in range(20):
                    f.write(f"{p},{t},s{x}\n")
                    x = (x + int(rng.integers(-2, 3))) % 500
        args = ["markov", "calibrate", *_args(str(big), ids, "s3", "--epsilon", "1", "--json")]
        seconds, peak, out = cli_runs(args, 1)
        listed = json.loads(out)["prior_set"]["moves_listed"]
        print(f"500 states T = 20 (defaults): {seconds:.1f} s, {peak:.0f} MiB, moves listed {listed}")
        long = Path(tmp) / "long.csv"
        _walks(long, np.array([[0.9, 0.1], [0.1, 0.9]]), 3, 20000, 1)
        exe = Path(sys.executable).with_name("pufferfish")
        t0 = time.perf_counter()
        cmd = [str(exe), "markov", "calibrate", *_args(str(long), ids, "s1", "--epsilon", "1")]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        said = (done.stdout + done.stderr).strip().splitlines()
        took = time.perf_counter() - t0
        print(f"T = 20,000: exit {done.returncode} in {took:.1f} s, {len(said)} line(s): {said[-1]}")


if __name__ == "__main__":
    main()
