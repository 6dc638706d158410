"""Time and peak memory of the default confidence set of `pufferfish markov` (issue 43).

Run: ``python benchmarks/bench_markov_set.py [--repeats N]``. Each case runs the command line in
a fresh process (through :data:`pufferfish.cli.app.app`) and prints the median wall time over
``--repeats`` runs (default 1) and the largest peak resident memory of those processes
(``ru_maxrss`` of the child). The target of issue 43: <= 2 minutes and <= 2 GiB on an activity
log of 28 days x 144 steps with 8 states.

* ``activity``: the shipped SYNTHETIC log (28 days x 144 ten-minute steps, 8 activities; 267
  chains in the default ``l1-rows`` set), ``markov calibrate`` with the defaults (every mechanism
  but the per-pair transport ones, which a class of more than 16 chains leaves out unless named),
  and ``markov release`` (its default: the smallest scale certified over the set);
* ``mvad``: the shipped school-to-work sequences (712 people x 72 months, 6 states; 171 chains),
  ``markov calibrate`` with the defaults.

The scale printed is the command's own (``--json`` or the release's report), with the number of
chains it was checked on.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _timing import cli_runs, machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    opts = parser.parse_args()
    print(machine())
    print(f"{'case':<44} {'median s':>9} {'peak MiB':>9} {'chains':>7} {'scale':>9}")
    activity = ["activity", "--id", "day", "--time", "slot", "--state", "activity", "--target-state", "work"]
    mvad = ["mvad", "--id", "id", "--time", "month", "--state", "activity", "--target-state", "joblessness"]
    for name, data, length in (
        ("activity calibrate (defaults)", activity, "144"),
        ("mvad calibrate (defaults)", mvad, "72"),
    ):
        seconds, peak, out = cli_runs(
            ["markov", "calibrate", *data, "--epsilon", "1", "--json"], opts.repeats
        )
        got = json.loads(out)
        (opt,) = [r for r in got["results"][length] if r["mechanism"] == "optimal"]
        print(f"{name:<44} {seconds:>9.1f} {peak:>9.0f} {got['chains_checked']:>7} {opt['scale']:>9.4f}")
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "released.csv"
        args = ["markov", "release", *activity, "--epsilon", "1", "--output", str(output), "--force"]
        seconds, peak, _ = cli_runs(args, opts.repeats)
        report = json.loads(output.with_name("released.report.json").read_text())
        scale = report["scales"]["144"]["calibrated"]
        name = f"activity release (default: {report['mechanism']})"
        print(f"{name:<44} {seconds:>9.1f} {peak:>9.0f} {report['chains_checked']:>7} {scale:>9.4f}")


if __name__ == "__main__":
    main()
