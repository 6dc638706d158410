"""Exact privacy checks of a release ``Y = X + N`` for any prior and Laplace or Gaussian noise.

For a secret ``s`` the released value has the density ``f_s = P_{X|S}(. | s) * P_N``: a mixture of
*kernels*, one per atom of a discrete prior or component of a Gaussian-mixture prior:

================  ===============================  =============================================
prior component   Laplace noise ``L(b)``           Gaussian noise ``N(0, sigma^2)`` (or none)
================  ===============================  =============================================
atom at ``x``     Laplace density at ``y - x``      ``N(x, sigma^2)``
``N(mu, s^2)``    normal-Laplace (erfc terms)       ``N(mu, s^2 + sigma^2)``
================  ===============================  =============================================

The normal-Laplace density and CDF (SPEC sec 4) are, with ``u = y - mu``,
``f = e^{s^2/2b^2}/(2b) [e^{-u/b} Phi(u/s - s/b) + e^{u/b} Phi(-u/s - s/b)]`` and
``F = Phi(u/s) - e^{s^2/2b^2 - u/b} Phi(u/s - s/b)/2 + e^{s^2/2b^2 + u/b} Phi(-u/s - s/b)/2``,
evaluated in log space with ``scipy.special.log_ndtr``.

Three quantities are computed for a pair of densities, each with a stated numerical error bound:

* :func:`privacy_loss_sup`: ``sup_y |log f_i(y) - log f_j(y)|`` (pure eps; Laplace noise);
* :func:`hockey_stick`: ``delta = max over both directions of int [f_i - e^eps f_j]_+ dy``, the
  smallest delta of (eps, delta)-indistinguishability (SPEC sec 0);
* :func:`mutual_information`: ``I(S; Y) = sum_s pi_s KL(f_s || sum_t pi_t f_t)`` (seed 004 Def 3).

Each rests on bounding ``log f`` over the intervals of a grid that is refined by vectorised
bisection until every interval is decided or its contribution is within the error budget; the
bounds of undecided intervals and of the far tails are added to the error bound.

* The loss uses a slope bound: a Laplace mixture satisfies ``|f'| <= f / b``, so
  ``g = log f_i - log f_j`` has ``|g'| <= 2/b`` and, on an interval of width ``h`` whose ends have
  values ``u, v``, lies in ``[(u+v)/2 - h/b, (u+v)/2 + h/b]``; beyond the grid a tail bound. Where
  these leave an interval open, tilted kernel bounds (both densities times ``e^{+-y/b}``, which
  leaves ``g`` unchanged; each tilted kernel half is monotone or log-concave with a known mode)
  decide it: they are tight on the long flat stretches of ``g`` in the tails, where the slope
  bound would need ever finer intervals.
* Delta and the information use kernel bounds: every kernel (Laplace, normal-Laplace, Gaussian) is
  log-concave with its mode at its centre, the centres are grid points, so on each interval every
  kernel lies between its values at the two ends, which bounds ``log f`` there. For Laplace
  releases delta also uses the tilted bounds where the kernel bounds leave an interval open.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import erfcx, log_ndtr, logsumexp, ndtr, ndtri

from ._checks import check_scale
from .priors import DiscretePrior, GaussianMixturePrior, Prior

#: Noise distributions.
NOISES: tuple[str, ...] = ("laplace", "gaussian")

#: Probability left in each far tail outside the integration range (added to error bounds).
TAIL_MASS = 1e-15

_LOG_2PI = math.log(2.0 * math.pi)
_MAX_LEVELS = 60
_MAX_OPEN = 1_000_000
_ROUNDING = 1e-12
_SQRT2 = math.sqrt(2.0)
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
#: Unit roundoff of float64.
_U = 2.0**-53


def _log_tilted_ndtr(u: Any, s: Any, b: float, sign: int = 1) -> NDArray[np.float64]:
    """``log(e^{s^2/2b^2 - u/b} Phi(sign (u/s - s/b)))`` for ``s > 0``, without cancellation.

    The two exponents are huge and nearly cancel when ``s/b`` is large. With ``z = sign (u/s -
    s/b)`` and ``s^2/2b^2 - u/b - z^2/2 = -u^2/2s^2``, for ``z < 0`` the value is
    ``-u^2/2s^2 + log(Phi(z)/phi(z)) - log(2 pi)/2`` with ``Phi(z)/phi(z) = sqrt(pi/2) erfcx(-z/sqrt 2)``
    (bounded, no overflow); for ``z >= 0`` the direct form has no cancellation of note.
    """
    u = np.asarray(u, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    z = sign * (u / s - s / b)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        direct = s * s / (2.0 * b * b) - u / b + log_ndtr(z)
        zn = np.minimum(z, 0.0)
        stable = -0.5 * (u / s) ** 2 - 0.5 * _LOG_2PI + np.log(_SQRT_HALF_PI * erfcx(-zn / _SQRT2))
    return np.asarray(np.where(z < 0.0, stable, direct), dtype=np.float64)


#: Relative error of ``scipy.special.ndtr(-z)`` for ``z >= 0`` (a tail of at least 1e-300) is at
#: most ``4 u (1 + z^2)`` against 40-digit mpmath on 36,000 points (tests/test_soundness.py); the
#: bound uses four times that.
_NDTR_REL = 16.0
#: Absolute error allowed for a normal tail below the normal float range, and the tail mass beyond
#: 40 standard deviations (``2 Phi(-40) = 7e-350``), rounded up.
_FAR_TAIL = 1e-300


def _normal_tail(z: Any, extra: Any = 0.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(Phi(-z), error bound)`` for ``z >= 0`` (possibly infinite): the side without cancellation.

    The one rounding model of a normal tail, used by every certified check: scipy's ``ndtr``
    (``_NDTR_REL u (1 + z^2)`` relative), the rounding of ``z`` itself, at most ``4u (z + extra)``
    (``extra = shift/std`` where the centre was rounded in other coordinates), which moves
    ``Phi(-z)`` by at most ``(z + 1)`` times that relatively (inverse Mills ratio
    ``phi(z)/Phi(-z) <= z + 1`` for ``z >= 0``), and ``_FAR_TAIL`` absolute below 1e-300 (a tail
    at ``z = inf`` is exactly 0).
    """
    zz = np.asarray(z, dtype=np.float64)
    t = ndtr(-zz)
    with np.errstate(invalid="ignore"):
        rel = _NDTR_REL * _U * (1.0 + zz * zz) + 4.0 * _U * (zz + 1.0) * (zz + extra)
        e = np.where(t > 0.0, rel * t, 0.0)
    return t, e + np.where((t < _FAR_TAIL) & np.isfinite(zz), _FAR_TAIL, 0.0)


def check_noise(noise: Any) -> str:
    """Return ``noise`` after checking it is one of :data:`NOISES`."""
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {', '.join(NOISES)}, got {noise!r}")
    return str(noise)


@dataclass(frozen=True, eq=False)
class ReleaseDensity:
    """The density of ``Y = X + N`` given one secret: a mixture of kernels.

    Parameters
    ----------
    log_weights : numpy.ndarray, shape (m,)
        Log weights of the kernels (logsumexp 0).
    locs : numpy.ndarray, shape (m,)
        Kernel centres: atoms of a discrete prior or component means (unit of the column).
    spreads : numpy.ndarray, shape (m,)
        Prior component standard deviations ``s_m >= 0`` (0 for an atom).
    noise : {"laplace", "gaussian"}
        Noise distribution.
    scale : float
        Laplace scale ``b`` or Gaussian ``sigma`` (>= 0). With ``scale == 0`` every kernel is the
        prior component itself, which needs ``s_m > 0`` (a density).

    Notes
    -----
    Build with :func:`release_density`. Seed 003 sec II-A: ``P_{Y|S}(y|s) = int P_N(y-x) dP_{X|S}``.
    """

    log_weights: NDArray[np.float64]
    locs: NDArray[np.float64]
    spreads: NDArray[np.float64]
    noise: str
    scale: float

    @property
    def laplace(self) -> bool:
        """Whether the kernels are Laplace-based (Laplace noise with ``b > 0``)."""
        return self.noise == "laplace" and self.scale > 0.0

    @property
    def variances(self) -> NDArray[np.float64]:
        """Gaussian kernel variances ``s_m^2 + sigma^2`` (Gaussian noise or no noise)."""
        extra = self.scale**2 if self.noise == "gaussian" else 0.0
        return np.asarray(self.spreads**2 + extra, dtype=np.float64)

    def _kernel_terms(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """``log w_m + log k_m(y)``, shape (len(y), m)."""
        u = y[:, None] - self.locs[None, :]
        lw = self.log_weights[None, :]
        if self.laplace:
            b = self.scale
            s = self.spreads[None, :]
            out = np.empty(u.shape)
            atom = np.broadcast_to(s == 0.0, u.shape)
            with np.errstate(over="ignore"):
                out[atom] = (-np.abs(u) / b - math.log(2.0 * b))[atom]
            if not atom.all():
                ss = np.where(s > 0.0, s, 1.0)
                left = _log_tilted_ndtr(u, ss, b)
                right = _log_tilted_ndtr(-u, ss, b)
                val = np.logaddexp(left, right) - math.log(2.0 * b)
                out[~atom] = val[~atom]
            return out + lw
        v = self.variances[None, :]
        return lw - 0.5 * (u * u / v + np.log(v) + _LOG_2PI)

    def _laplace_halves(self, y: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The two halves ``(L, R)`` of each Laplace-based kernel, in log space, shape (len(y), m).

        ``log w_m + log k_m = logaddexp(L, R)``. For ``N(mu, s^2) * L(b)`` with ``u = y - mu`` and
        ``c = s^2/2b^2 - log 2b``: ``L = c - u/b + log Phi(u/s - s/b)`` and ``R = c + u/b + log
        Phi(-u/s - s/b)`` (the two erfc terms of the module docstring); for an atom ``L`` is the
        whole Laplace kernel and ``R = -inf``. See :func:`_tilted_bounds` for what they are for.
        """
        return _halves(
            y[:, None] - self.locs[None, :], self.spreads[None, :], self.log_weights[None, :], self.scale
        )

    def _tilted_modes(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Modes of ``R(y) + y/b`` and of ``L(y) - y/b`` per kernel (``-inf`` where monotone).

        For a component ``N(mu, s^2)`` both are log-concave (a linear term plus ``log Phi``), with
        modes ``mu -/+ s (z* + s/b)`` where ``phi(z*)/Phi(z*) = 2 s/b`` (set the derivative to 0).
        For an atom ``R`` is empty and ``L(y) - y/b`` is non-increasing.
        """
        from scipy.optimize import brentq

        b = self.scale
        shift = np.full(self.locs.size, np.nan)
        for k, s in enumerate(self.spreads):
            if s > 0.0:
                ratio = s / b
                if not ratio < 1e150:
                    # phi(z)/Phi(z) = |z| + 1/|z| + O(|z|^-3) as z -> -inf, so z* = -2r + 1/(2r)
                    # to far below float resolution; s/b may even overflow (b denormal).
                    shift[k] = -s * ratio + 0.5 * b if math.isfinite(ratio) else -math.inf
                    continue
                target = math.log(2.0 * s / b)

                def excess(z: float, target: float = target) -> float:
                    # log(phi(z)/Phi(z)) - target; for z < 0 via erfcx (no overflow of z^2)
                    if z < 0.0:
                        return -math.log(_SQRT_HALF_PI * float(erfcx(-z / _SQRT2))) - target
                    return -0.5 * z * z - 0.5 * _LOG_2PI - float(log_ndtr(z)) - target

                z_star = brentq(excess, -2.0 * s / b - 10.0, 60.0, xtol=1e-14, rtol=1e-15)
                shift[k] = s * (z_star + s / b)
        gauss = self.spreads > 0.0
        right_mode = np.where(gauss, self.locs - np.nan_to_num(shift), -np.inf)
        left_mode = np.where(gauss, self.locs + np.nan_to_num(shift), -np.inf)
        return right_mode, left_mode

    def log_pdf(self, y: Any) -> NDArray[np.float64]:
        """``log f(y)``, shape (n,), for values ``y`` of shape (n,)."""
        yy = np.asarray(y, dtype=np.float64)
        out = np.empty(yy.shape)
        step = max(1, 4_000_000 // max(self.locs.size, 1))
        for k in range(0, yy.size, step):
            out[k : k + step] = logsumexp(self._kernel_terms(yy[k : k + step]), axis=1)
        return out

    def cdf(self, y: Any) -> NDArray[np.float64]:
        """``P(Y <= y)``, shape (n,)."""
        yy = np.asarray(y, dtype=np.float64)
        out = np.empty(yy.shape)
        w = np.exp(self.log_weights)
        step = max(1, 4_000_000 // max(self.locs.size, 1))
        for k in range(0, yy.size, step):
            u = yy[k : k + step, None] - self.locs[None, :]
            if self.laplace:
                b = self.scale
                s = self.spreads[None, :]
                lap = np.where(
                    u < 0, 0.5 * np.exp(np.minimum(u, 0) / b), 1.0 - 0.5 * np.exp(-np.maximum(u, 0) / b)
                )
                ss = np.where(s > 0.0, s, 1.0)
                nl = (
                    ndtr(u / ss)
                    - 0.5 * np.exp(np.minimum(_log_tilted_ndtr(u, ss, b), 0.0))
                    + 0.5 * np.exp(np.minimum(_log_tilted_ndtr(-u, ss, b), 0.0))
                )
                vals = np.where(s == 0.0, lap, nl)
            else:
                vals = ndtr(u / np.sqrt(self.variances[None, :]))
            out[k : k + step] = np.clip(vals @ w, 0.0, 1.0)
        return out

    def interval_mass(self, a: Any, c: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(P(a <= Y <= c), error bound)`` per interval, shapes (n,), with errors relative to tails.

        Each kernel's mass is a difference of its two tails on the side of its centre where the
        interval lies (``CDF`` differences left of the centre, survival differences right of it;
        ``1 - left tail - right tail`` across it), so no value near 1 is subtracted. The error of
        each tail value ``T`` is bounded by its own rounding model times ``T``:

        * Laplace atom: ``T = e^{-|u|/b}/2``; ``4u (2 + |u|/b)`` relative (the subtraction and
          division in ``|u|/b`` and ``exp``);
        * Gaussian ``N(x, v)``: ``Phi(-z)`` with the model of :func:`_normal_tail`;
        * normal-Laplace: ``F(v) = Phi(v/s) - e^{L}/2 + e^{R}/2`` at ``v = -|u| <= 0`` (the symmetric
          density's smaller tail) with the exponents of :func:`_log_tilted_ndtr`; every term
          carries ``16u (1 + z^2)`` and the exponents ``16u (1 + |v|/b + (v/s)^2)``, times the
          term's magnitude (the sum of magnitudes, not the result, so partial cancellation is
          covered).

        A difference ``T_a - T_c`` adds ``u (T_a + T_c)``; the weighted sum adds ``4u`` times the sum
        of magnitudes. The bound is thus relative to the kernels' tail masses at the interval's
        ends, never an absolute ``1e-16`` per interval (issue 19).
        """
        aa = np.atleast_1d(np.asarray(a, dtype=np.float64))
        cc = np.atleast_1d(np.asarray(c, dtype=np.float64))
        mass = np.empty(aa.size)
        err = np.empty(aa.size)
        w = np.exp(self.log_weights)
        step = max(1, 2_000_000 // max(self.locs.size, 1))
        for k in range(0, aa.size, step):
            ua = aa[k : k + step, None] - self.locs[None, :]
            uc = cc[k : k + step, None] - self.locs[None, :]
            ta, ea = self._tails(ua)
            tc, ec = self._tails(uc)
            right = ua >= 0.0
            left = uc <= 0.0
            # right of the centre: survival(a) - survival(c); left: cdf(c) - cdf(a); across: the rest
            m = np.where(right, ta - tc, np.where(left, tc - ta, 1.0 - ta - tc))
            e = ea + ec + _U * (ta + tc) + np.where(right | left, 0.0, 2.0 * _U)
            m = np.maximum(m, 0.0)
            mass[k : k + step] = m @ w
            err[k : k + step] = e @ w + 4.0 * _U * (m @ w)
        return mass, err

    def _tails(self, u: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per kernel, the mass beyond offset ``u`` away from the centre (``P(U > u)`` for
        ``u >= 0``, ``P(U < u)`` for ``u < 0``) and its error bound (:meth:`interval_mass`)."""
        au = np.abs(u)
        s = np.broadcast_to(self.spreads[None, :], u.shape)
        if self.laplace:
            b = self.scale
            with np.errstate(over="ignore", invalid="ignore"):
                t_atom = 0.5 * np.exp(-au / b)
                e_atom = np.where(t_atom > 0.0, 4.0 * _U * (2.0 + au / b) * t_atom, 0.0)
            if (s == 0.0).all():
                return t_atom, e_atom
            ss = np.where(s > 0.0, s, 1.0)
            v = -au
            z = v / ss
            phi = ndtr(z)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                ll = _log_tilted_ndtr(v, ss, b)
                rr = _log_tilted_ndtr(-v, ss, b)
                el, er = 0.5 * np.exp(np.minimum(ll, 0.0)), 0.5 * np.exp(np.minimum(rr, 0.0))
                t_nl = np.maximum(phi - el + er, 0.0)
                exp_err = 16.0 * _U * (1.0 + au / b + z * z)
                e_nl = (
                    np.where(phi > 0.0, 16.0 * _U * (1.0 + z * z) * phi, 0.0)
                    + np.where(el + er > 0.0, exp_err * (el + er), 0.0)
                    + 2.0 * _U * (phi + el + er)
                    + 1e-300
                )
            t = np.where(s > 0.0, t_nl, t_atom)
            e = np.where(s > 0.0, e_nl, e_atom)
            return t, np.where(np.isfinite(e), e, np.inf)
        return _normal_tail(au / np.sqrt(self.variances)[None, :])

    def range(self, tail: float = TAIL_MASS) -> tuple[float, float]:
        """``(lo, hi)`` with ``P(Y < lo) <= tail`` and ``P(Y > hi) <= tail``."""
        if self.laplace:
            b = self.scale
            z = float(-ndtri(tail / 2.0))
            reach = self.spreads * z + b * math.log(1.0 / tail)
        else:
            z = float(-ndtri(tail))
            reach = np.sqrt(self.variances) * z
        return float((self.locs - reach).min()), float((self.locs + reach).max())

    def tail_log_bounds(self, y0: Any, side: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Bounds on ``log f(y) + |y - y0|/b`` for all ``y`` beyond ``y0`` (Laplace kernels).

        ``side = +1``: all ``y >= y0``; ``side = -1``: all ``y <= y0``. Returns arrays
        ``(log G, log(G + E))`` (shape of ``y0``) with ``G = int_{x <= y0} e^{-(y0 - x)/b}/(2b) dP_X``,
        the part of ``f`` that decays exactly like ``e^{-(y - y0)/b}``, and
        ``E = int_{x > y0} e^{(x - y0)/b}/(2b) dP_X``, which bounds the rest times ``e^{(y-y0)/b}``
        (module docstring; reflected for ``side = -1``).
        """
        b = self.scale
        y = np.atleast_1d(np.asarray(y0, dtype=np.float64))
        d = side * (y[:, None] - self.locs[None, :])  # distance from each centre to y0, outwards
        s = self.spreads[None, :]
        ss = np.where(s > 0.0, s, 1.0)
        with np.errstate(divide="ignore"):
            atom_g = np.where(d >= 0, -d / b - math.log(2 * b), -np.inf)
            atom_e = np.where(d < 0, d / b - math.log(2 * b), -np.inf)
        log_g = np.where(s > 0, _log_tilted_ndtr(d, ss, b) - math.log(2 * b), atom_g)
        log_e = np.where(s > 0, _log_tilted_ndtr(d, ss, b, -1) - math.log(2 * b), atom_e)
        lg = logsumexp(self.log_weights[None, :] + log_g, axis=1)
        le = logsumexp(self.log_weights[None, :] + log_e, axis=1)
        return lg, np.logaddexp(lg, le)


def _halves(
    u: NDArray[np.float64], s: NDArray[np.float64], lw: NDArray[np.float64], b: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(L, R)`` of :meth:`ReleaseDensity._laplace_halves` at offsets ``u = y - centre``
    (arrays broadcast together: spreads ``s``, log weights ``lw``)."""
    ss = np.where(s > 0.0, s, 1.0)
    with np.errstate(invalid="ignore"):
        left = np.where(s > 0.0, _log_tilted_ndtr(u, ss, b), -np.abs(u) / b) - math.log(2.0 * b)
        right = np.where(s > 0.0, _log_tilted_ndtr(-u, ss, b) - math.log(2.0 * b), -np.inf)
    return left + lw, right + lw


def _tail_upper(f_i: ReleaseDensity, f_j: ReleaseDensity, y0: Any, side: int) -> NDArray[np.float64]:
    """Upper bound on ``|log f_i - log f_j|`` over all ``y`` beyond each ``y0`` (Laplace kernels)."""
    gi, gie = f_i.tail_log_bounds(y0, side)
    gj, gje = f_j.tail_log_bounds(y0, side)
    with np.errstate(invalid="ignore"):
        out = np.maximum(np.abs(gi - gje), np.abs(gie - gj))
    return np.where(np.isnan(out), np.inf, out)


def release_density(prior: Prior, noise: str, scale: float) -> ReleaseDensity:
    """The density of ``Y = X + N`` for a prior ``X ~ prior`` and noise of the given scale.

    Parameters
    ----------
    prior : DiscretePrior or GaussianMixturePrior
        ``P_{X|S}(. | s, rho)``.
    noise : {"laplace", "gaussian"}
        Noise distribution.
    scale : float
        Laplace scale ``b`` or Gaussian standard deviation ``sigma``, finite and >= 0.

    Returns
    -------
    ReleaseDensity

    Raises
    ------
    ValueError
        On a bad ``noise`` or ``scale``, or ``scale == 0`` with a prior that has atoms (no density).
    """
    noise = check_noise(noise)
    scale = check_scale(scale)
    if isinstance(prior, DiscretePrior):
        keep = prior.pmf > 0
        lw = np.asarray(prior.log_pmf)[keep] if prior.log_pmf is not None else np.log(prior.pmf[keep])
        locs = prior.support[keep]
        spreads = np.zeros(locs.size)
    elif isinstance(prior, GaussianMixturePrior):
        lw, locs, spreads = np.log(prior.weights), prior.means, prior.stds
    else:
        raise TypeError(f"prior must be a DiscretePrior or GaussianMixturePrior, got {type(prior).__name__}")
    if scale == 0.0 and (spreads == 0.0).any():
        raise ValueError("scale must be > 0 for a prior with atoms (without noise there is no density)")
    lw = lw - float(logsumexp(lw))
    return ReleaseDensity(
        np.asarray(lw, dtype=np.float64),
        np.asarray(locs, dtype=np.float64),
        np.asarray(spreads, dtype=np.float64),
        noise,
        scale,
    )


# ---------------------------------------------------------------------------------------------
# Interval machinery


class GridTooFineError(ValueError):
    """The densities vary too fast for the interval grid (a noise scale far below the priors' spread)."""


#: Largest grid the interval machinery builds.
MAX_GRID = 5_000_000


def _tilted_bounds(
    f: ReleaseDensity, a: NDArray[np.float64], c: NDArray[np.float64], modes: tuple[NDArray[np.float64], ...]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Bounds on ``log f(y) + (y - a)/b`` and on ``log f(y) - (y - c)/b`` over each ``[a, c]``.

    Returns ``(lo_right, up_right, lo_left, up_left)``, each of shape (len(a),).

    Notes
    -----
    Tilting both densities of a pair by the same ``e^{+-y/b}`` leaves ``log f_i - log f_j``
    unchanged, and in the far tails the tilted densities are nearly constant, so these bounds are
    tight where ``g`` is flat and the slope bound ``2/b`` is not. With the halves of
    :meth:`ReleaseDensity._laplace_halves`: ``L + y/b`` is non-decreasing (``log Phi`` of an
    increasing argument, or for an atom ``(y - |y - x|)/b``) and ``R + y/b`` is log-concave with a
    known mode, so on ``[a, c]`` each lies between its end values, the concave one below its value
    at the mode when the mode is inside. Mirrored for the left tilt (``R - y/b`` non-increasing,
    ``L - y/b`` log-concave; for an atom non-increasing).
    """
    b = f.scale
    right_mode, left_mode = modes
    h = ((c - a) / b)[:, None]
    la, ra = f._laplace_halves(a)
    lc, rc = f._laplace_halves(c)
    # right tilt, reference a: L + (y-a)/b non-decreasing; R + (y-a)/b log-concave, mode right_mode
    rm = right_mode[None, :]
    inside = (a[:, None] < rm) & (rm < c[:, None])
    r_at_mode = _halves(right_mode - f.locs, f.spreads, f.log_weights, b)[1][None, :]
    with np.errstate(invalid="ignore"):  # -inf + inf at modes of -inf, never inside
        r_peak = np.where(inside, r_at_mode + (rm - a[:, None]) / b, np.maximum(ra, rc + h))
    lo_right = logsumexp(np.stack([la, np.minimum(ra, rc + h)]), axis=(0, 2))
    up_right = logsumexp(np.stack([lc + h, r_peak]), axis=(0, 2))
    # left tilt, reference c: R - (y-c)/b non-increasing; L - (y-c)/b log-concave, mode left_mode
    lm = left_mode[None, :]
    inside = (a[:, None] < lm) & (lm < c[:, None])
    l_at_mode = _halves(left_mode - f.locs, f.spreads, f.log_weights, b)[0][None, :]
    with np.errstate(invalid="ignore"):
        l_peak = np.where(inside, l_at_mode + (c[:, None] - lm) / b, np.maximum(la + h, lc))
    lo_left = logsumexp(np.stack([rc, np.minimum(la + h, lc)]), axis=(0, 2))
    up_left = logsumexp(np.stack([ra + h, l_peak]), axis=(0, 2))
    return lo_right, up_right, lo_left, up_left


def _tilted_g_bounds(
    f_i: ReleaseDensity,
    f_j: ReleaseDensity,
    a: NDArray[np.float64],
    c: NDArray[np.float64],
    modes: tuple[tuple[NDArray[np.float64], ...], tuple[NDArray[np.float64], ...]],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds ``(lower, upper)`` on ``g = log f_i - log f_j`` over each ``[a, c]`` from
    :func:`_tilted_bounds` (the tighter of the two tilts); ``modes`` from
    :meth:`ReleaseDensity._tilted_modes` of ``f_i`` and ``f_j``. NaN bounds become infinite."""
    lower, upper = np.empty(a.size), np.empty(a.size)
    chunk = max(1, 2_000_000 // max(f_i.locs.size + f_j.locs.size, 1))
    for k in range(0, a.size, chunk):
        sl = slice(k, k + chunk)
        li_r, ui_r, li_l, ui_l = _tilted_bounds(f_i, a[sl], c[sl], modes[0])
        lj_r, uj_r, lj_l, uj_l = _tilted_bounds(f_j, a[sl], c[sl], modes[1])
        lower[sl] = np.maximum(li_r - uj_r, li_l - uj_l)
        upper[sl] = np.minimum(ui_r - lj_r, ui_l - lj_l)
    return np.where(np.isnan(lower), -np.inf, lower), np.where(np.isnan(upper), np.inf, upper)


def _laplace_grid(f_i: ReleaseDensity, f_j: ReleaseDensity, lo: float, hi: float) -> NDArray[np.float64]:
    """A sorted grid on ``[lo, hi]`` through every kernel centre with ``L h <= 1/2`` per interval,
    ``L = 1/b_i + 1/b_j`` the slope bound of ``g`` for two Laplace releases (module docstring).

    Raises
    ------
    GridTooFineError
        If that takes more than :data:`MAX_GRID` points.
    """
    centres = np.concatenate([f_i.locs, f_j.locs])
    centres = centres[(centres > lo) & (centres < hi)]
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 2049), centres]))
    lip = 1.0 / f_i.scale + 1.0 / f_j.scale
    for _ in range(40):
        a, c = grid[:-1], grid[1:]
        parts = np.ceil(lip * (c - a) / 0.5)
        wide = parts > 1
        if not wide.any():
            break
        total = float(parts[wide].sum()) + grid.size
        if not math.isfinite(total) or total > MAX_GRID:
            raise GridTooFineError(
                f"the densities vary too fast for a grid of {MAX_GRID} points (noise scale too small "
                "for the priors' spread)"
            )
        k = parts[wide].astype(np.int64)
        starts, widths = a[wide], (c[wide] - a[wide])
        owner = np.repeat(np.arange(k.size), k - 1)
        offset = np.arange(owner.size) - np.repeat(np.cumsum(k - 1) - (k - 1), k - 1) + 1
        extra = starts[owner] + widths[owner] * offset / k[owner]
        grid = np.unique(np.concatenate([grid, extra]))
    return grid


# ---------------------------------------------------------------------------------------------
# Pure eps: sup |log f_i - log f_j|


@dataclass(frozen=True)
class LossBound:
    """Privacy loss ``sup_y |log f_i(y) - log f_j(y)|`` with its numerical error bound.

    Attributes
    ----------
    loss : float
        The largest ``|g|`` found at a released value (a value the supremum attains or exceeds).
    error_bound : float
        The supremum is in ``[loss, loss + error_bound]``.
    worst_y : float
        Where ``loss`` was found.
    evaluations : int
        Density evaluations used.
    """

    loss: float
    error_bound: float
    worst_y: float
    evaluations: int

    @property
    def upper(self) -> float:
        """``loss + error_bound``: a certified upper bound on the privacy loss."""
        return self.loss + self.error_bound


def privacy_loss_sup(
    f_i: ReleaseDensity, f_j: ReleaseDensity, *, tol: float = 1e-9, max_intervals: int = 2_000_000
) -> LossBound:
    """Certified ``sup_y |log f_i(y) - log f_j(y)|`` for two Laplace releases (pure eps check).

    Parameters
    ----------
    f_i, f_j : ReleaseDensity
        Releases of the two secrets with Laplace noise of the same scale ``b > 0``.
    tol : float
        Target of the error bound (nats, > 0).
    max_intervals : int
        Cap on the intervals kept; if reached, the (larger) bound reached is reported.

    Returns
    -------
    LossBound

    Raises
    ------
    ValueError
        If the noise is not Laplace with ``b > 0`` (with Gaussian noise the loss is unbounded
        unless the priors are translates, so it is not computed here).

    Notes
    -----
    Branch and bound on ``[y_lo, y_hi]`` with the slope bound ``2/b`` and, for intervals it
    leaves open, the tilted kernel bounds of :func:`_tilted_bounds` (module docstring). Beyond
    ``y_hi`` (right of every atom and ``12 s_m + s_m^2/b`` right of every Gaussian component)
    ``f(y) e^{(y - y_hi)/b}`` lies in ``[G, G + E]`` (:meth:`ReleaseDensity.tail_log_bounds`), which
    bounds ``g`` on the tail; likewise on the left. The same bound taken at each interval's ends
    prunes intervals on a plateau of ``g`` that a slope bound alone would split without end.
    SPEC sec 4 (the log-ratio is bounded, so pure eps is reachable with finite b).
    """
    if not (f_i.laplace and f_j.laplace and f_i.scale == f_j.scale):
        raise ValueError("privacy_loss_sup needs two Laplace releases with the same scale b > 0")
    b = f_i.scale
    locs = np.concatenate([f_i.locs, f_j.locs])
    sp = np.concatenate([f_i.spreads, f_j.spreads])
    hi = float((locs + 12.0 * sp + sp**2 / b).max())
    lo = float((locs - 12.0 * sp - sp**2 / b).min())
    if hi - lo < b:
        hi, lo = hi + b, lo - b
    grid = _laplace_grid(f_i, f_j, lo, hi)
    li, lj = f_i.log_pdf(grid), f_j.log_pdf(grid)
    vals = np.abs(li - lj)
    # largest |log f_i| + |log f_j| evaluated: the rounding of g is bounded by it (see _g_margin)
    mag = float(np.max(np.abs(li) + np.abs(lj)))
    evals = 2 * grid.size
    k = int(np.argmax(vals))
    best, worst_y = float(vals[k]), float(grid[k])
    tails = max(float(_tail_upper(f_i, f_j, hi, 1)[0]), float(_tail_upper(f_i, f_j, lo, -1)[0]))
    lip = 2.0 / b

    def _cheap_uppers(
        a: NDArray[np.float64], c: NDArray[np.float64], va: NDArray[np.float64], vc: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        lipschitz = (va + vc) / 2.0 + lip * (c - a) / 2.0
        return np.minimum(lipschitz, np.minimum(_tail_upper(f_i, f_j, a, 1), _tail_upper(f_i, f_j, c, -1)))

    modes = (f_i._tilted_modes(), f_j._tilted_modes())

    def tilted_uppers(a: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
        lower, upper = _tilted_g_bounds(f_i, f_j, a, c, modes)
        return np.maximum(upper, -lower)

    def uppers(
        a: NDArray[np.float64], c: NDArray[np.float64], va: NDArray[np.float64], vc: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        cheap = _cheap_uppers(a, c, va, vc)
        nonlocal evals
        open_ = cheap > max(best, tails) + tol
        if open_.any():
            evals += 4 * int(open_.sum())
            cheap[open_] = np.minimum(cheap[open_], tilted_uppers(a[open_], c[open_]))
        return cheap

    a, c, va, vc = grid[:-1], grid[1:], vals[:-1], vals[1:]
    up = uppers(a, c, va, vc)
    for _ in range(_MAX_LEVELS):
        keep = up > max(best, tails) + tol
        a, c, va, vc, up = a[keep], c[keep], va[keep], vc[keep], up[keep]
        if a.size == 0 or a.size > max_intervals:
            break
        m = (a + c) / 2.0
        lim, ljm = f_i.log_pdf(m), f_j.log_pdf(m)
        vm = np.abs(lim - ljm)
        mag = max(mag, float(np.max(np.abs(lim) + np.abs(ljm))))
        evals += 2 * m.size
        k = int(np.argmax(vm))
        if vm[k] > best:
            best, worst_y = float(vm[k]), float(m[k])
        a, c, va, vc = (
            np.concatenate([a, m]),
            np.concatenate([m, c]),
            np.concatenate([va, vm]),
            np.concatenate([vm, vc]),
        )
        up = uppers(a, c, va, vc)
    inside = float(up.max()) if a.size else best
    upper_all = max(inside, tails, best)
    # rounding of the evaluated g (the _g_margin model at the largest magnitude evaluated, once for
    # the best value and once for the interval bounds built on evaluated values), never below
    # 1e-12 (1 + best)
    rounding = max(_ROUNDING * (1.0 + best), 2.0 * float(_g_margin(mag, f_i, f_j)))
    return LossBound(best, upper_all - best + rounding, worst_y, evals)


# ---------------------------------------------------------------------------------------------
# (eps, delta): the hockey-stick divergence


@dataclass(frozen=True)
class DeltaBound:
    """The smallest delta of (eps, delta)-indistinguishability of two releases, with its bound.

    Attributes
    ----------
    epsilon : float
    delta : float
        ``max(int [f_i - e^eps f_j]_+, int [f_j - e^eps f_i]_+)`` as computed (a lower estimate).
    error_bound : float
        The true value is in ``[delta, delta + error_bound]``.
    forward, backward : float
        The two directions ``i -> j`` and ``j -> i``.
    intervals : int
        Grid intervals used.
    """

    epsilon: float
    delta: float
    error_bound: float
    forward: float
    backward: float
    intervals: int

    @property
    def upper(self) -> float:
        """``delta + error_bound``: a certified upper bound on the hockey-stick divergence."""
        return self.delta + self.error_bound


def _simple_grid(densities: list[ReleaseDensity], lo: float, hi: float, n: int = 2049) -> NDArray[np.float64]:
    """A uniform grid on ``[lo, hi]`` plus every kernel centre inside (so each kernel is monotone
    on every interval: all kernels are log-concave with their mode at their centre)."""
    centres = np.concatenate([d.locs for d in densities])
    centres = centres[(centres > lo) & (centres < hi)]
    return np.unique(np.concatenate([np.linspace(lo, hi, n), centres]))


def _kernels(f: ReleaseDensity, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log w_m + log k_m(y)``, shape (len(y), m)."""
    return f._kernel_terms(np.asarray(y, dtype=np.float64))


def _interval_log_bounds(
    ka: NDArray[np.float64], kc: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bounds on ``log f`` over intervals whose ends have kernel terms ``ka``, ``kc`` (rows).

    Every kernel is log-concave with its mode at its centre, a grid point, so on an interval each
    kernel is monotone and lies between its values at the two ends.
    """
    return logsumexp(np.minimum(ka, kc), axis=1), logsumexp(np.maximum(ka, kc), axis=1)


def hockey_stick(
    f_i: ReleaseDensity,
    f_j: ReleaseDensity,
    epsilon: float,
    *,
    tol: float = 1e-10,
    resolution: float = 1e-17,
    time_limit: float = 30.0,
) -> DeltaBound:
    """Certified hockey-stick divergence ``sup_B P_i(B) - e^eps P_j(B)`` in both directions.

    Parameters
    ----------
    f_i, f_j : ReleaseDensity
        Releases of the two secrets (same noise and scale).
    epsilon : float
        Finite and >= 0.
    tol : float
        An undecided interval whose bound on ``g = log f_i - log f_j`` is narrower than this is
        left to the error bound (default 1e-10).
    resolution : float
        An undecided interval whose contribution bound is below this is retired to the error
        bound (default 1e-17; a check against a target delta can pass a millionth of it).
    time_limit : float
        Seconds (default 30); past it the intervals still open are retired to the error bound,
        so the answer is always certified, only less tight.

    Returns
    -------
    DeltaBound

    Raises
    ------
    ValueError
        If ``epsilon`` is negative or not finite.

    Notes
    -----
    ``int [f_i - e^eps f_j]_+`` is the sum over the intervals where ``g >= eps`` of
    ``(F_i(c) - F_i(a)) - e^eps (F_j(c) - F_j(a))`` (closed-form CDFs). Every kernel is log-concave
    with its mode at its centre, and the centres are grid points, so on an interval each kernel lies
    between its values at the ends; this bounds ``log f_i``, ``log f_j`` and so ``g`` on the
    interval; for Laplace releases the tilted bounds of :func:`_tilted_g_bounds` tighten it where
    it is not decisive. Intervals with ``g >= eps`` or ``g <= eps`` throughout are decided; the others are
    bisected until that bound on their contribution, ``P_i(I) (1 - e^{-(max g - eps)})``, is below
    ``resolution``, the bound on ``g`` is narrower than ``tol``, 60 levels are reached, a million intervals
    are open or the time limit has passed; the contributions of the intervals left undecided and
    the tails beyond the range (at most ``2 * TAIL_MASS``) go to ``error_bound``, with the rounding
    of every decided interval's mass, relative to that mass (:meth:`ReleaseDensity.interval_mass`),
    and decisions on ``g`` only beyond its rounding margin (:func:`_g_margin`). Seed 003 eq (1)-(2), (16);
    SPEC sec 0 and 4.
    """
    eps = float(epsilon)
    if not math.isfinite(eps) or eps < 0.0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    lo_i, hi_i = f_i.range()
    lo_j, hi_j = f_j.range()
    grid = _simple_grid([f_i, f_j], min(lo_i, lo_j), max(hi_i, hi_j))
    ki, kj = _kernels(f_i, grid), _kernels(f_j, grid)
    state = (grid[:-1], grid[1:], ki[:-1], ki[1:], kj[:-1], kj[1:])
    modes = (f_i._tilted_modes(), f_j._tilted_modes()) if f_i.laplace and f_j.laplace else None
    deadline = time.monotonic() + time_limit / 2.0
    est_f, err_f, n_f = _one_direction(
        f_i, f_j, state, eps, tol, modes, forward=True, deadline=deadline, retire=resolution
    )
    deadline = time.monotonic() + time_limit / 2.0
    est_b, err_b, n_b = _one_direction(
        f_i, f_j, state, eps, tol, modes, forward=False, deadline=deadline, retire=resolution
    )
    tail = 2.0 * TAIL_MASS
    delta = max(est_f, est_b, 0.0)
    err = max(est_f + err_f, est_b + err_b) - delta + tail
    return DeltaBound(eps, delta, err, max(est_f, 0.0), max(est_b, 0.0), grid.size - 1 + n_f + n_b)


def _g_margin(mag: Any, f_i: ReleaseDensity, f_j: ReleaseDensity) -> NDArray[np.float64]:
    """Rounding margin of ``g = log f_i - log f_j`` where the ``|log f|`` involved sum to ``mag``
    (the four ends' bounds on an interval, or twice ``|log f_i| + |log f_j|`` at a point).

    A kernel term ``log w + log k`` is computed with an absolute error of at most
    ``16 u (2 + |log w| + |log k|)`` (a few operations on quantities of that size; the
    normal-Laplace exponents' model of :meth:`ReleaseDensity.interval_mass`), and logsumexp's
    error is at most the softmax-weighted error of its terms plus ``4u |result|``; the weighted
    ``|log k|`` is at most ``|log f| + max|log w| + 1``. So each ``log f`` bound is within
    ``16u (4 + |log f| + 2 max|log w|)`` and ``g`` within twice that.
    """
    lw = float(np.max(np.abs(f_i.log_weights))) + float(np.max(np.abs(f_j.log_weights)))
    out = 32.0 * _U * (8.0 + np.asarray(mag, dtype=np.float64) + 2.0 * lw)
    return np.where(np.isfinite(out), out, np.inf)


def _one_direction(
    f_i: ReleaseDensity,
    f_j: ReleaseDensity,
    state: tuple[NDArray[np.float64], ...],
    eps: float,
    tol: float,
    modes: tuple[tuple[NDArray[np.float64], ...], tuple[NDArray[np.float64], ...]] | None,
    *,
    forward: bool,
    deadline: float = math.inf,
    retire: float = 1e-17,
) -> tuple[float, float, int]:
    """``int [f_p - e^eps f_q]_+`` (p, q = i, j or j, i) over the grid: (estimate, error, added).

    The error is the sum of the bounds of intervals left undecided and the rounding of every
    decided interval's mass (:meth:`ReleaseDensity.interval_mass`), so it is relative to the
    masses involved. Past ``deadline`` (``time.monotonic()``) the open intervals are retired.

    With ``modes`` (Laplace releases), intervals the kernel bounds leave open are tightened by the
    tilted bounds of :func:`_tilted_g_bounds`, which decide the flat tails of ``g``."""
    e_eps = math.exp(min(eps, 700.0))  # a smaller e^eps gives a larger delta: the safe side
    a, c, kia, kic, kja, kjc = state
    f_p, f_q = (f_i, f_j) if forward else (f_j, f_i)
    parts: list[float] = []
    err = 0.0
    added = 0
    for level in range(_MAX_LEVELS + 1):
        lo_i, hi_i = _interval_log_bounds(kia, kic)
        lo_j, hi_j = _interval_log_bounds(kja, kjc)
        g_lo, g_hi = (lo_i - hi_j, hi_i - lo_j) if forward else (lo_j - hi_i, hi_j - lo_i)
        if modes is not None:
            unsure = ~((g_lo >= eps) | (g_hi <= eps))
            if unsure.any():
                t_lo, t_hi = _tilted_g_bounds(f_i, f_j, a[unsure], c[unsure], modes)
                if not forward:
                    t_lo, t_hi = -t_hi, -t_lo
                g_lo[unsure] = np.maximum(g_lo[unsure], t_lo)
                g_hi[unsure] = np.minimum(g_hi[unsure], t_hi)
        # rounding of the log-density bounds (see _g_margin): decisions only beyond it
        margin = _g_margin(np.abs(lo_i) + np.abs(hi_i) + np.abs(lo_j) + np.abs(hi_j), f_i, f_j)
        above = g_lo - margin >= eps
        below = g_hi + margin <= eps
        if above.any():
            mp_, ep_ = f_p.interval_mass(a[above], c[above])
            mq_, eq_ = f_q.interval_mass(a[above], c[above])
            contrib = mp_ - e_eps * mq_
            parts.extend(contrib.tolist())
            # kernel-mass errors, the product and the difference (each u relative)
            err += float(np.sum(ep_ + e_eps * eq_ + 3.0 * _U * (mp_ + e_eps * mq_)))
        open_ = ~(above | below)
        bound = np.zeros(a.size)
        if open_.any():
            m_open, e_open = f_p.interval_mass(a[open_], c[open_])
            gap = np.maximum(g_hi[open_] + margin[open_] - eps, 0.0)
            bound[open_] = (m_open + e_open) * -np.expm1(-gap) * (1.0 + 4.0 * _U)
        last = level == _MAX_LEVELS or int(open_.sum()) > _MAX_OPEN or time.monotonic() > deadline
        done = open_ & ((g_hi - g_lo <= tol) | (bound <= retire) | last)
        err += float(bound[done].sum())
        split = open_ & ~done
        if not split.any():
            break
        a, c, kia, kic, kja, kjc = a[split], c[split], kia[split], kic[split], kja[split], kjc[split]
        m = (a + c) / 2.0
        kim, kjm = _kernels(f_i, m), _kernels(f_j, m)
        added += m.size
        a, c = np.concatenate([a, m]), np.concatenate([m, c])
        kia, kic = np.concatenate([kia, kim]), np.concatenate([kim, kic])
        kja, kjc = np.concatenate([kja, kjm]), np.concatenate([kjm, kjc])
    total = math.fsum(parts)  # correctly rounded sum
    err += _U * abs(total)
    return total, err, added


# ---------------------------------------------------------------------------------------------
# Mutual information


@dataclass(frozen=True)
class InformationBound:
    """Mutual information ``I(S; Y)`` between the secret and the release, with its error bound.

    Attributes
    ----------
    information : float
        The estimate (nats), midpoint of the certified bracket.
    error_bound : float
        ``I(S; Y)`` is in ``[information - error_bound, information + error_bound]``.
    intervals : int
        Grid intervals used.
    """

    information: float
    error_bound: float
    intervals: int

    @property
    def upper(self) -> float:
        """``information + error_bound``: a certified upper bound."""
        return self.information + self.error_bound


def mutual_information(
    densities: list[ReleaseDensity], secret_weights: Any, *, tol: float = 1e-5, max_intervals: int = 2_000_000
) -> InformationBound:
    """Certified ``I(S; Y) = sum_s pi_s int f_s log(f_s / fbar)``, ``fbar = sum_s pi_s f_s``.

    Parameters
    ----------
    densities : list of ReleaseDensity, length k >= 2
        ``f_s``, the release given each secret (same noise and scale).
    secret_weights : array_like of float, shape (k,)
        The secret's marginal distribution ``pi_s`` (> 0, summing to 1 within 1e-9).
    tol : float
        Target of the error bound (nats, > 0).
    max_intervals : int
        Cap on the grid size; if reached, the (larger) bound reached is reported.

    Returns
    -------
    InformationBound

    Raises
    ------
    ValueError
        On fewer than two densities, or bad weights.

    Notes
    -----
    Seed 004 Def 3 with ``g(X) = S`` and no public function ``w``. On an interval ``I`` the
    kernel bounds of :func:`hockey_stick` bound ``l_s = log f_s - log fbar``, so
    ``int_I pi_s f_s l_s`` lies in ``pi_s P_s(I) [min l_s, max l_s]`` with ``P_s(I)`` from the
    CDFs and ``l_s <= log(1/pi_s)``. Intervals with the widest brackets are bisected until the
    summed half-width is below ``tol``. Outside the range the integrand
    ``fbar KL(posterior || pi) >= 0`` is at most ``fbar log(1/min pi)``.
    """
    if len(densities) < 2:
        raise ValueError(f"densities needs at least two secrets, got {len(densities)}")
    pi = np.asarray(secret_weights, dtype=np.float64)
    if pi.shape != (len(densities),) or not np.all(np.isfinite(pi)) or (pi <= 0).any():
        raise ValueError(f"secret_weights must be {len(densities)} positive numbers, got {secret_weights!r}")
    if abs(float(pi.sum()) - 1.0) > 1e-9:
        raise ValueError(f"secret_weights must sum to 1 (within 1e-9), got a sum of {float(pi.sum())!r}")
    pi = pi / pi.sum()
    mix = ReleaseDensity(
        np.concatenate([d.log_weights + math.log(p) for d, p in zip(densities, pi, strict=True)]),
        np.concatenate([d.locs for d in densities]),
        np.concatenate([d.spreads for d in densities]),
        densities[0].noise,
        densities[0].scale,
    )
    sizes = np.cumsum([0] + [d.locs.size for d in densities])
    ranges = [d.range() for d in densities]
    grid = _simple_grid([mix], min(r[0] for r in ranges), max(r[1] for r in ranges))
    cap = np.log(1.0 / pi)[:, None]

    def bracket(
        a: NDArray[np.float64], c: NDArray[np.float64], ka: NDArray[np.float64], kc: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        # ka, kc: kernel terms of the mixture (which carry log pi_s); per secret, subtract log pi_s
        lo_m, hi_m = _interval_log_bounds(ka, kc)
        los, his = [], []
        for k, p in enumerate(pi):
            sl = slice(int(sizes[k]), int(sizes[k + 1]))
            lo_s, hi_s = _interval_log_bounds(ka[:, sl], kc[:, sl])
            los.append(lo_s - math.log(p) - hi_m)
            his.append(hi_s - math.log(p) - lo_m)
        lo_b = np.minimum(np.stack(los), cap)
        hi_b = np.minimum(np.stack(his), cap)
        probs = np.maximum(np.stack([d.cdf(c) - d.cdf(a) for d in densities]), 0.0)
        w = pi[:, None] * probs
        return np.sum(w * (lo_b + hi_b) / 2.0, axis=0), np.sum(w * (hi_b - lo_b) / 2.0, axis=0)

    kg = _kernels(mix, grid)
    a, c, ka, kc = grid[:-1], grid[1:], kg[:-1], kg[1:]
    est, err = bracket(a, c, ka, kc)
    while float(err.sum()) > tol and a.size < max_intervals:
        order = np.argsort(err)[::-1]
        cum = np.cumsum(err[order])
        # split the intervals carrying half of the error, and at least an eighth of them
        n_split = max(int(np.searchsorted(cum, 0.5 * cum[-1])) + 1, min(order.size, 1 + order.size // 8))
        n_split = min(n_split, max_intervals - a.size)
        split = np.zeros(a.size, dtype=bool)
        split[order[:n_split]] = True
        keep = ~split
        sa, sc, ska, skc = a[split], c[split], ka[split], kc[split]
        m = (sa + sc) / 2.0
        km = _kernels(mix, m)
        na, nc = np.concatenate([sa, m]), np.concatenate([m, sc])
        nka, nkc = np.concatenate([ska, km]), np.concatenate([km, skc])
        ne, nr = bracket(na, nc, nka, nkc)
        a, c = np.concatenate([a[keep], na]), np.concatenate([c[keep], nc])
        ka, kc = np.concatenate([ka[keep], nka]), np.concatenate([kc[keep], nkc])
        est, err = np.concatenate([est[keep], ne]), np.concatenate([err[keep], nr])
    done_est, done_err = float(est.sum()), float(err.sum())
    tail = 2.0 * TAIL_MASS * float(np.log(1.0 / pi.min()))
    rounding = _ROUNDING * (1.0 + abs(done_est))
    info = max(done_est, 0.0)
    return InformationBound(info, done_err + tail + rounding + (info - done_est), int(a.size))


# ---------------------------------------------------------------------------------------------
# Two Gaussian releases: the hockey-stick divergence in closed form, with a derived error bound


def _mass(lo: float, hi: float, mean: float, std: float, shift: float) -> tuple[float, float]:
    """``(P(lo < Y < hi), error bound)`` for ``Y ~ N(mean, std^2)``; ``lo < hi`` may be infinite.

    The mass is a difference of the two smaller tails (``Phi(-z_lo) - Phi(-z_hi)`` right of the
    mean, ``Phi(z_hi) - Phi(z_lo)`` left of it, ``1 - Phi(z_lo) - Phi(-z_hi)`` across it), so no
    tail near 1 is subtracted from 1. Each tail carries the model of :func:`_normal_tail`, with
    ``extra = shift/std`` (``shift`` bounds ``|mean|`` in the coordinates the roots were found in:
    the subtraction, division, square root and a relative 2u in the variance).
    """

    def tail(x: float, upper: bool) -> tuple[float, float]:
        # P(Y > x) (upper) or P(Y < x): Phi(-z) with z = +-(x - mean)/std >= 0 at every call
        z = (x - mean) / std if math.isfinite(x) else math.copysign(math.inf, x)
        t, e = _normal_tail(max(z if upper else -z, 0.0), shift / std)
        return float(t), float(e)

    z_lo = (lo - mean) / std if math.isfinite(lo) else -math.inf
    z_hi = (hi - mean) / std if math.isfinite(hi) else math.inf
    if z_lo >= 0.0:  # right of the mean: upper tails
        (ta, ea), (tb, eb) = tail(lo, True), tail(hi, True)
        m = ta - tb
    elif z_hi <= 0.0:  # left of the mean: lower tails
        (ta, ea), (tb, eb) = tail(hi, False), tail(lo, False)
        m = ta - tb
    else:  # across the mean
        (ta, ea), (tb, eb) = tail(lo, False), tail(hi, True)
        m = 1.0 - ta - tb
        return max(m, 0.0), ea + eb + 2.0 * _U
    return max(m, 0.0), ea + eb + _U * (ta + tb)


def _band(r: float, w: float, s: float) -> float:
    """``2 w max N(0, s^2)`` over ``[r - w, r + w]`` (the density at the point nearest 0), rounded up."""
    if not math.isfinite(r) or w == 0.0:
        return 0.0
    z = min(max(abs(r) - w, 0.0) / s, 1e150)
    log_val = math.log(2.0 * w) - 0.5 * z * z - math.log(s * math.sqrt(2.0 * math.pi))
    return math.exp(min(log_val, 700.0)) * (1.0 + 8.0 * _U)


def _gaussian_one_direction(
    mean_i: float, var_i: float, mean_j: float, var_j: float, epsilon: float
) -> tuple[float, float]:
    """``(int [N_i - e^eps N_j]_+, error bound)`` by the closed form.

    Notes
    -----
    In ``t = y - mean_i`` the log-ratio minus eps is the quadratic ``q(t) = A t^2 + B t + C`` with
    ``A = (v_i - v_j)/(2 v_i v_j)``, ``B = -d/v_j``, ``C = d^2/(2 v_j) + log(v_j/v_i)/2 - eps``,
    ``d = mean_j - mean_i``. With ``Bset = {q > 0}`` (an interval, one or two half-lines, empty or the
    line; roots by the cancellation-free formula), ``delta = P_i(Bset) - e^eps P_j(Bset)``.

    Error bound, derived for this formula:

    1. *Masses.* Each mass is a difference of two tails from the side without cancellation
       (:func:`_mass`); the sum of their stated errors, the errors of the ``P_j`` terms times
       ``e^eps``, and ``4 u (P_i + e^eps P_j)`` for the final sum, product and subtraction. The
       bound is relative to the masses, not to 1, so ``e^eps`` never multiplies an absolute
       ``1e-16`` (seed audit, issue 19).
    2. *Roots.* For any set ``B'``, ``P_i(B') - e^eps P_j(B') <= delta``; the computed roots define
       ``B'``, and ``delta - value(B') = int_{Bset xor B'} |N_i - e^eps N_j|``. The true quadratic
       (variances within 2u, rounding of ``A, B, C`` and a backward error of 8u in each
       coefficient for the root formula) differs from the computed one by at most
       ``dq(t) = eA t^2 + eB |t| + eC``; on ``|t| <= R`` (R reaches 40 standard deviations of both
       densities) by at most ``Dq = dq(R)``. The two sets differ only where ``|q| <= Dq``. For a
       quadratic with ``disc = B^2 - 4AC >= 8 |A| Dq``: ``|q(t)| >= sqrt(disc)/2 |t - r|`` within
       half the root gap of a root ``r`` and ``|q| >= disc/(4|A|) >= 2 Dq`` elsewhere, so that
       set lies in bands ``|t - r| <= w = 2 Dq/sqrt(disc)``; linear: ``w = Dq/|B|``. There
       ``|q_true| <= 2 Dq``, so ``|N_i - e^eps N_j| <= N_i expm1(2 Dq)``, and a band adds at most
       ``2 w max_band N_i expm1(2 Dq)`` (second order). Beyond ``R`` both tails are below 1e-300.
       If the condition on ``disc`` fails (roots nearly merged), ``|q| <= 2 Dq`` only within
       ``W = sqrt(|disc|/(4A^2) + 2 Dq/|A|)`` of the vertex, where ``|q_true| <= 3 Dq``: the term is
       ``P_i(vertex +- W) expm1(3 Dq)``. A constant ``q`` within ``Dq`` of 0 means equal means and
       variances within 4u: ``delta <= TV <= 4u`` (Pinsker).
    """
    d = mean_j - mean_i
    si, sj = math.sqrt(var_i), math.sqrt(var_j)
    e_eps = math.exp(min(epsilon, 700.0))  # smaller e^eps: larger delta, the safe side
    a2 = (var_i - var_j) / (2.0 * var_i * var_j)
    a1 = -d / var_j
    c_d = d * d / (2.0 * var_j)
    c_log = 0.5 * math.log(var_j / var_i)
    a0 = c_d + c_log - epsilon
    # coefficient errors: inputs (variances within 2u, d within u) and roundings
    e_a = _U * (1.0 / var_i + 1.0 / var_j) + 5.0 * _U * abs(a2)
    e_b = 4.0 * _U * abs(a1)
    e_c = 7.0 * _U * c_d + 6.0 * _U + _U * abs(c_log) + _U * epsilon + 3.0 * _U * abs(a0)
    big_r = max(40.0 * si, abs(d) + 40.0 * sj)

    # Dq = dq(R): the coefficient errors plus 8u of each coefficient (the root formula), at |t| = R
    d_q = (
        (e_a + 8.0 * _U * abs(a2)) * big_r * big_r
        + (e_b + 8.0 * _U * abs(a1)) * big_r
        + e_c
        + 8.0 * _U * abs(a0)
    )
    # uncertain: an extra error term for where the sign of q may differ (derivation in Notes)
    if a2 == 0.0 and a1 == 0.0:
        intervals = [(-math.inf, math.inf)] if a0 > 0 else []
        # q is constant; if it is within d_q of 0 the two releases are one Gaussian up to variances
        # within 4u: delta <= TV <= sqrt(KL/2) <= 4u/(2 sqrt 2) (Pinsker), else expm1(2 d_q) x 1
        uncertain = min(4.0 * _U, math.expm1(2.0 * d_q)) if abs(a0) <= d_q else 0.0
    elif a2 == 0.0:
        r = -a0 / a1
        intervals = [(r, math.inf)] if a1 > 0 else [(-math.inf, r)]
        uncertain = _band(r, d_q / abs(a1) + 4.0 * _U * abs(r), si) * math.expm1(2.0 * d_q)
    else:
        disc = a1 * a1 - 4.0 * a2 * a0
        disc_err = 4.0 * _U * (a1 * a1 + 4.0 * abs(a2 * a0))
        if disc <= 0.0:
            intervals = [(-math.inf, math.inf)] if a2 > 0 else []
        else:
            qq = -0.5 * (a1 + math.copysign(math.sqrt(disc), a1))
            r1, r2 = sorted((qq / a2, a0 / qq))
            intervals = [(-math.inf, r1), (r2, math.inf)] if a2 > 0 else [(r1, r2)]
        if abs(disc) - disc_err >= 8.0 * abs(a2) * d_q:
            if disc > 0.0:
                w = 2.0 * d_q / math.sqrt(disc - disc_err)
                uncertain = sum(_band(r, w + 4.0 * _U * abs(r), si) for r in (r1, r2)) * math.expm1(2.0 * d_q)
            else:
                uncertain = 0.0
        else:
            # roots nearly merged: |q| <= 2 d_q only within W of the vertex; there |q_true| <= 3 d_q
            vertex = -a1 / (2.0 * a2)
            half = math.sqrt((abs(disc) + disc_err) / (4.0 * a2 * a2) + 2.0 * d_q / abs(a2)) * (
                1.0 + 8.0 * _U
            )
            m, e = _mass(vertex - half, vertex + half, 0.0, si, 0.0)
            uncertain = min(m + e, 1.0) * math.expm1(3.0 * d_q)
    p_i = p_j = err_i = err_j = 0.0
    for lo, hi in intervals:
        m, e = _mass(lo, hi, 0.0, si, 0.0)
        p_i, err_i = p_i + m, err_i + e
        m, e = _mass(lo, hi, d, sj, abs(d))
        p_j, err_j = p_j + m, err_j + e
    value = p_i - e_eps * p_j
    # |q_true| <= 2 Dq wherever the signs can differ, so the term never exceeds expm1(2 Dq) P_i(R)
    uncertain = min(uncertain, math.expm1(2.0 * d_q)) + _FAR_TAIL
    error = err_i + e_eps * err_j + 4.0 * _U * (p_i + e_eps * p_j) + uncertain
    return value, error


def _tv_upper(mean_i: float, var_i: float, mean_j: float, var_j: float) -> float:
    """Upper bound on the total variation of two Gaussians, which bounds delta at every eps >= 0.

    Pinsker: ``TV <= sqrt(KL/2)`` with ``KL = (rho - log1p(rho) + d^2/v_j)/2``, ``rho = v_i/v_j - 1``;
    ``rho - log1p(rho) <= rho^2 / (2 (1 - |rho|))``, with ``|rho|`` raised by 8u for the variances'
    rounding (within 2u each) and the division. Tight when the two are nearly one Gaussian, where
    the closed form's root bound is not.
    """
    rho = abs(var_i / var_j - 1.0) + 8.0 * _U
    if rho >= 0.5:
        return 1.0
    kl = 0.5 * (rho * rho / (2.0 * (1.0 - rho)) + (mean_j - mean_i) ** 2 / var_j * (1.0 + 4.0 * _U))
    return min(math.sqrt(kl / 2.0) * (1.0 + 4.0 * _U), 1.0)


def gaussian_delta_bound(
    mean_i: float, var_i: float, mean_j: float, var_j: float, epsilon: float
) -> DeltaBound:
    """Certified hockey-stick divergence of ``N(mean_i, var_i)`` and ``N(mean_j, var_j)``.

    Parameters
    ----------
    mean_i, mean_j : float
        Means (finite).
    var_i, var_j : float
        Variances (finite, > 0).
    epsilon : float
        Finite and >= 0.

    Returns
    -------
    DeltaBound
        Both directions; ``error_bound`` derived for the closed form as written (see
        :func:`_gaussian_one_direction`); ``intervals = 0``.

    Raises
    ------
    ValueError
        On a non-finite or negative ``epsilon``, or a variance that is not finite and > 0.

    Notes
    -----
    Gaussian priors with Gaussian noise give Gaussian releases (SPEC sec 5; seed 003 eq (16));
    equal variances give Balle and Wang (2018) Thm 8.
    """
    eps = float(epsilon)
    if not math.isfinite(eps) or eps < 0.0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    for name, v in (("var_i", var_i), ("var_j", var_j)):
        if not (math.isfinite(v) and v > 0.0):
            raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    fwd = _gaussian_one_direction(mean_i, var_i, mean_j, var_j, eps)
    bwd = _gaussian_one_direction(mean_j, var_j, mean_i, var_i, eps)
    f_val, b_val = max(fwd[0], 0.0), max(bwd[0], 0.0)
    delta = max(f_val, b_val)
    upper = min(max(f_val + fwd[1], b_val + bwd[1]), _tv_upper(mean_i, var_i, mean_j, var_j))
    err = max(upper - delta, 0.0)
    return DeltaBound(eps, delta, err, f_val, b_val, 0)
