"""Robust optimal scales (issue 15) on two real tables besides Adult, shipped with scikit-learn.

Run: ``python benchmarks/robust_tables.py``. Writes each table to a temporary CSV and runs
:func:`pufferfish.pipeline.calibrate.calibrate_table` with ``prior_set`` none / dkw / l1 (confidence 0.95)
at eps = 0.5 and 1, printing the optimal Laplace scale, the set radii and the time:

* the diabetes study of Efron et al. (2004) (``sklearn.datasets.load_diabetes(scaled=False)``,
  442 patients): secret ``sex`` (1 vs 2), public ``age`` in years (58 values) and ``bmi``
  (163 values);
* the Wisconsin diagnostic breast cancer data (``load_breast_cancer``, 569 tumours): secret
  ``target`` (malignant 0 vs benign 1), public ``mean radius`` (456 values).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from sklearn.datasets import load_breast_cancer, load_diabetes

from pufferfish.calibration import Calibration
from pufferfish.pipeline.calibrate import calibrate_table

CASES = (
    ("diabetes", "sex", ("1.0", "2.0"), "age"),
    ("diabetes", "sex", ("1.0", "2.0"), "bmi"),
    ("breast-cancer", "target", ("0", "1"), "mean radius"),
)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "diabetes": Path(tmp) / "diabetes.csv",
            "breast-cancer": Path(tmp) / "breast_cancer.csv",
        }
        load_diabetes(as_frame=True, scaled=False).frame.to_csv(files["diabetes"], index=False)
        load_breast_cancer(as_frame=True).frame.to_csv(files["breast-cancer"], index=False)
        head = ("table", "public", "k", "set", "radius", "eps 0.5", "eps 1", "s")
        print("{:<15} {:<12} {:>4} {:<5} {:<22} {:>9} {:>9} {:>6}".format(*head))
        for name, secret, pair, public in CASES:
            for kind in ("none", "dkw", "l1"):
                t0 = time.perf_counter()
                table = calibrate_table(
                    files[name],
                    secret=secret,
                    public=public,
                    pairs=[pair],
                    epsilon=[0.5, 1.0],
                    mechanisms=["optimal"],
                    prior_set=kind,
                )
                seconds = time.perf_counter() - t0
                rows = [
                    c
                    for c in table.comparison
                    if isinstance(c, Calibration) and (c.prior_set or {"kind": "none"})["kind"] == kind
                ]
                radius = ", ".join(
                    f"{r:.3g}" for r in (rows[0].prior_set or {"radius": {}})["radius"].values()
                )
                k = table.estimated.support.size
                print(
                    f"{name:<15} {public:<12} {k:>4} {kind:<5} {radius or '-':<22} "
                    f"{rows[0].scale:>9.4g} {rows[1].scale:>9.4g} {seconds:>6.2f}"
                )


if __name__ == "__main__":
    main()
