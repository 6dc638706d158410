"""Several public columns calibrated jointly (issue 17): every mechanism's scale and exact check
on two real tables, at eps 0.5 and 1, with the time each calibration took.

* Adult (shipped): ``--public age,hours-per-week --secret sex --pair Male,Female``.
* Diabetes (Efron et al. 2004, 442 patients, shipped with scikit-learn as
  ``load_diabetes(scaled=False)``): secret ``sex`` (coded 1 / 2 in the data), public
  ``bmi,bp`` (body-mass index, mean blood pressure), units 1.

Run: ``python benchmarks/joint_tables.py`` (writes ``benchmarks/results/joint_tables.md``).
"""

from __future__ import annotations

import time
from pathlib import Path

from sklearn.datasets import load_diabetes

from pufferfish.calibration import Calibration, Skipped
from pufferfish.joint_table import calibrate_joint_table

OUT = Path(__file__).parent / "results" / "joint_tables.md"


def _rows(title: str, table: object, seconds: float) -> list[str]:
    lines = [f"## {title}", "", f"calibration (both epsilons, every mechanism): {seconds:.1f} s", ""]
    sizes = ", ".join(f"{s}: {p.size}" for s, p in table.priors().items())  # type: ignore[attr-defined]
    lines += [f"distinct tuples per secret: {sizes}", ""]
    lines += ["| eps | mechanism | noise | scale | checked | decided by |", "|---|---|---|---|---|---|"]
    for c in table.comparison:  # type: ignore[attr-defined]
        if isinstance(c, Skipped):
            lines.append(f"| {c.epsilon:g} | {c.mechanism} | - | - | - | not used: {c.reason} |")
            continue
        assert isinstance(c, Calibration)
        if c.not_checked is not None:
            checked = "not numerically checked"
        elif c.checked_loss is not None:
            checked = f"loss {c.checked_loss:.6f}"
        else:
            checked = f"delta {c.checked_delta:.3g}"
        lines.append(
            f"| {c.epsilon:g} | {c.mechanism} | {c.noise} | {c.scale:.6g} | {checked} | {c.decided_by} |"
        )
    return [*lines, ""]


def main() -> None:
    out = ["# Several public columns calibrated jointly", ""]
    t0 = time.perf_counter()
    adult = calibrate_joint_table(
        "adult", secret="sex", public="age,hours-per-week", pairs=["Male,Female"], epsilon=[0.5, 1.0]
    )
    out += _rows(
        "Adult: age, hours-per-week | sex (Male vs Female), Laplace", adult, time.perf_counter() - t0
    )
    t0 = time.perf_counter()
    adult_g = calibrate_joint_table(
        "adult", secret="sex", public="age,hours-per-week", pairs=["Male,Female"], epsilon=[0.5, 1.0],
        noise="gaussian", delta=1e-6,
        mechanisms=["kantorovich-gaussian", "analytic-gaussian", "mi-gaussian", "optimal"],
    )  # fmt: skip
    out += _rows("Adult, Gaussian noise at delta 1e-6", adult_g, time.perf_counter() - t0)
    frame = load_diabetes(scaled=False, as_frame=True).frame
    frame["sex"] = frame["sex"].map({1.0: "1", 2.0: "2"})
    t0 = time.perf_counter()
    diabetes = calibrate_joint_table(frame, secret="sex", public="bmi,bp", pairs=["1,2"], epsilon=[0.5, 1.0])
    out += _rows("Diabetes: bmi, bp | sex (1 vs 2), Laplace", diabetes, time.perf_counter() - t0)
    text = "\n".join(out)
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
