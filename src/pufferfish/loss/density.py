"""The density of a release ``Y = X + N`` for any prior and Laplace or Gaussian noise, with rounding models.

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

:class:`ReleaseDensity` evaluates ``log f``, the CDF and interval masses, each with its own
rounding model (beside the code), for the checks of :mod:`pufferfish.loss.divergence` and
:mod:`pufferfish.loss.gaussian`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import erfcx, log_ndtr, logsumexp, ndtr, ndtri

from pufferfish._checks import check_scale
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior, Prior

#: Noise distributions.
NOISES: tuple[str, ...] = ("laplace", "gaussian")

#: Probability left in each far tail outside the integration range (added to error bounds).
TAIL_MASS = 1e-15

_LOG_2PI = math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
#: Unit roundoff of float64 (``u`` of the rounding models).
U = 2.0**-53


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
FAR_TAIL = 1e-300


def normal_tail(z: Any, extra: Any = 0.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(Phi(-z), error bound)`` for ``z >= 0`` (possibly infinite): the side without cancellation.

    The one rounding model of a normal tail, used by every certified check: scipy's ``ndtr``
    (``_NDTR_REL u (1 + z^2)`` relative), the rounding of ``z`` itself, at most ``4u (z + extra)``
    (``extra = shift/std`` where the centre was rounded in other coordinates), which moves
    ``Phi(-z)`` by at most ``(z + 1)`` times that relatively (inverse Mills ratio
    ``phi(z)/Phi(-z) <= z + 1`` for ``z >= 0``), and ``FAR_TAIL`` absolute below 1e-300 (a tail
    at ``z = inf`` is exactly 0).
    """
    zz = np.asarray(z, dtype=np.float64)
    t = ndtr(-zz)
    with np.errstate(invalid="ignore"):
        rel = _NDTR_REL * U * (1.0 + zz * zz) + 4.0 * U * (zz + 1.0) * (zz + extra)
        e = np.where(t > 0.0, rel * t, 0.0)
    return t, e + np.where((t < FAR_TAIL) & np.isfinite(zz), FAR_TAIL, 0.0)


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
        return kernel_halves(
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
        * Gaussian ``N(x, v)``: ``Phi(-z)`` with the model of :func:`normal_tail`;
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
            e = ea + ec + U * (ta + tc) + np.where(right | left, 0.0, 2.0 * U)
            m = np.maximum(m, 0.0)
            mass[k : k + step] = m @ w
            err[k : k + step] = e @ w + 4.0 * U * (m @ w)
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
                e_atom = np.where(t_atom > 0.0, 4.0 * U * (2.0 + au / b) * t_atom, 0.0)
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
                exp_err = 16.0 * U * (1.0 + au / b + z * z)
                e_nl = (
                    np.where(phi > 0.0, 16.0 * U * (1.0 + z * z) * phi, 0.0)
                    + np.where(el + er > 0.0, exp_err * (el + er), 0.0)
                    + 2.0 * U * (phi + el + er)
                    + 1e-300
                )
            t = np.where(s > 0.0, t_nl, t_atom)
            e = np.where(s > 0.0, e_nl, e_atom)
            return t, np.where(np.isfinite(e), e, np.inf)
        return normal_tail(au / np.sqrt(self.variances)[None, :])

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


def kernel_halves(
    u: NDArray[np.float64], s: NDArray[np.float64], lw: NDArray[np.float64], b: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(L, R)`` of :meth:`ReleaseDensity._laplace_halves` at offsets ``u = y - centre``
    (arrays broadcast together: spreads ``s``, log weights ``lw``)."""
    ss = np.where(s > 0.0, s, 1.0)
    with np.errstate(invalid="ignore"):
        left = np.where(s > 0.0, _log_tilted_ndtr(u, ss, b), -np.abs(u) / b) - math.log(2.0 * b)
        right = np.where(s > 0.0, _log_tilted_ndtr(-u, ss, b) - math.log(2.0 * b), -np.inf)
    return left + lw, right + lw


def tail_upper(f_i: ReleaseDensity, f_j: ReleaseDensity, y0: Any, side: int) -> NDArray[np.float64]:
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
