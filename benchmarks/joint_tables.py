"""Several public columns calibrated jointly (issues 17, 31): every mechanism's scale and exact
check on two real tables, at eps 0.5 and 1, with the time each calibration took.

* Adult (shipped): ``--public age,hours-per-week --secret sex --pair Male,Female``, on the point
  estimate with units 1 (the figures of issue 17), then with the defaults (units = the columns'
  ranges, the 95% L1 balls of the dkw default), and ``--public workclass,age`` (a categorical
  column released by randomized response) with the defaults.
* Diabetes (Efron et al. 2004, 442 patients, shipped with scikit-learn as
  ``load_diabetes(scaled=False)``): secret ``sex`` (coded 1 / 2 in the data), public
  ``bmi,bp`` (body-mass index, mean blood pressure), point estimate, units 1.

Run: ``python benchmarks/joint_tables.py`` (writes ``benchmarks/results/joint_tables.md``).
"""

from __future__ import annotations

import time
from pathlib import Path

from sklearn.datasets import load_diabetes

from pufferfish.calibration import Calibration, Skipped
from pufferfish.pipeline.calibrate import calibrate_table
from pufferfish.priors.sets import set_label

OUT = Path(__file__).parent / "results" / "joint_tables.md"


def _rows(title: str, table: object, seconds: float) -> list[str]:
    lines = [f"## {title}", "", f"calibration (both epsilons, every mechanism): {seconds:.1f} s", ""]
    sizes = ", ".join(f"{s}: {p.size}" for s, p in table.priors().items())  # type: ignore[attr-defined]
    lines += [f"distinct tuples per secret: {sizes}", ""]
    lines += [
        "| eps | mechanism | priors | noise | scale | checked | decided by |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in table.comparison:  # type: ignore[attr-defined]
        if isinstance(c, Skipped):
            lines.append(f"| {c.epsilon:g} | {c.mechanism} | - | - | - | - | not used: {c.reason} |")
            continue
        assert isinstance(c, Calibration)
        if c.not_checked is not None:
            checked = "not numerically checked"
        elif c.checked_loss is not None:
            checked = f"loss {c.checked_loss:.6f}"
        else:
            checked = f"delta {c.checked_delta:.3g}"
        lines.append(
            f"| {c.epsilon:g} | {c.mechanism} | {set_label(c.prior_set)} | {c.noise} | {c.scale:.6g} "
            f"| {checked} | {c.decided_by} |"
        )
    return [*lines, ""]


def main() -> None:
    out = ["# Several public columns calibrated jointly", ""]
    point = dict(prior_set="none", epsilon=[0.5, 1.0])
    cases = [
        ("Adult: age, hours-per-week | sex (Male vs Female), point estimate, units 1",
         dict(data="adult", secret="sex", public="age,hours-per-week", pairs=["Male,Female"],
              units=["age=1", "hours-per-week=1"], **point)),
        ("Adult: age, hours-per-week | sex, defaults (units = ranges, 95% L1 balls)",
         dict(data="adult", secret="sex", public="age,hours-per-week", pairs=["Male,Female"],
              epsilon=[0.5, 1.0])),
        ("Adult: workclass, age | sex, defaults (workclass by randomized response, 95% L1 balls)",
         dict(data="adult", secret="sex", public="workclass,age", pairs=["Male,Female"], epsilon=[0.5, 1.0])),
    ]  # fmt: skip
    for title, args in cases:
        t0 = time.perf_counter()
        table = calibrate_table(args.pop("data"), **args)  # type: ignore[arg-type]
        out += _rows(title, table, time.perf_counter() - t0)
    try:
        calibrate_table("adult", secret="sex", public="age,hours-per-week", pairs=["Male,Female"],
                              epsilon=1.0, noise="gaussian", delta=1e-6)  # fmt: skip
    except ValueError as exc:
        out += ["## Adult, Gaussian noise at delta 1e-6", "", f"refused: {exc}", ""]
    frame = load_diabetes(scaled=False, as_frame=True).frame
    frame["sex"] = frame["sex"].map({1.0: "1", 2.0: "2"})
    t0 = time.perf_counter()
    diabetes = calibrate_table(
        frame,
        secret="sex",
        public="bmi,bp",
        pairs=["1,2"],
        units=["bmi=1", "bp=1"],
        **point,  # type: ignore[arg-type]
    )
    out += _rows(
        "Diabetes: bmi, bp | sex (1 vs 2), point estimate, units 1", diabetes, time.perf_counter() - t0
    )
    text = "\n".join(out)
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
