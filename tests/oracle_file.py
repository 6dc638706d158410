"""Independent brute force of the loss of a release's whole written file (issue 54), from the
issue's reproducer ``shared/repro/leaks/oracle_pub.py`` (no pufferfish import).

Independent oracle: the TRUE pufferfish loss of what a release's written file reveals.

No pufferfish import. Inputs: the data table (CSV; empty field = missing), the release's JSON report
(`<output stem>.report.json` or the `--json` output) and the written file.

The written record of a row is every written column. Channels, read from the report:
  * several-column path (`release.column_noise`): numeric column -> Laplace(drawn scale) on the
    present value, a missing cell written missing (atom); categorical column -> k-ary randomized
    response over the report's labels (keep / other probability from the dyadic weights); a column
    kept with --keep -> identity (checked: keep probability 1); a --keep-unchecked column -> identity.
  * one categorical column (`chosen.matrix`, rows/cols in the order of `mapping`).
  * one numeric column (`noise.scale` / `chosen.scale`): Laplace on present values, missing -> atom.
P(record | s) = (1/n_s) sum_{rows of s} prod_k ch_k(y_k | x_k). The sup over y is taken on the
product grid (support values of each numeric column, its missing atom, every label), plus random
off-grid points as a sanity check. Returns the max |log ratio| over pairs and grid.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

GRID = 2.0**-30


def read_table(path, **kw):
    # skip_blank_lines=False: a one-column file writes a missing cell as an empty line
    return pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=str, skip_blank_lines=False, **kw)


def _is_num(series):
    try:
        pd.to_numeric(series.dropna())
        return True
    except Exception:
        return False


def _norm_label(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


class Col:
    """One written column's channel: values x (row-wise), output grid, log kernel."""

    def __init__(self, name, kind, xs, **kw):
        self.name, self.kind, self.xs = name, kind, xs
        self.kw = kw

    def grid(self, rng=None, extra=0):
        if self.kind == "laplace":
            pres = sorted({v for v in self.xs if v is not None})
            g = list(pres)
            if rng is not None and extra and pres:
                lo, hi = min(pres), max(pres)
                span = max(hi - lo, 1.0)
                g = list(rng.uniform(lo - span, hi + span, extra))
            if any(v is None for v in self.xs):
                g.append(None)
            return g
        if self.kind in ("rr", "matrix"):
            return list(self.kw["labels"])
        if self.kind == "identity":
            return sorted({v for v in self.xs}, key=lambda v: (v is None, str(v)))
        raise ValueError(self.kind)

    def logk(self, y):
        """log ch(y | x_i) for every row i (vector)."""
        n = len(self.xs)
        if self.kind == "laplace":
            b = self.kw["scale"]
            out = np.full(n, -np.inf)
            for i, v in enumerate(self.xs):
                if y is None:
                    out[i] = 0.0 if v is None else -np.inf
                elif v is not None:
                    if b == 0:
                        out[i] = 0.0 if v == y else -np.inf
                    else:
                        out[i] = -abs(y - v) / b - math.log(2 * b)
            return out
        if self.kind == "rr":
            p, q = self.kw["keep"], self.kw["other"]
            return np.array([math.log(p) if v == y else (math.log(q) if q > 0 else -np.inf) for v in self.xs])
        if self.kind == "matrix":
            idx = {lab: j for j, lab in enumerate(self.kw["labels"])}
            M = self.kw["matrix"]
            j = idx[y]
            with np.errstate(divide="ignore"):
                return np.array([math.log(M[idx[v]][j]) if M[idx[v]][j] > 0 else -np.inf for v in self.xs])
        if self.kind == "identity":
            return np.array([0.0 if v == y else -np.inf for v in self.xs])
        raise ValueError(self.kind)


def _round(v):
    return round(v / GRID) * GRID


def build_columns(df, rep, secret):
    """The written columns' channels from the report; returns (cols, notes)."""
    notes = []
    cols = []
    rel = rep.get("release")
    written = (rel or rep)["output_columns"]["written"]
    unchecked = (rel or rep)["output_columns"].get("kept_unchecked") or []
    unchecked = {u if isinstance(u, str) else u.get("column", u.get("name")) for u in unchecked}
    if rel is not None:  # several-column path
        cn = rel["column_noise"]
        labels = rep.get("labels", {})
        for c in written:
            if c in unchecked:
                cols.append(Col(c, "identity", [_norm_label(v) for v in df[c]]))
                continue
            spec = cn[c]
            if spec["kind"] == "laplace":
                xs = [None if pd.isna(v) else _round(float(v)) for v in df[c]]
                cols.append(Col(c, "laplace", xs, scale=spec["scale"]))
            elif spec["kind"] == "randomized-response":
                ch = rel["noise"]["columns"][c]["channel"]
                keep, other = ch["keep_weight"] / 2.0**52, ch["other_weight"] / 2.0**52
                labs = [_norm_label(v) for v in labels[c]]
                data_labs = sorted({_norm_label(v) for v in df[c]}, key=lambda v: (v is None, str(v)))
                if set(data_labs) - set(labs):
                    notes.append(f"{c}: data labels not in report labels: {set(data_labs) - set(labs)}")
                if abs(keep + (len(labs) - 1) * other - 1) > 1e-12:
                    notes.append(f"{c}: channel not stochastic")
                if keep == 1.0:
                    cols.append(Col(c, "identity", [_norm_label(v) for v in df[c]]))
                else:
                    cols.append(
                        Col(c, "rr", [_norm_label(v) for v in df[c]], labels=labs, keep=keep, other=other)
                    )
            else:
                raise ValueError(spec)
    else:
        pub = rep["inputs"]["columns"]
        assert len(pub) == 1
        c = pub[0]
        ch = rep["chosen"]
        for u in written:
            if u in unchecked:
                cols.append(Col(u, "identity", [_norm_label(v) for v in df[u]]))
        if ch.get("matrix") is not None and rep.get("mapping") is not None:
            labs = [_norm_label(m["label"]) for m in rep["mapping"]]
            cols.insert(
                0, Col(c, "matrix", [_norm_label(v) for v in df[c]], labels=labs, matrix=ch["matrix"])
            )
        else:
            scale = rep["noise"].get("scale")
            if scale is None:
                scale = ch["scale"]
            xs = [None if pd.isna(v) else _round(float(v)) for v in df[c]]
            cols.insert(0, Col(c, "laplace", xs, scale=scale))
    return cols, notes


def true_loss(df, rep, secret, pairs, *, weight=None, rng_extra=0, seed=0, only=None):
    """max over pairs and the output grid of |log P(y|a) - log P(y|b)| for the written record.
    `only`: restrict to these column names (e.g. the unchecked kept columns alone)."""
    cols, notes = build_columns(df, rep, secret)
    if only is not None:
        cols = [c for c in cols if c.name in only]
    sec = df[secret].map(_norm_label)
    w = np.ones(len(df)) if weight is None else df[weight].astype(float).to_numpy()
    rng = np.random.default_rng(seed)
    grids = [c.grid() for c in cols]
    best = (0.0, None, None)
    cache = {}
    for ci, c in enumerate(cols):
        for y in grids[ci]:
            cache[(ci, _key(y))] = c.logk(y)
    masks = {s: (sec == s).to_numpy() for pr in pairs for s in pr}
    logw = {s: np.log(w[m] / w[m].sum()) for s, m in masks.items()}

    def evaluate(ys, extra_cache=None):
        nonlocal best
        tot = np.zeros(len(df))
        for ci, y in enumerate(ys):
            lk = cache.get((ci, _key(y)))
            if lk is None:
                lk = cols[ci].logk(y)
            tot = tot + lk
        for a, b in pairs:
            la = _lse(tot[masks[a]] + logw[a])
            lb = _lse(tot[masks[b]] + logw[b])
            if la == -np.inf and lb == -np.inf:
                continue
            d = abs(la - lb) if np.isfinite(la) and np.isfinite(lb) else np.inf
            if d > best[0]:
                best = (d, (a, b), ys)

    for ys in itertools.product(*grids):
        evaluate(ys)
    if rng_extra:
        for _ in range(rng_extra):
            ys = []
            for ci, c in enumerate(cols):
                g = grids[ci]
                if c.kind == "laplace" and rng.random() < 0.8:
                    pres = [v for v in g if v is not None]
                    if pres:
                        lo, hi = min(pres), max(pres)
                        sp = max(hi - lo, 1.0)
                        ys.append(float(rng.uniform(lo - sp, hi + sp)))
                        continue
                ys.append(g[rng.integers(len(g))])
            evaluate(ys)
    return best[0], best[1], best[2], notes


def _key(y):
    return ("NA",) if y is None else y


def _lse(v):
    if v.size == 0:
        return -np.inf
    m = np.max(v)
    if m == -np.inf:
        return -np.inf
    return float(m + np.log(np.exp(v - m).sum()))


def identity_loss(df, cols, secret, pairs, num=()):
    """Loss of releasing `cols` as they are (numeric ones in `num`: only whether missing), at the
    empirical prior: max over tuples of |log P(t|a) - log P(t|b)|."""
    t = pd.DataFrame({c: (df[c].isna() if c in num else df[c].fillna("<NA>")) for c in cols})
    key = t.astype(str).agg("|".join, axis=1) if cols else pd.Series([""] * len(df))
    sec = df[secret].map(_norm_label)
    best = 0.0
    for a, b in pairs:
        pa = key[sec == a].value_counts(normalize=True)
        pb = key[sec == b].value_counts(normalize=True)
        for k in set(pa.index) | set(pb.index):
            x, y = pa.get(k, 0.0), pb.get(k, 0.0)
            d = math.inf if (x == 0) != (y == 0) else abs(math.log(x / y))
            best = max(best, d)
    return best
