"""Issue 16's table on Adult: workclass given marital-status (Married-civ-spouse vs
Never-married; a missing cell the ninth label, issue 41), eps 0.1 / 0.5 / 1, every mechanism
that applies, with its checked loss, expected accuracy and mean absolute error (codes) over the
released rows; for the point estimate (``--prior-set none``) and for the 95% DKW sets (the
default); ``optimal-mapping`` for the two utilities of labels: ``accuracy`` and ``shares``
(accuracy keeping each label's expected share of the output, the default since issue 32).

Run: ``python benchmarks/mapping_tables.py`` (prints Markdown tables).
"""

from __future__ import annotations

import time

from pufferfish.calibration import MECHANISMS, MappingCalibration, Skipped
from pufferfish.pipeline.calibrate import calibrate_table


def main() -> None:
    for prior_set in ("none", "dkw"):
        t = time.perf_counter()
        table = calibrate_table(
            "adult", secret="marital-status", public="workclass", mechanisms=list(MECHANISMS),
            pairs=["Married-civ-spouse,Never-married"], epsilon=[0.1, 0.5, 1.0], prior_set=prior_set,
            utility="accuracy",
        )  # fmt: skip
        shares = calibrate_table(
            "adult", secret="marital-status", public="workclass", mechanisms=["optimal-mapping"],
            pairs=["Married-civ-spouse,Never-married"], epsilon=[0.1, 0.5, 1.0], prior_set=prior_set,
            utility="shares",
        )  # fmt: skip
        took = time.perf_counter() - t
        label = "point estimate" if prior_set == "none" else "95% DKW sets"
        print(f"\n### {label} (calibrate_table: {took:.1f} s)\n")
        print("| eps | mechanism | priors | scale / parameter | checked loss | accuracy | mean abs error |")
        print("|---|---|---|---|---|---|---|")
        for c in (*table.comparison, *shares.comparison):
            if isinstance(c, Skipped):
                continue
            if isinstance(c, MappingCalibration):
                what = "-" if c.parameter is None else f"{c.parameter:.6g}"
            else:
                what = f"{c.noise} {c.scale:.6g}"
            checked = (
                f"{c.checked_loss:.6g}"
                if c.checked_loss is not None
                else f"I = {c.checked_information:.4g} (eps-MI)"  # type: ignore[union-attr]
            )
            kind = "estimate only" if c.prior_set is None else f"{c.prior_set['kind']} set"
            name = c.mechanism + (" (shares)" if getattr(c, "utility", "") == "shares" else "")
            print(
                f"| {c.epsilon:g} | {name} | {kind} | {what} | {checked} | "
                f"{c.expected_accuracy:.4f} | {c.expected_abs_error:.4f} |"
            )


if __name__ == "__main__":
    main()
