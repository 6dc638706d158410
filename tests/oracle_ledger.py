"""Independent brute force of the joint loss of a ledger's releases (issue 54), from the issue's
reproducer ``shared/repro/leaks/ledger_oracle.py`` (no pufferfish import).

Independent brute-force joint loss of every release recorded in a pufferfish ledger (turn-6 audit).

No pufferfish import. From the data (pandas) and each ledger entry's recorded views (read straight
from the SQLite file), the published record of a row is y = (y_v) over every view v of every release:
  laplace (numeric):     y = grid(clamp(x)) + Laplace(scale)      (missing x -> missing y, prob 1)
  laplace (categorical): y = code of x in the view's labels + Laplace(scale)
  matrix:                P(y = w | x) = W[code(x), w] / 2^52  (weights or [k, keep, other] response)
  identity:              y = x
  f_s(y) = sum_x P(x | s) prod_v K_v(y_v | x);  loss = sup_y |log f_a(y) - log f_b(y)|
The sup is taken over a fine grid: every value any Laplace view sees, midpoints, points beyond the
ends (and random points), all outputs of a matrix, all values of an identity view.
Over L1 balls (radius r_s around P(.|s) on the joint alphabet of the pair's secrets' rows): at each
y, max <P,K> over the ball moves r/2 of mass to argmax K from the smallest K (closed form, exact).
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pandas as pd
from scipy.special import logsumexp

MISSING_LABEL = "\u2400missing"
MISS = 1e300  # my own atom for a missing numeric cell
ONE = 2.0**52


def ledger_entries(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute("select id, state, body from entries order by id").fetchall()
    con.close()
    return [(i, st, json.loads(b)) for i, st, b in rows]


def rel_grid(x):
    g = 2.0**-30
    x = np.asarray(x, float)
    return np.where(np.abs(x) < 2.0**22, np.round(x / g) * g, x)


def to_grid(x, k):
    x = rel_grid(x)
    if k is None or k <= -30:
        return x
    return np.rint(x / 2.0**k) * 2.0**k


def column_values(df, col, kind):
    """Per row: float for numeric (MISS for missing), str for categorical (MISSING_LABEL)."""
    s = df[col]
    if kind == "numeric":
        v = pd.to_numeric(s, errors="coerce").to_numpy(float)
        return np.where(np.isnan(v), MISS, v)
    return np.array([MISSING_LABEL if pd.isna(t) else str(t) for t in s], dtype=object)


class OView:
    def __init__(self, rec):
        self.rec = rec
        self.col = rec["column"]
        self.kind = rec["kind"]
        if self.kind == "matrix":
            if "response" in rec:
                k, keep, other = rec["response"]
                W = np.full((k, k), float(other))
                np.fill_diagonal(W, float(keep))
            else:
                W = np.asarray(rec["weights"], float)
            self.W = W / ONE
            self.labels = rec["labels"]

    def seen(self, xs):
        """What the kernel sees for column values xs (list over alphabet)."""
        if self.kind == "identity":
            return xs
        if self.kind == "matrix":
            idx = {lab: i for i, lab in enumerate(self.labels)}
            return np.array([idx[x] for x in xs], float)
        labs = self.rec.get("labels")
        if labs:
            idx = {lab: i for i, lab in enumerate(labs)}
            return to_grid(np.array([idx[x] for x in xs], float), self.rec.get("exponent"))
        x = np.asarray(xs, float)
        gone = x == MISS
        b = self.rec.get("bounds")
        if b is not None:
            x = np.where(gone, x, np.clip(x, b[0], b[1]))
        x = np.where(gone, MISS, to_grid(np.where(gone, 0.0, x), self.rec.get("exponent")))
        return x

    def out_grid(self, seen, rng, fine=True):
        if self.kind == "matrix":
            return np.arange(self.W.shape[1], dtype=float)
        if self.kind == "identity":
            return list(dict.fromkeys(seen))
        u = np.unique(seen)
        miss = u[u == MISS]
        u = u[u != MISS]
        pts = [u]
        if fine and u.size:
            span = (u[-1] - u[0]) or 1.0
            pts += [
                (u[1:] + u[:-1]) / 2,
                [u[0] - 2 * span, u[-1] + 2 * span],
                rng.uniform(u[0] - 0.3 * span, u[-1] + 0.3 * span, 3),
            ]
        return np.concatenate([np.concatenate([np.asarray(p, float) for p in pts]), miss])

    def logk(self, y, seen):
        """log K(y | seen) (unnormalised but the same constant for every x), shape (len(y), len(seen))."""
        if self.kind == "identity":
            return np.array([[0.0 if a == b else -np.inf for b in seen] for a in y])
        if self.kind == "matrix":
            with np.errstate(divide="ignore"):
                L = np.log(self.W)
            return L[np.asarray(seen, int)[None, :], np.asarray(y, int)[:, None]]
        y = np.asarray(y, float)[:, None]
        x = np.asarray(seen, float)[None, :]
        yg, xg = y == MISS, x == MISS
        val = -np.abs(np.where(yg, 0, y) - np.where(xg, 0, x)) / float(self.rec["scale"])
        return np.where(yg != xg, -np.inf, np.where(yg, 0.0, val))


def priors(df, secret, cols, kinds, pair):
    """Joint alphabet (list of tuples) over rows whose secret is in the pair, and P(x | s) per s."""
    vals = {c: column_values(df, c, kinds[c]) for c in cols}
    sec = np.array([None if pd.isna(t) else str(t) for t in df[secret]], dtype=object)
    counts = {s: {} for s in pair}
    for i in range(len(df)):
        s = sec[i]
        if s in counts:
            t = tuple(vals[c][i] for c in cols)
            counts[s][t] = counts[s].get(t, 0) + 1
    alpha = sorted(set(counts[pair[0]]) | set(counts[pair[1]]), key=repr)
    pm = {}
    for s in pair:
        n = sum(counts[s].values())
        pm[s] = np.array([counts[s].get(t, 0) / n for t in alpha])
    sizes = {s: sum(counts[s].values()) for s in pair}
    return alpha, pm, sizes


def l1_radius(n, k, confidence, m):
    alpha = 1 - confidence
    k = max(k, 2)
    ln = math.log(2.0**k - 2) if k < 1000 else k * math.log(2.0) + math.log1p(-(2.0 ** (1 - k)))
    return math.sqrt(2.0 / n * (ln + math.log(m / alpha)))


def ball_extremes(p, K, r):
    """max and min of <P, K> over ||P - p||_1 <= r (rows of K: outputs)."""
    t = min(r / 2, 1.0)
    hi = np.empty(K.shape[0])
    lo = np.empty(K.shape[0])
    for v in range(K.shape[0]):
        k = K[v]
        for up, out in ((True, hi), (False, lo)):
            order = np.argsort(k) if up else np.argsort(-k)  # worst first
            best = order[-1]
            move = min(t, 1 - p[best])
            P = p.copy()
            left = move
            for x in order[:-1]:
                take = min(left, P[x])
                P[x] -= take
                left -= take
                if left <= 1e-18:
                    break
            P[best] += move - left
            out[v] = float(P @ k)
    return hi, lo


def joint_loss(df, secret, entries, kinds, pair, radii=None, rng=None, fine=True, chunk=4000):
    """True joint loss of every view of every entry, for one pair (point estimate or L1 balls)."""
    rng = rng or np.random.default_rng(0)
    views = [OView(rec) for e in entries for rec in e["views"]]
    cols = list(dict.fromkeys(v.col for v in views))
    alpha, pm, sizes = priors(df, secret, cols, kinds, pair)
    seen = [v.seen([t[cols.index(v.col)] for t in alpha]) for v in views]
    axes = [v.out_grid(s, rng, fine) for v, s in zip(views, seen, strict=False)]
    shape = [len(a) for a in axes]
    total = int(np.prod(shape))
    lk_axes = [v.logk(a, s) for v, a, s in zip(views, axes, seen, strict=False)]  # (|Y_v|, |A|)
    best, where = 0.0, None
    a, b = pair
    with np.errstate(divide="ignore"):
        la, lb = np.log(pm[a]), np.log(pm[b])
    for start in range(0, total, chunk):
        flat = np.arange(start, min(total, start + chunk))
        idx = np.unravel_index(flat, shape)
        L = np.zeros((flat.size, len(alpha)))
        for v in range(len(views)):
            L = L + lk_axes[v][idx[v]]
        if radii is None:
            fa = logsumexp(L + la[None, :], axis=1)
            fb = logsumexp(L + lb[None, :], axis=1)
            ok = np.isfinite(fa) | np.isfinite(fb)
            with np.errstate(invalid="ignore"):
                r = np.where(ok, np.abs(fa - fb), 0.0)
            r = np.where(np.isnan(r), np.inf, r)
        else:
            top = L.max(axis=1, keepdims=True)
            fin = np.isfinite(top[:, 0])
            K = np.exp(L - np.where(np.isfinite(top), top, 0))
            K[~fin] = 0
            ha, loa = ball_extremes(pm[a], K, radii[a])
            hb, lob = ball_extremes(pm[b], K, radii[b])
            with np.errstate(divide="ignore", invalid="ignore"):
                r1 = np.log(ha) - np.log(lob)
                r2 = np.log(hb) - np.log(loa)
            r = np.maximum(r1, r2)
            r = np.where(fin, r, 0.0)
            r = np.where(np.isnan(r), np.inf, r)
        i = int(np.argmax(r))
        if r[i] > best:
            best, where = float(r[i]), tuple(axes[v][idx[v][i]] for v in range(len(views)))
    return best, where, total, len(alpha), sizes
