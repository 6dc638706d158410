"""Time and peak memory of `pufferfish calibrate` and `release` on a categorical column of 10,000
labels (issue 34: 202 s and 18.3 GB before), and the memory of the dense mappings per entry.

Run: ``python benchmarks/bench_labels.py [LABELS] [ROWS] [--repeats N]`` (default 10,000 labels,
200,000 rows, 3 repeats). Writes a CSV into a temporary folder: a secret ``s`` in {A, B} and a
label ``v`` (``L00000`` ...; every label appears, B's labels shifted by 0..49). Each command runs
in a fresh process (``python -m pufferfish.cli.app``-like entry through :data:`pufferfish.cli.app.app`);
the script prints the median wall time and the largest peak resident memory of that process
(``resource.getrusage(RUSAGE_CHILDREN)`` of a child that runs only that command). Targets: calibrate
(every mechanism that runs) <= 30 s and <= 2 GiB; release <= 15 s and <= 1 GiB.

``--lp`` measures instead the default release of 50, 100, 200, 500 and 1,000 labels x 20,000
rows (issue 44: 1,000 labels were killed at 20.7 GiB, 200 took 315 s): time, peak memory (this
process or the LP's child), the mapping chosen and its expected accuracy.

``--dense`` also measures the dense mappings (``geometric``, ``optimal-mapping``) at 300 and
1,000 labels: the bytes per matrix entry behind their "needs about N GiB" rows
(:data:`pufferfish.calibration.mapping._BYTES_PER_ENTRY`).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import machine

_CHILD = """
import resource, sys
from pufferfish.cli.app import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:  # the largest of this process and its children (the mapping LP runs in one)
    peak = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"PEAK_KB {peak}", file=sys.stderr)
"""

_DENSE = """
import resource, sys, numpy as np
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.scenario import Scenario
from pufferfish.calibration import calibrate_mapping
k, mech = int(sys.argv[1]), sys.argv[2]
gen = np.random.default_rng(0)
a = np.arange(k, dtype=float)
sc = Scenario.single(DiscretePrior(a, gen.dirichlet(np.ones(k))), DiscretePrior(a, gen.dirichlet(np.ones(k))))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
calibrate_mapping(sc, 1.0, mech)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024 / k**2)
"""


def write_labels(path: Path, labels: int, rows: int) -> None:
    gen = np.random.default_rng(0)
    codes = gen.integers(0, labels, rows)
    codes[:labels] = np.arange(labels)
    secret = gen.choice(np.array(["A", "B"]), rows)
    shifted = np.minimum(codes + gen.integers(0, 50, rows), labels - 1)
    codes = np.where(secret == "A", codes, shifted)
    codes[:labels] = np.arange(labels)
    with path.open("w") as fh:
        fh.write("s,v\n")
        fh.writelines(f"{s},L{c:05d}\n" for s, c in zip(secret, codes, strict=True))


def run(args: list[str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK_KB")]
    if proc.returncode != 0 or not peak:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr[-2000:]}")
    return seconds, int(peak[-1].split()[1]), proc.stdout


def lp_sizes() -> None:
    """The default release of a categorical column of 50 to 1,000 labels (``--lp``)."""
    import json

    print(machine())
    print("default release (DKW 95% set), 20,000 rows, one run each (a fresh process)")
    with tempfile.TemporaryDirectory() as folder:
        for labels in (50, 100, 200, 500, 1000):
            src = Path(folder) / f"l{labels}.csv"
            write_labels(src, labels, 20_000)
            out = str(Path(folder) / f"o{labels}.csv")
            cmd = ["release", str(src), "--secret", "s", "--public", "v", "--pair", "A,B", "--epsilon", "1",
                   "--output", out, "--json"]  # fmt: skip
            seconds, peak, text = run(cmd)
            report = json.loads(text)
            chosen = report["chosen"]
            lp = next(
                (
                    m
                    for m in report["mechanisms"]
                    if m.get("mechanism") == "optimal-mapping" and m.get("reason")
                ),
                None,
            )
            why = f"; optimal-mapping {lp['reason'][:40]}..." if lp else ""
            print(
                f"{labels:5d} labels: {seconds:6.1f} s, peak {peak / 1024:5.0f} MiB, {chosen['mechanism']}, "
                f"expected accuracy {chosen['expected_accuracy']:.4f}{why}"
            )


def main() -> None:
    if "--lp" in sys.argv:
        lp_sizes()
        return
    argv = sys.argv[1:]
    if "--repeats" in argv:
        del argv[argv.index("--repeats") + 1]
    args = [a for a in argv if not a.startswith("--")]
    labels = int(float(args[0])) if args else 10_000
    rows = int(float(args[1])) if len(args) > 1 else 200_000
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 3
    print(machine())
    print(f"labels: {labels:,}, rows: {rows:,}, repeats: {repeats} (median time, largest peak memory)")
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "labels.csv"
        write_labels(src, labels, rows)
        base = ["--secret", "s", "--public", "v", "--pair", "A,B", "--epsilon", "1"]
        out_dkw, out_none = str(Path(folder) / "o.csv"), str(Path(folder) / "p.csv")
        every = ["--mechanism", "all"]
        cases = [
            ("calibrate, all mechanisms, DKW set (default)", ["calibrate", str(src), *base, *every]),
            ("calibrate, all mechanisms, --prior-set none",
             ["calibrate", str(src), *base, *every, "--prior-set", "none"]),
            ("calibrate, default (the mappings)", ["calibrate", str(src), *base]),
            ("release, default (DKW set)", ["release", str(src), *base, "--output", out_dkw, "--force"]),
            ("release, --prior-set none",
             ["release", str(src), *base, "--output", out_none, "--prior-set", "none", "--force"]),
        ]  # fmt: skip
        for name, cmd in cases:
            times, peaks = [], []
            out = ""
            for _ in range(repeats):
                seconds, peak, out = run(cmd)
                times.append(seconds)
                peaks.append(peak)
            lines = len(out.splitlines())
            print(
                f"{name}: {statistics.median(times):.2f} s, peak {max(peaks) / 1024:.0f} MiB, "
                f"{lines} lines of output"
            )
    if "--dense" in sys.argv:
        for mech in ("geometric", "optimal-mapping"):
            for k in (300, 1000):
                proc = subprocess.run([sys.executable, "-c", _DENSE, str(k), mech], capture_output=True,
                                      text=True, check=True)  # fmt: skip
                print(f"{mech} at {k} labels: {float(proc.stdout):.0f} bytes per matrix entry (peak growth)")


if __name__ == "__main__":
    main()
