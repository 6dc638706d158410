"""Random audit of everything a release writes (issue 54): random small tables, random releases
(one or several columns, numbers with missing cells, labels with missing cells, kept columns,
unchecked columns, declared bounds with imputation, prior sets), each compared with independent
brute forces that import nothing of pufferfish (``tests/oracle_file.py``: the loss of the whole
written file at the estimate; ``tests/oracle_ledger.py``: the joint loss of a ledger's releases).

For each release:

* no column kept outside the check: the written file's loss at the estimate must be <= epsilon
  (the estimate is in every prior set the release is certified for);
* with unchecked columns: the figure the release states for the whole record must not be below
  the brute force (or none is stated, with its reason);
* with a ledger (two or three releases about one secret, at the estimate or over the L1 balls of
  the joint alphabet): the ledger's figure must not be below the brute-force joint loss of every
  release recorded (over the balls, the oracle's exact knapsack at each record).

usage: python scripts/audit_leaks.py [--tables N] [--seed S] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import oracle_file
import oracle_ledger
import pufferfish

PAIR = ("A", "B")
TOL = 1e-9


def random_table(g: np.random.Generator) -> pd.DataFrame:
    """A table with a secret (A, B, C, some missing), numbers x and y with missing cells at rates
    that may differ by secret, labels c with missing cells, a kept label k, an unchecked u."""
    n = int(g.integers(150, 400))
    s = g.choice(["A", "B", "C"], n, p=[0.45, 0.45, 0.1]).astype(object)
    s[g.random(n) < 0.03] = None
    shift = g.integers(0, 3)
    x = np.where(s == "A", g.integers(0, 6, n), g.integers(shift, 6 + shift, n)).astype(float)
    base = g.choice([0.0, 0.05, 0.1])  # the same rate for A and B most of the time (else refused)
    rates = {"A": base, "B": base if g.random() < 0.7 else g.choice([0.0, 0.05, 0.1]), "C": 0.2}
    x[[g.random() < rates.get(v, 0.1) for v in s]] = np.nan
    y = g.integers(0, 4, n).astype(float)
    y[g.random(n) < g.choice([0.0, 0.05])] = np.nan
    c = g.choice(["p", "q", "r"], n).astype(object)
    c[g.random(n) < g.choice([0.0, 0.08])] = None
    k = np.where(g.random(n) < 0.5, "u", "v")
    kind = g.integers(0, 3)
    if kind == 0:  # independent of everything
        u = g.choice(["U0", "U1"], n)
    elif kind == 1:  # depends on the secret alone
        u = np.where((s == "A") ^ (g.random(n) < 0.3), "U1", "U0")
    else:  # independent of s and of c alone, not of the pair (the XOR of issue 54)
        u = np.where((c == "p") ^ (s == "B"), "U1", "U0")
    return pd.DataFrame({"s": s, "x": x, "y": y, "c": c, "k": k, "u": u, "id": np.arange(n)})


def random_release(g: np.random.Generator) -> dict:
    """The arguments of one release (besides the table and the output)."""
    public = str(g.choice(["x", "c", "x,c", "x,y", "c,y"]))
    args: dict = {"public": public, "epsilon": float(g.choice([0.5, 1.0, 2.0]))}
    if g.random() < 0.5:
        args["prior_set"] = "none"
    if public in ("x", "x,c") and g.random() < 0.3:
        args["bounds"] = "0,8"
    if g.random() < 0.25:
        args["keep"] = "k"
    if g.random() < 0.35:
        args["keep_unchecked"] = str(g.choice(["u", "u", "u", "u,id"]))
    return args


def imputed(frame: pd.DataFrame, report: dict) -> pd.DataFrame:
    """The table as the release read it: a missing number imputed where it was (the oracle
    applies the channel to the values)."""
    inputs = report["inputs"]
    if inputs.get("missing") != "impute":
        return frame
    lo, hi = inputs["bounds"]
    out = frame.copy()
    cols = inputs.get("columns") or [inputs.get("public")]
    for col in cols:
        if col in ("x", "y"):
            v = pd.to_numeric(out[col], errors="coerce").fillna(inputs["impute"]).clip(lo, hi)
            out[col] = v.map(lambda t: f"{t:g}")
    return out


def audit_release(work: Path, i: int, g: np.random.Generator) -> dict:
    df = random_table(g)
    src = work / f"t{i}.csv"
    df.to_csv(src, index=False)
    args = random_release(g)
    row = {"table": i, "rows": len(df), **args}
    try:
        seed = int(g.integers(1 << 30))
        res = pufferfish.release(src, secret="s", pairs=[PAIR], output=work / f"o{i}.csv", force=True,
                                 rng=seed, **args)  # fmt: skip
    except (ValueError, pufferfish.tables.source.DataError) as exc:  # a refusal is not a violation
        return row | {"refused": str(exc)[:160]}
    rep = res.report
    data = imputed(oracle_file.read_table(src), rep)
    loss = oracle_file.true_loss(data, rep, "s", [PAIR])[0]
    cols = rep.get("release", rep)["output_columns"]
    row |= {"file_loss": loss}
    if cols.get("kept_unchecked"):
        whole = cols["whole_record"]
        stated = whole["loss"]
        stated = math.inf if stated == "inf" else stated
        row |= {"stated": stated, "not_measured": whole.get("not_measured")}
        row["violation"] = stated is not None and stated < loss - TOL
        if "id" in args["keep_unchecked"]:  # an identifier: no figure, and the file tells every row apart
            row["violation"] |= stated is not None
    else:
        row["violation"] = loss > args["epsilon"] + TOL
    return row


def audit_ledger(work: Path, i: int, g: np.random.Generator) -> dict:
    df = random_table(g)
    src = work / f"l{i}.csv"
    df.to_csv(src, index=False)
    led = work / f"l{i}.led"
    rows = []
    prior_set = str(g.choice(["none", "none", "l1"]))  # the estimate, or L1 balls on the joint alphabet
    for r in range(int(g.integers(2, 4))):
        public = str(g.choice(["x", "c", "x,c", "y"]))
        eps = float(g.choice([0.5, 1.0, 2.0]))
        try:
            res = pufferfish.release(src, secret="s", public=public, pairs=[PAIR], epsilon=eps,
                                     prior_set=prior_set, output=work / f"l{i}_{r}.csv", ledger=led,
                                     force=True, rng=int(g.integers(1 << 30)))  # fmt: skip
        except (ValueError, pufferfish.tables.source.DataError) as exc:
            rows.append({"release": r, "refused": str(exc)[:160]})
            continue
        together = res.report["ledger"]["together"]
        bodies = [b for _, st, b in oracle_ledger.ledger_entries(led) if st == "done"]
        kinds = {}
        for b in bodies:
            for v in b["views"]:
                kinds[v["column"]] = v.get("read_as") or (
                    "numeric" if v["kind"] == "laplace" else "categorical"
                )
        radii = None
        if prior_set == "l1":  # the ledger's balls: the joint alphabet of the pair's rows, 95%, 2 secrets
            cols = list(dict.fromkeys(v["column"] for b in bodies for v in b["views"]))
            alphabet, _, sizes = oracle_ledger.priors(df, "s", cols, kinds, PAIR)
            radii = {s: oracle_ledger.l1_radius(sizes[s], len(alphabet), 0.95, 2) for s in PAIR}
        true = oracle_ledger.joint_loss(df, "s", bodies, kinds, PAIR, radii=radii)[0]
        figure = together["epsilon"]
        if together["rule"] == "release's own check":  # one release over its own set: not the balls'
            figure = None
        below = figure is not None and figure < true - 1e-7
        rows.append({"release": r, "public": public, "rule": together["rule"], "figure": figure, "true": true,
                     "prior_set": prior_set, "violation": below})  # fmt: skip
    return {"ledger": i, "releases": rows, "violation": any(r.get("violation") for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=600)
    parser.add_argument("--ledgers", type=int, default=100)
    parser.add_argument("--seed", type=int, default=54)
    parser.add_argument("--out", type=Path, default=None)
    a = parser.parse_args()
    g = np.random.default_rng(a.seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        releases = [audit_release(work, i, g) for i in range(a.tables)]
        ledgers = [audit_ledger(work, i, g) for i in range(a.ledgers)]
    done = [r for r in releases if "file_loss" in r]
    unchecked = [r for r in done if "stated" in r]
    figures = [x for ledger in ledgers for x in ledger["releases"] if "true" in x]
    summary = {
        "tables": a.tables,
        "released": len(done),
        "refused": a.tables - len(done),
        "with_missing_numbers": sum(1 for r in done if r["public"] in ("x", "x,c", "x,y")),
        "with_bounds_imputed": sum(1 for r in done if "bounds" in r),
        "with_kept": sum(1 for r in done if "keep" in r),
        "with_unchecked": len(unchecked),
        "unchecked_not_measured": sum(1 for r in unchecked if r["stated"] is None),
        "unchecked_file_loss_above_eps": sum(1 for r in unchecked if r["file_loss"] > r["epsilon"] + TOL),
        "violations_file": sum(1 for r in done if r["violation"]),
        "max_file_loss_over_eps_covered": max(
            (r["file_loss"] / r["epsilon"] for r in done if "stated" not in r), default=None
        ),
        "ledger_figures": len(figures),
        "ledger_figures_over_l1_balls": sum(1 for x in figures if x["prior_set"] == "l1"),
        "ledger_rules": {
            rule: sum(1 for x in figures if x["rule"] == rule) for rule in {x["rule"] for x in figures}
        },
        "violations_ledger": sum(1 for x in figures if x["violation"]),
        "seconds": round(time.perf_counter() - start, 1),
    }
    text = json.dumps(summary, indent=1)
    print(text)
    bad = [r for r in done if r["violation"]] + [x for x in figures if x["violation"]]
    for r in bad[:10]:
        print("VIOLATION", r)
    if a.out is not None:
        a.out.write_text(text + "\n")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
