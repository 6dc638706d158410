"""Releasing more than once (issue 42): ``pufferfish ledger show`` over 10 releases of Adult
columns, and a release calibrated against a ledger of 5 releases (the bounds of the issue: <= 30 s
and <= 2 GiB; <= 60 s).

Each figure is a fresh process (:func:`_timing.cli_runs`: median wall time, peak resident memory).
Secret ``sex``, pair (Male, Female), every release at eps 0.5, the secure sampler.

* ``show/sets``: 10 releases under the default prior sets (race x4, relationship x3, income x3,
  each by ``optimal-mapping``); the joint check runs over the L1 balls on the joint alphabet.
* ``show/estimate``: the same 10 releases at the point estimate (``--prior-set none``).
* ``show/columns``: 10 releases of 10 different columns (the exact check is then too large: the
  line says which rule answered instead).
* ``calibrate``: a ledger of 5 releases at the estimate (age by ``optimal``; race x2,
  relationship and income by ``optimal-mapping``), then ``release --public age --budget B`` with B
  their joint eps + 0.25: the scale of the new release searched against the ledger.

Run: ``python benchmarks/bench_ledger.py [REPEATS]`` (default 3).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _timing import cli_runs, machine

COMMON = ["--secret", "sex", "--pair", "Male,Female", "--epsilon", "0.5"]


def _release(folder: Path, book: Path, i: int, public: str, *extra: str) -> None:
    cli_runs(["release", "adult", "--public", public, *COMMON, "--output", str(folder / f"r{i}.csv"),
              "--ledger", str(book), *extra], 1)  # fmt: skip


def _show(book: Path, repeats: int) -> tuple[float, float, dict]:
    seconds, mib, out = cli_runs(["ledger", "show", str(book), "--json"], repeats)
    (together,) = json.loads(out)["together"]
    return seconds, mib, together


def _line(together: dict) -> str:
    if together["epsilon"] is None:
        return f"no guarantee together ({together['detail']})"
    return f"eps {together['epsilon']:.6g} together by the {together['rule']} ({together['priors']})"


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plans = {
            "show/sets": (["race"] * 4 + ["relationship"] * 3 + ["income"] * 3, []),
            "show/estimate": (["race"] * 4 + ["relationship"] * 3 + ["income"] * 3, ["--prior-set", "none"]),
            "show/columns": (["age", "race", "relationship", "income", "workclass", "education",
                              "marital-status", "occupation", "hours-per-week", "native-country"],
                             ["--prior-set", "none"]),
        }  # fmt: skip
        for name, (columns, extra) in plans.items():
            book = folder / f"{name.replace('/', '-')}.sqlite"
            for i, col in enumerate(columns):
                mech = ["--mechanism", "optimal"] if col in ("age", "hours-per-week") else []
                _release(folder, book, i, col, *mech, *extra, "--force")
            seconds, mib, together = _show(book, repeats)
            print(f"{name}: {len(columns)} releases, ledger show {seconds:.2f} s, peak {mib:.0f} MiB")
            print(f"  {_line(together)}; the epsilons add up to {together['sum_of_epsilons']:g}")
        book = folder / "calibrate.sqlite"
        five = [
            ("age", ["--mechanism", "optimal"]),
            ("race", []),
            ("race", []),
            ("relationship", []),
            ("income", []),
        ]
        for i, (col, mech) in enumerate(five):
            _release(folder, book, i, col, *mech, "--prior-set", "none", "--force")
        before = _show(book, 1)[2]["epsilon"]
        budget = f"{before + 0.25:.4f}"
        runs = []
        for r in range(repeats):  # each run on a fresh copy of the ledger of 5 releases
            copy = folder / f"calibrate-{r}.sqlite"
            shutil.copy(book, copy)
            args = [
                "release",
                "adult",
                "--public",
                "age",
                *COMMON,
                "--mechanism",
                "optimal",
                "--prior-set",
                "none",
            ]
            out_args = [
                "--output",
                str(folder / "new.csv"),
                "--ledger",
                str(copy),
                "--budget",
                budget,
                "--force",
            ]
            runs.append(cli_runs([*args, *out_args], 1))
        seconds, mib, out = statistics.median(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]
        ledger_line = next((line for line in out.splitlines() if line.startswith("ledger ")), "")
        if not ledger_line:
            raise SystemExit(f"the release against the ledger failed:\n{out[-1500:]}")
        print(
            f"calibrate: 5 releases together at eps {before:.6g}; release --public age --budget {budget} "
            f"(their eps + 0.25): {seconds:.2f} s, peak {mib:.0f} MiB"
        )
        print(f"  {' '.join(ledger_line.split())}")
        print(f"  {next(line for line in out.splitlines() if 'scale' in line and 'optimal' in line)}")


if __name__ == "__main__":
    main()
