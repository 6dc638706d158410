"""What an HTML report costs beside the release it describes (issue 46), whole processes.

Run: ``python benchmarks/bench_report.py [--repeats N]`` (default 3). Writes scikit-learn's
diabetes table (``load_diabetes(scaled=False)``, 442 rows; secret ``sex``, pair 1.0 vs 2.0) to a
CSV in a temporary folder, then runs ``pufferfish release`` of two numeric columns (``age,bmi``,
the several-column path, the default L1 balls) and of one column (``bmi``) at eps 1, and the
README's main job (Adult ``workclass`` as labels), each without and with ``--report``, in fresh
processes (median wall time and largest peak memory of N runs each). Prints the report's cost
(with minus without) against the release alone. Issue 46's goal: a report costs at most as much
as the release it describes.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _timing import cli_runs, machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    from sklearn.datasets import load_diabetes

    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "diabetes.csv"
        load_diabetes(scaled=False, as_frame=True).frame.to_csv(data, index=False)
        print(f"{'columns':<10} {'release (s)':>12} {'with report (s)':>16} {'report (s)':>11} "
              f"{'report / release':>17} {'peak MiB':>9}")  # fmt: skip
        main_job = ["release", "adult", "--secret", "marital-status", "--pair",
                    "Married-civ-spouse,Never-married", "--public", "workclass", "--epsilon", "0.5",
                    "--force"]  # fmt: skip
        cases = [
            (columns, ["release", str(data), "--secret", "sex", "--pair", "1.0,2.0", "--public", columns,
                       "--epsilon", "1", "--force"])
            for columns in ("age,bmi", "bmi")
        ] + [("main job", main_job)]  # fmt: skip
        for columns, base in cases:
            plain, peak_plain, _ = cli_runs([*base, "--output", str(folder / "out.csv")], opts.repeats)
            both, peak_both, _ = cli_runs(
                [*base, "--output", str(folder / "out2.csv"), "--report", str(folder / "r.html")],
                opts.repeats,
            )
            report = both - plain
            print(f"{columns:<10} {plain:>12.2f} {both:>16.2f} {report:>11.2f} {report / plain:>17.2f} "
                  f"{max(peak_plain, peak_both):>9.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
