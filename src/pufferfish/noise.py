"""Laplace and Gaussian noise samplers: secure (OpenDP) for releases, seeded NumPy for experiments.

The secure sampler is OpenDP's Laplace mechanism with an explicit granularity ``2^k``: inputs are
rounded to the grid ``2^k Z`` and discrete Laplace noise on that grid is drawn exactly from the
operating system's cryptographic randomness (Canonne, Kamath and Steinke 2020; Ghosh, Roughgarden
and Sundararajan 2012), so the output is immune to the floating-point attacks on textbook Laplace
sampling (Mironov 2012). For inputs on the grid, the density ratio of two outputs is the continuous
Laplace ratio restricted to the grid, so every bound computed for continuous Laplace noise holds.
Gaussian noise is drawn the same way with OpenDP's ``make_gaussian`` (discrete Gaussian on the
grid ``2^k``, Canonne, Kamath and Steinke 2020).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._checks import as_float_vector, check_scale

#: Granularity exponent offset: the noise grid is ``2^(floor(log2(scale)) - 40)``, at most 2^-30.
_GRID_BELOW_SCALE = 40


@dataclass(frozen=True)
class NoisyValues:
    """Values with Laplace or Gaussian noise added, and how the noise was drawn.

    Attributes
    ----------
    values : numpy.ndarray, shape (n,)
        ``x + N`` with ``N ~ Laplace(scale)`` or ``N(0, scale^2)`` i.i.d.
    scale : float
        Laplace scale ``theta`` or Gaussian ``sigma``.
    sampler : str
        Human-readable description of the sampler.
    secure : bool
        ``True`` for the cryptographically seeded, floating-point-safe sampler.
    granularity : float or None
        Grid spacing ``2^k`` of the secure sampler.
    seed : int or None
        The seed of the insecure sampler, when one was given.
    """

    values: NDArray[np.float64]
    scale: float
    sampler: str
    secure: bool
    granularity: float | None
    seed: int | None

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the sampler (without the values)."""
        return {
            "sampler": self.sampler,
            "secure": self.secure,
            "granularity": self.granularity,
            "seed": self.seed,
            "scale": self.scale,
        }


def grid_exponent(scale: float) -> int:
    """Exponent ``k`` of the secure sampler's grid ``2^k`` for a Laplace scale.

    Parameters
    ----------
    scale : float
        Laplace scale ``theta > 0``.

    Returns
    -------
    int
        ``min(-30, floor(log2(theta)) - 40)``: the grid is at least 2^40 times finer than the
        noise and at most 2^-30, so rounding the released column to it changes values by
        < 2^-31 (exact for integer codes).
    """
    return min(-30, math.floor(math.log2(scale)) - _GRID_BELOW_SCALE)


def add_laplace(
    values: Any,
    scale: float,
    *,
    rng: np.random.Generator | int | None = None,
) -> NoisyValues:
    """Add i.i.d. Laplace noise to values.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        Finite values to perturb (the public column, in its numeric codes).
    scale : float
        Laplace scale ``theta >= 0`` (noise variance ``2 theta^2``). ``0`` returns the values.
    rng : numpy.random.Generator, int or None
        ``None`` (default): the secure sampler (OpenDP, OS randomness, granularity
        ``2^grid_exponent(scale)``), for any release that leaves the library. A Generator or an
        int seed: NumPy's ``Generator.laplace``, reproducible but **not secure** (textbook
        floating-point sampling); for simulations and experiments only.

    Returns
    -------
    NoisyValues
        The noisy values and a description of the sampler.

    Raises
    ------
    ValueError
        If ``values`` is not a 1-D array of finite numbers or ``scale`` is not finite and >= 0.
    TypeError
        If ``rng`` is not a Generator, an int or None.

    Notes
    -----
    The secure path uses ``opendp.measurements.make_laplace`` on
    ``vector_domain(atom_domain(T=float, nan=False), size=n)`` with ``l1_distance`` and ``k``.
    About 10^5 values per second on one core here (``benchmarks/bench_noise.py``).
    """
    return _add_noise(values, scale, "laplace", rng)


def add_gaussian(
    values: Any,
    scale: float,
    *,
    rng: np.random.Generator | int | None = None,
) -> NoisyValues:
    """Add i.i.d. Gaussian noise ``N(0, scale^2)`` to values.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        Finite values to perturb.
    scale : float
        Standard deviation ``sigma >= 0``. ``0`` returns the values.
    rng : numpy.random.Generator, int or None
        ``None`` (default): the secure sampler (OpenDP ``make_gaussian``, discrete Gaussian on the
        grid ``2^grid_exponent(sigma)``, OS randomness). A Generator or an int seed: NumPy's
        ``Generator.normal``, **not secure**; for experiments only.

    Returns
    -------
    NoisyValues

    Raises
    ------
    ValueError
        If ``values`` is not a 1-D array of finite numbers or ``scale`` is not finite and >= 0.
    TypeError
        If ``rng`` is not a Generator, an int or None.
    """
    return _add_noise(values, scale, "gaussian", rng)


def insecure_generator(rng: Any) -> tuple[np.random.Generator | None, int | None]:
    """``(generator, seed)`` of the insecure sampler that ``rng`` asks for; ``(None, None)`` for
    the secure one.

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        ``None``: secure sampling. An int seed: a new ``default_rng(seed)``. A Generator: itself.

    Returns
    -------
    (numpy.random.Generator or None, int or None)

    Raises
    ------
    TypeError
        If ``rng`` is of any other type (``bool`` included).
    """
    if rng is None:
        return None, None
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (int, np.integer, np.random.Generator)):
        raise TypeError(
            f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}"
        )
    if isinstance(rng, np.random.Generator):
        return rng, None
    return np.random.default_rng(int(rng)), int(rng)


def _add_noise(values: Any, scale: float, kind: str, rng: np.random.Generator | int | None) -> NoisyValues:
    scale = check_scale(scale)
    x = np.asarray(values, dtype=np.float64) if np.size(values) == 0 else as_float_vector(values, "values")
    gen, seed = insecure_generator(rng)
    if gen is not None:
        if scale > 0:
            draw = (
                gen.laplace(0.0, scale, size=x.shape)
                if kind == "laplace"
                else gen.normal(0.0, scale, size=x.shape)
            )
            noisy = x + draw
        else:
            noisy = x.copy()
        name = "laplace" if kind == "laplace" else "normal"
        return NoisyValues(
            values=noisy,
            scale=scale,
            sampler=f"INSECURE numpy.random.Generator.{name} (seeded; for experiments only)",
            secure=False,
            granularity=None,
            seed=seed,
        )
    if scale == 0.0 or x.size == 0:
        return NoisyValues(x.copy(), scale, "none (scale 0: no noise added)", True, None, None)
    import opendp.prelude as dp

    dp.enable_features("contrib")
    k = grid_exponent(scale)
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(x.size))
    if kind == "laplace":
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale, k=k)
        what = "make_laplace (discrete Laplace"
    else:
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale, k=k)
        what = "make_gaussian (discrete Gaussian"
    noisy = np.asarray(meas(x.tolist()), dtype=np.float64)
    return NoisyValues(
        values=noisy,
        scale=scale,
        sampler=f"opendp {version('opendp')} {what} on the grid 2^{k}, OS randomness)",
        secure=True,
        granularity=2.0**k,
        seed=None,
    )
