"""Exact privacy loss of several releases of the same rows together (issue 42; SPEC sec 7).

Releases that do not depend on each other's outputs are one channel: for a row whose columns
hold ``x`` (a tuple of ``d`` columns), release ``r`` publishes ``Y_r`` drawn from its kernel on the
columns it used, independently of the others given ``x``. A column released twice is two kernels
on one value. The published record ``y = (y_1, ..., y_S)`` (one coordinate per *view*: a column as
one release published it) has density

    f_s(y) = sum_x P(x | s) prod_v K_v(y_v | x_{c(v)})

and the pufferfish loss of a pair is ``sup_y |log f_i(y) - log f_j(y)|`` (over priors of a set,
``sup_y log(max_P f_P(y) / min_Q f_Q(y))``). The views are

* ``laplace``: ``y_v = g_v(x_c) + Laplace(beta_v)`` on a number or a label's code, ``g_v`` the
  release's own transformation (label codes in the release's order, the declared bounds' clamp,
  the secure sampler's grid); a numeric column's missing cell is released as missing;
* ``matrix``: a randomized mapping or response, ``P(y_v = w | x_c) = M_v[row(x_c), w]`` (the
  released dyadic weights, exactly);
* ``identity``: the value as it is (a column kept in clear).

Contrary to :func:`pufferfish.loss.product.product_laplace_loss`, several views may read the same
column, so the density is not a contraction axis by axis; it is evaluated at every vertex of the
output grid against every tuple of the alphabet (:func:`composed_loss`), the work the worst case
over L1 balls does anyway (:func:`pufferfish.loss.balls.ball_loss`, whose knapsack this reuses).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from pufferfish.loss.balls import bounded_ratios, knapsack
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.priors.distributions import to_grid
from pufferfish.priors.joint import MISSING_NUMBER

#: Largest (output vertices) x (alphabet tuples) one check evaluates (about 0.1 microsecond of
#: work per entry and view); beyond it the check answers "not run" with its size.
MAX_COMPOSED_ENTRIES = 200_000_000

#: Entries per block of vertices (memory: a few float64 arrays of this size).
_BLOCK = 2_000_000

_U = 2.0**-53

#: The kinds of :class:`View`.
VIEW_KINDS = ("laplace", "matrix", "identity")


@dataclass(frozen=True, eq=False)
class View:
    """One column as one release published it: a kernel ``K(y | x_c)`` on coordinate ``c``.

    Attributes
    ----------
    coordinate : int
        ``c``, the column of the alphabet's tuples the view reads (0-based).
    kind : {"laplace", "matrix", "identity"}
        See the module's docstring.
    scale : float
        ``laplace``: ``beta > 0``, in the units of the values the kernel sees.
    relabel : numpy.ndarray or None
        Categorical coordinate: ``relabel[code]`` is what the view sees for the alphabet's code
        (the release's own code of that label, ``laplace``; the row of ``matrix``); -1 for a label
        the release never had (refused). None: the value as it is.
    matrix : numpy.ndarray or None
        ``matrix``: shape ``(m_in, m_out)``, rows summing to 1, the released mapping.
    exponent : int or None
        ``laplace``: the secure sampler's grid ``2^k`` the value is rounded to before the noise
        (:func:`pufferfish.priors.distributions.to_grid`); None: not rounded.
    bounds : (float, float) or None
        ``laplace`` on numbers: the declared domain the value is clamped into first.
    name : str
        What the view is, for messages (``"age (release 2)"``).
    """

    coordinate: int
    kind: str
    scale: float = 0.0
    relabel: NDArray[np.int64] | None = None
    matrix: NDArray[np.float64] | None = None
    exponent: int | None = None
    bounds: tuple[float, float] | None = None
    name: str = ""
    _log_matrix: NDArray[np.float64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in VIEW_KINDS:
            raise ValueError(f"kind must be one of {VIEW_KINDS}, got {self.kind!r}")
        if self.kind == "laplace" and not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale of a laplace view must be finite and > 0, got {self.scale!r}")
        log_m = np.zeros((0, 0))
        if self.kind == "matrix":
            m = np.asarray(self.matrix, dtype=np.float64)
            if m.ndim != 2 or np.any(m < 0) or not np.allclose(m.sum(axis=1), 1.0, atol=1e-9):
                raise ValueError("matrix must be a 2-D array of non-negative rows summing to 1")
            with np.errstate(divide="ignore"):
                log_m = np.log(m)
        object.__setattr__(self, "_log_matrix", log_m)

    def inputs(self, column: NDArray[np.float64]) -> NDArray[np.float64]:
        """What the view's kernel sees for each value of its coordinate: ``g_v(x)`` (the atom
        :data:`~pufferfish.priors.joint.MISSING_NUMBER` stays the atom).

        Raises
        ------
        ValueError
            If a label of the alphabet has no code in the release (``relabel`` -1).
        """
        x = np.asarray(column, dtype=np.float64)
        if self.relabel is not None:
            seen = self.relabel[x.astype(np.int64)]
            if np.any(seen < 0):
                raise ValueError(f"{self.name or 'a view'}: a label of the table was not in that release")
            return seen.astype(np.float64)
        gone = x == MISSING_NUMBER
        if self.bounds is not None:
            x = np.where(gone, x, np.clip(x, *self.bounds))
        if self.exponent is not None and self.kind == "laplace":
            x = np.where(gone, x, to_grid(np.where(gone, 0.0, x), self.exponent))
        return x

    def outputs(self, seen: NDArray[np.float64]) -> NDArray[np.float64]:
        """The released values the supremum is taken over, given what the kernel sees.

        ``laplace``: the distinct values seen (the vertex argument of
        :func:`pufferfish.loss.product.product_laplace_loss` holds coordinate by coordinate, the
        others fixed); ``matrix``: every output of the mapping; ``identity``: the values seen.
        """
        if self.kind == "matrix":
            return np.arange(self._log_matrix.shape[1], dtype=np.float64)
        return np.unique(seen)

    def log_kernel(self, y: NDArray[np.float64], seen: NDArray[np.float64]) -> NDArray[np.float64]:
        """``log K(y_r | x_c)`` up to a constant that does not depend on ``x``: shape ``(len(y),
        len(seen))``, ``-inf`` where ``y`` cannot come from ``x``."""
        yy, xx = y[:, None], seen[None, :]
        if self.kind == "identity":
            return np.where(yy == xx, 0.0, -np.inf)
        if self.kind == "matrix":
            return self._log_matrix[xx.astype(np.int64), yy.astype(np.int64)]
        y_gone, x_gone = yy == MISSING_NUMBER, xx == MISSING_NUMBER
        with np.errstate(over="ignore", invalid="ignore"):
            present = -np.abs(np.where(y_gone, 0.0, yy) - np.where(x_gone, 0.0, xx)) / self.scale
        return np.where(y_gone != x_gone, -np.inf, np.where(y_gone, 0.0, present))


@dataclass(frozen=True)
class ComposedLoss:
    """The exact loss of several releases together, for one pair.

    Attributes
    ----------
    loss : float
        ``max`` over the output grid's vertices and both directions of the log-ratio of the
        record's densities (nats): over the priors of the balls when radii are given.
    error_bound : float
        Bound on the rounding error of ``loss``.
    worst_output : tuple of float
        A vertex ``y`` (one value per view) where it is attained.
    vertices : int
        Vertices of the output grid evaluated.
    """

    loss: float
    error_bound: float
    worst_output: tuple[float, ...]
    vertices: int

    def satisfies(self, epsilon: float) -> bool:
        """``loss + error_bound <= epsilon``."""
        return self.loss + self.error_bound <= epsilon


def composed_size(alphabet: NDArray[np.float64], views: Sequence[View]) -> tuple[int, tuple[int, ...]]:
    """``(vertices x tuples, output grid shape)`` of :func:`composed_loss`, before any work."""
    shape = tuple(v.outputs(v.inputs(alphabet[:, v.coordinate])).size for v in views)
    return math.prod(shape) * alphabet.shape[0], shape


def composed_loss(
    alphabet: NDArray[np.float64],
    pmf_i: NDArray[np.float64],
    pmf_j: NDArray[np.float64],
    views: Sequence[View],
    *,
    radius_i: float = 0.0,
    radius_j: float = 0.0,
    max_entries: int = MAX_COMPOSED_ENTRIES,
) -> ComposedLoss:
    """Exact pufferfish loss of the views together, for one pair of priors or of L1 balls.

    Parameters
    ----------
    alphabet : numpy.ndarray, shape (k, d)
        Distinct tuples of the ``d`` columns (label codes for categorical ones).
    pmf_i, pmf_j : numpy.ndarray, shape (k,)
        ``P(x | s_i)`` and ``P(x | s_j)`` on the alphabet (each summing to 1).
    views : sequence of View
        One per column per release (``S >= 1``).
    radius_i, radius_j : float
        L1 radii of the balls around the two priors (0: the priors themselves).
    max_entries : int
        Largest (vertices) x ``k`` accepted (default :data:`MAX_COMPOSED_ENTRIES`).

    Returns
    -------
    ComposedLoss

    Raises
    ------
    ValueError
        On shapes that do not agree or a view reading a coordinate beyond ``d``.
    pufferfish.loss.divergence.MemoryLimitError
        Beyond ``max_entries`` ("not run", with the output grid's shape).

    Notes
    -----
    *Where the maximum is.* Fix the priors and every coordinate of ``y`` but one, ``y_v``. A
    matrix or identity view takes finitely many values, all on the grid. On a Laplace view the
    argument of :func:`pufferfish.loss.product.product_laplace_loss` applies unchanged: between two
    consecutive values ``a < a'`` seen by the view, each tuple's term is ``A_x e^{-y_v / beta}`` or
    ``B_x e^{y_v / beta}`` (the other views' kernels are constants here), so ``f_s = e^{-y_v/beta}
    (A_s + B_s z)``, ``z = e^{2 y_v / beta}``, and the ratio is monotone in ``z``; beyond the
    extreme values it is constant. Moving each coordinate in turn to a vertex never lowers the
    loss, so the supremum over outputs is the maximum over the grid (and over two balls, ``sup_y
    sup_{P,Q} = max_{y in G} sup_{P,Q}``, each side a fractional knapsack:
    :func:`pufferfish.loss.balls.ball_loss`, Notes; radius 0 leaves the prior itself).

    *Rounding.* Per vertex, ``log K(y | x) = sum_v log K_v`` (each term within ``2 u`` relative,
    a matrix's log of exact dyadic weights within ``u``) is shifted by its maximum over the
    tuples, so ``K <= 1`` and each ``K`` is within ``(2 S + 3) u`` absolutely (``|log K| K <= 1 /
    e``). The knapsack's masses are within ``k u``, the sums of ``k`` terms within ``k u``
    relative; each log is then within ``(2 k + 2 S + 4) u (1 + 1 / D)`` for the denominator
    ``D``, doubled for the two logs, plus ``u |loss|`` for the subtraction.
    """
    alphabet = np.asarray(alphabet, dtype=np.float64)
    k = alphabet.shape[0]
    p_i, p_j = np.asarray(pmf_i, dtype=np.float64), np.asarray(pmf_j, dtype=np.float64)
    if alphabet.ndim != 2 or p_i.shape != (k,) or p_j.shape != (k,):
        raise ValueError(
            f"alphabet must be (k, d) and the pmfs (k,), got {alphabet.shape}, {p_i.shape}, {p_j.shape}"
        )
    if not views or any(not 0 <= v.coordinate < alphabet.shape[1] for v in views):
        raise ValueError(f"views must read coordinates 0..{alphabet.shape[1] - 1}, got {len(views)} views")
    seen = [v.inputs(alphabet[:, v.coordinate]) for v in views]
    axes = [v.outputs(s) for v, s in zip(views, seen, strict=True)]
    shape = tuple(ax.size for ax in axes)
    vertices = math.prod(shape)
    if vertices * k > max_entries:
        raise MemoryLimitError(
            f"not run: the joint check evaluates {' x '.join(map(str, shape))} = {vertices:,} released "
            f"records x {k:,} tuples (more than {max_entries:,} entries)"
        )
    t_i, t_j = min(radius_i / 2.0, 1.0), min(radius_j / 2.0, 1.0)
    sort = t_i > 0 or t_j > 0
    block = max(1, _BLOCK // max(k, 1))
    best = (-math.inf, 0.0, 0)
    n_views = len(views)
    for start in range(0, vertices, block):
        flat = np.arange(start, min(start + block, vertices))
        idx = np.unravel_index(flat, shape)
        log_k = np.zeros((flat.size, k))
        for v, view in enumerate(views):
            log_k += view.log_kernel(axes[v][idx[v]], seen[v])
        top = log_k.max(axis=1, keepdims=True)
        possible = np.isfinite(top[:, 0])
        with np.errstate(invalid="ignore"):
            kern = np.exp(log_k - np.where(np.isfinite(top), top, 0.0))
        kern[~possible] = 0.0
        values = []
        if sort:
            order = np.argsort(kern, axis=1, kind="stable")
            kern = np.take_along_axis(kern, order, axis=1)
        for p, t in ((p_i, t_i), (p_j, t_j)):
            mass = p[order] if sort else np.broadcast_to(p, kern.shape)
            if t > 0:
                values.append((knapsack(mass, kern, t, up=True), knapsack(mass, kern, t, up=False)))
            else:
                f = (mass * kern).sum(axis=1)
                values.append((f, f))
        (n_i, d_i), (n_j, d_j) = values
        loss, err = bounded_ratios(n_i, d_i, n_j, d_j, 2 * k + 2 * n_views + 4)
        upper = loss + err
        at = int(np.argmax(upper))
        if upper[at] > best[0] + best[1]:
            best = (float(loss[at]), float(err[at]), int(flat[at]))
    value, error, where = best
    vertex = np.unravel_index(where, shape)
    return ComposedLoss(
        max(value, 0.0), error, tuple(float(axes[c][vertex[c]]) for c in range(len(axes))), vertices
    )


#: Terms summed at once by one step of :func:`composed_point_loss` (about 32 MB a float64 array).
_CONTRACT_BLOCK = 4_000_000

#: Largest entries of the tensor of :func:`composed_point_loss` (the input grid and the output
#: grid of the releases; about 8 bytes each, several such arrays at once).
MAX_POINT_ENTRIES = 2**25


def composed_point_loss(
    alphabet: NDArray[np.float64],
    pmf_i: NDArray[np.float64],
    pmf_j: NDArray[np.float64],
    views: Sequence[View],
    *,
    max_entries: int = MAX_POINT_ENTRIES,
) -> ComposedLoss:
    """:func:`composed_loss` for two priors (no ball), by contracting one column at a time.

    Parameters
    ----------
    alphabet, pmf_i, pmf_j, views
        As :func:`composed_loss` (every coordinate of the alphabet read by at least one view).
    max_entries : int
        Largest tensor accepted (default :data:`MAX_POINT_ENTRIES`).

    Returns
    -------
    ComposedLoss
        The same supremum (over the same output grid) as :func:`composed_loss` with radii 0.

    Raises
    ------
    ValueError
        If a coordinate is read by no view (it would be summed out: give the alphabet of the
        columns released only).
    pufferfish.loss.divergence.MemoryLimitError
        Beyond ``max_entries`` ("not run").

    Notes
    -----
    The views of one column ``c`` make one kernel ``G_c(y_{V_c} | x_c) = prod_{v in V_c}
    K_v(y_v | x_c)`` from that column's values to the tuple of its views' outputs, and the
    record's density is the separable contraction ``f_s(y) = sum_x P(x | s) prod_c G_c(y_{V_c} |
    x_c)`` (the method of :func:`pufferfish.loss.product.product_laplace_loss`, with a matrix per
    column instead of a Laplace sum): start from ``T = log P(. | s)`` on the grid of the
    columns' values (``-inf`` off the support) and replace axis ``c`` by ``T'[.., y, ..] =
    logsumexp_x (T[.., x, ..] + log G_c(y | x))``. The maximum is over the same grid of outputs.

    *Rounding.* Each step computes ``m + log sum exp(T + L - m)`` over ``n`` terms: the terms
    carry the input's error plus ``u (|T| + |L|)`` (``L``, a sum of at most ``S`` view terms each
    within ``2 u`` relative, within ``2 S u |L|``), the exponentials and the sum add ``(n + 2) u``
    relative, the log ``u`` relative of its result and the final addition ``u |T'|``; the step's
    bound is the input's plus ``u (2 S + 2) max |T + L| + (n + 4) u + u max |T'|`` over the finite
    entries. The loss adds both tensors' bounds and ``u |loss|``.
    """
    alphabet = np.asarray(alphabet, dtype=np.float64)
    d = alphabet.shape[1]
    by_column = [[v for v in views if v.coordinate == c] for c in range(d)]
    if any(not vs for vs in by_column):
        raise ValueError("every column of the alphabet must be read by a view")
    columns = [np.unique(alphabet[:, c]) for c in range(d)]
    seen = [[v.inputs(columns[c]) for v in vs] for c, vs in enumerate(by_column)]
    outs = [[v.outputs(v.inputs(alphabet[:, c])) for v in vs] for c, vs in enumerate(by_column)]
    out_sizes = [math.prod(o.size for o in oc) for oc in outs]
    sizes_in = [col.size for col in columns]
    order = sorted(range(d), key=lambda c: out_sizes[c] / sizes_in[c])  # the smallest growth first
    peak, current = math.prod(sizes_in), math.prod(sizes_in)
    for c in order:
        current = current // sizes_in[c] * out_sizes[c]
        peak = max(peak, current)
    # Counted before any allocation: the tensors, and each column's kernel log G_c (|Y_c|, |X_c|),
    # which is also the smallest block _contract sums over (issue 54: four releases of one
    # 74-value column made a 405,224 x 74 x 74 kernel, 16.5 GiB, that no guard had counted).
    kernel = max(o * n for o, n in zip(out_sizes, sizes_in, strict=True))
    if max(peak, kernel) > max_entries:
        raise MemoryLimitError(
            f"not run: the joint check needs {max(peak, kernel):,} entries at once (more than "
            f"{max_entries:,}; outputs {' x '.join(str(s) for s in out_sizes)} from "
            f"{' x '.join(str(n) for n in sizes_in)} values)"
        )
    kernels = []  # per column: log G_c, shape (|Y_c|, |X_c|), and S_c
    for c in range(d):
        g = np.zeros((1, sizes_in[c]))
        for v, s, o in zip(by_column[c], seen[c], outs[c], strict=True):
            lk = v.log_kernel(o, s)  # (|Y_v|, |X_c|)
            g = (g[:, None, :] + lk[None, :, :]).reshape(-1, sizes_in[c])
        kernels.append(g)
    where = tuple(np.searchsorted(columns[c], alphabet[:, c]) for c in range(d))
    tensors = []
    for pmf in (pmf_i, pmf_j):
        t = np.full(tuple(sizes_in), -np.inf)
        with np.errstate(divide="ignore"):
            t[where] = np.log(np.asarray(pmf, dtype=np.float64))
        err = 0.0
        for c in order:
            t, step = _contract(t, kernels[c], c, len(by_column[c]))
            err += step
        tensors.append((t, err))
    (t_i, e_i), (t_j, e_j) = tensors
    with np.errstate(invalid="ignore"):
        ratio = np.where(np.isneginf(t_i) & np.isneginf(t_j), 0.0, t_i - t_j)
    flat = int(np.argmax(np.abs(ratio)))
    at = np.unravel_index(flat, ratio.shape)
    value = float(abs(ratio[at]))
    worst: list[float] = []
    for c in range(d):  # the flat output index of column c back to one value per view
        sub = np.unravel_index(at[c], tuple(o.size for o in outs[c]))
        worst.extend(float(o[s]) for o, s in zip(outs[c], sub, strict=True))
    return ComposedLoss(value, e_i + e_j + _U * value, tuple(worst), math.prod(out_sizes))


def _contract(
    t: NDArray[np.float64], log_g: NDArray[np.float64], axis: int, n_views: int
) -> tuple[NDArray[np.float64], float]:
    """Axis ``axis`` of ``t`` (values ``x``) replaced by the outputs ``y`` of ``log_g`` (|Y|, |X|):
    ``logsumexp_x (t + log_g[y, x])`` and the step's rounding bound (:func:`composed_point_loss`)."""
    moved = np.moveaxis(t, axis, -1)  # (..., X)
    lead = moved.shape[:-1]
    flat = moved.reshape(-1, moved.shape[-1])  # (R, X)
    n_y, n_x = log_g.shape
    out = np.empty((flat.shape[0], n_y))
    worst_in, worst_out = 0.0, 0.0
    ys = max(1, min(n_y, _CONTRACT_BLOCK // max(n_x, 1)))  # blocks of at most ~4e6 terms
    rows = max(1, _CONTRACT_BLOCK // max(ys * n_x, 1))
    for start in range(0, flat.shape[0], rows):
        block = flat[start : start + rows]
        for y0 in range(0, n_y, ys):
            terms = block[:, None, :] + log_g[None, y0 : y0 + ys, :]  # (r, y, X)
            m = terms.max(axis=2)
            finite = np.isfinite(m)
            with np.errstate(invalid="ignore"):
                s = np.exp(terms - np.where(finite, m, 0.0)[:, :, None]).sum(axis=2)
            with np.errstate(divide="ignore"):
                res = np.where(finite, m + np.log(np.where(finite, s, 1.0)), -np.inf)
            out[start : start + rows, y0 : y0 + ys] = res
            fin_terms = terms[np.isfinite(terms)]
            if fin_terms.size:
                worst_in = max(worst_in, float(np.abs(fin_terms).max()))
            if finite.any():
                worst_out = max(worst_out, float(np.abs(res[finite]).max()))
    bound = _U * ((2 * n_views + 2) * worst_in + (n_x + 4) + worst_out)
    result = np.moveaxis(out.reshape(*lead, n_y), -1, axis)
    return result, bound
