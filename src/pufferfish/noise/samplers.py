"""Laplace and Gaussian noise samplers: secure for releases, seeded NumPy for experiments.

Secure Laplace noise (default ``sampler="exact"``): inputs are rounded to the grid ``2^k`` and
``2^k Z`` is added, ``Z`` exactly discrete Laplace of integer scale ``t`` drawn by the vectorised
exact samplers of :mod:`pufferfish.noise.discrete` (after Canonne, Kamath and Steinke 2020) from
cryptographic randomness (:mod:`pufferfish.noise.randomness`: OpenSSL's CSPRNG, as OpenDP's), so
the output is immune to the floating-point attacks on textbook Laplace sampling (Mironov 2012).
The scale is rounded up to ``t 2^k`` (:func:`exact_grid`) and the release checks it again. For
inputs on the grid, the ratio of the probabilities of two outputs is the continuous Laplace
density ratio restricted to the grid, so every pure-eps bound computed for continuous Laplace
noise at that scale holds. Secure Gaussian noise is ``2^k Z`` with ``Z`` exactly discrete Gaussian
of integer sigma ``s = ceil(sigma / 2^k)`` (Algorithm 3 of the same paper,
:func:`pufferfish.noise.discrete.discrete_gaussian`). For an (eps, delta) guarantee the discrete
noise's delta exceeds the continuous one's by at most :func:`discretisation_delta` (a Riemann-sum
bound), which the release adds to its check. ``sampler="opendp"`` uses OpenDP's ``make_laplace`` /
``make_gaussian`` on the same kind of grid instead (the cross-check).

The secure samplers use every core: the values are split into one chunk per worker thread of a
pool started once. The exact sampler's NumPy passes release the GIL; OpenDP's Rust core does too.
Every random bit comes from OpenSSL's CSPRNG (per-thread generators seeded by the operating
system), so the workers are independent without a seed to share or protect. The noise is i.i.d.
whatever the split, so the privacy guarantee does not depend on it.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish._checks import as_float_vector, check_scale
from pufferfish.noise.channels import MAPPING_BITS, DenseChannel, RandomizedResponseChannel
from pufferfish.priors.distributions import RELEASE_EXPONENT, to_grid, to_release_grid

#: Granularity exponent offset: the noise grid is ``2^(floor(log2(scale)) - 40)`` at every scale.
_GRID_BELOW_SCALE = 40

#: Fewest values per worker of the secure sampler: smaller inputs use fewer threads.
MIN_CHUNK = 20_000


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
    workers : int
        Threads that drew the noise (1 for the insecure sampler).
    """

    values: NDArray[np.float64]
    scale: float
    sampler: str
    secure: bool
    granularity: float | None
    seed: int | None
    workers: int = 1

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the sampler (without the values), with the rounding of the
        values to the grid before noise (``rounding``)."""
        return {
            "sampler": self.sampler,
            "secure": self.secure,
            "granularity": self.granularity,
            "rounding": rounding_text(self.granularity),
            "seed": self.seed,
            "scale": self.scale,
            "workers": self.workers,
        }


def rounding_text(granularity: float | None) -> str:
    """How a secure sampler of grid ``granularity`` rounds the values before adding noise.

    Parameters
    ----------
    granularity : float or None
        The grid ``2^k`` (None: no grid, the values are released as they are or with continuous
        noise).

    Returns
    -------
    str
        One sentence for reports, e.g. ``"values rounded to the grid 2^-11 (by at most 2^-12)
        before noise on the grid 2^-11"``.
    """
    if granularity is None:
        return "values rounded to the release grid 2^-30 (by at most 2^-31); no sampler grid"
    k = math.frexp(granularity)[1] - 1
    k_release = max(k, RELEASE_EXPONENT)
    return (
        f"values rounded to the grid 2^{k_release} (by at most 2^{k_release - 1}) "
        f"before noise on the grid 2^{k}"
    )


def grid_exponent(scale: float) -> int:
    """Exponent ``k`` of the secure sampler's grid ``2^k`` for a Laplace scale.

    Parameters
    ----------
    scale : float
        Laplace scale ``theta > 0``.

    Returns
    -------
    int
        ``floor(log2(theta)) - 40`` (exactly, from the float's exponent): the grid is 2^40 to
        2^41 times finer than the noise at every scale, so the integer scale of the exact
        samplers is in ``[2^40, 2^41]`` (within their ``2^45``) and rounding a value to the grid
        moves it by at most ``2^-41 theta``. Below ``theta = 2^11`` the grid contains the
        release grid ``2^-30`` (values on it do not move); from ``2^11`` on, values are rounded
        to the coarser grid before noise (:func:`pufferfish.priors.distributions.to_grid`), and the
        release checks
        the priors rounded the same way.

    Notes
    -----
    Issue 29: this was ``min(-30, ...)``, so every scale above ``2^15`` needed an integer scale
    beyond the sampler's ``2^45`` and the secure release refused it.
    """
    _, exponent = math.frexp(scale)  # scale = m 2^exponent, m in [0.5, 1): floor(log2) = exponent - 1
    return exponent - 1 - _GRID_BELOW_SCALE


#: Samplers of the secure Laplace path: the vectorised exact sampler, or OpenDP's.
SAMPLERS = ("exact", "opendp")


def discretisation_delta(noise: str, epsilon: float, units: float) -> float:
    """Upper bound on how much a delta computed for continuous noise understates the delta of the
    same noise on the grid.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
    epsilon : float
        The eps of the hockey-stick divergence, > 0.
    units : float
        The noise's scale in grid units, >= 1: ``t`` (Laplace, :func:`exact_grid`) or ``s``
        (Gaussian, :func:`gaussian_grid`), or ``scale / 2^k`` for OpenDP's samplers.

    Returns
    -------
    float
        ``(1 + e^eps) 2 phi(0)`` in grid units: ``(1 + e^eps) / t`` for Laplace,
        ``(1 + e^eps) sqrt(2 / pi) / s`` for Gaussian (rounded up by a relative 1e-12).

    Notes
    -----
    Inputs on the grid (spacing 1 in grid units), noise density ``phi`` of the continuous noise
    and pmf ``c phi(z)`` of the discrete noise, ``c = 1 / sum_z phi(z) <= 1`` (Poisson summation
    for the Gaussian, ``x coth x >= 1`` for the Laplace). For priors ``P_i``, ``P_j`` the
    output pmfs are ``c f_i(z)``, ``c f_j(z)`` with ``f`` the continuous mixture densities, so
    with ``h = [f_i - e^eps f_j]_+``: ``delta_discrete = c sum_z h(z) <= sum_z h(z) <=
    int h + TV(h)`` (a left Riemann sum of spacing 1 is within the total variation of the
    integral), and ``TV(h) <= int |f_i'| + e^eps int |f_j'| <= (1 + e^eps) TV(phi) =
    (1 + e^eps) 2 phi(0)``, since each ``f`` is a mixture of translates of ``phi``. Pure eps needs
    no such term: the pmf ratio at a grid point is the density ratio there.
    """
    tv = 1.0 / units if noise == "laplace" else math.sqrt(2.0 / math.pi) / units
    return (1.0 + math.exp(epsilon)) * tv * (1.0 + 1e-12)


def moved_centres_term(noise: str, epsilon: float, with_delta: bool, exponent: int, scale: float) -> float:
    """Bound on what rounding the values of a *continuous* prior to the grid ``2^exponent`` adds
    to a check of that prior (discrete priors are rounded and checked exactly instead,
    :meth:`pufferfish.priors.scenario.Scenario.on_grid`).

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
    epsilon : float
        > 0.
    with_delta : bool
        ``True``: the term is added to a delta; ``False``: to a pure-eps loss (Laplace only).
    exponent : int
        The sampler's grid exponent ``k``; no term for ``k <= -30`` (no rounding beyond the
        release grid, which the priors already model).
    scale : float
        The drawn Laplace scale ``b`` or Gaussian ``sigma``, > 0.

    Returns
    -------
    float
        With ``mu = 2^(k-1)``, the largest move of a value: ``2 mu / b`` for the pure-eps loss
        (each log density of a Laplace mixture moves by at most ``mu / b``), else
        ``(1 + e^eps) TV``, ``TV = mu / (2 b)`` (Laplace) or ``mu / (sigma sqrt(2 pi))``
        (Gaussian) the total variation between the noise and its shift by ``mu``:
        ``P'(B|i) <= P(B|i) + TV <= e^eps (P'(B|j) + TV) + delta + TV``. At most ``2^-40``
        times ``(1 + e^eps)`` for the sampler's grid (:func:`grid_exponent`).
    """
    if exponent <= RELEASE_EXPONENT:
        return 0.0
    mu = 2.0 ** (exponent - 1)
    if not with_delta:
        return 2.0 * mu / scale * (1.0 + 1e-12)
    tv = mu / (2.0 * scale) if noise == "laplace" else mu / (scale * math.sqrt(2.0 * math.pi))
    return (1.0 + math.exp(epsilon)) * tv * (1.0 + 1e-12)


def gaussian_grid(sigma: float) -> tuple[int, int, float]:
    """``(k, s, rounded)`` of the exact Gaussian sampler for ``sigma > 0``.

    The noise is ``2^k Z`` with ``Z`` discrete Gaussian of integer sigma ``s = ceil(sigma / 2^k)``
    (:func:`pufferfish.noise.discrete.discrete_gaussian`), ``k = grid_exponent(sigma)``, so
    ``rounded = s 2^k >= sigma`` within a relative ``2^-40``, and ``s >= 2^40``.
    """
    k, s = _grid_units(sigma)
    return k, s, float(s * 2.0**k)


def check_sampler(sampler: object) -> str:
    """``sampler`` if it is one of :data:`SAMPLERS`.

    Raises
    ------
    ValueError
        Naming the samplers and the value given.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    return str(sampler)


def sampler_grid(scale: float, noise: str, sampler: str) -> tuple[int, float, float]:
    """``(k, units, drawn)`` of a secure sampler for a scale ``> 0``: its grid ``2^k``, the scale
    in grid units and the scale it draws.

    ``"exact"``: :func:`exact_grid` (Laplace) or :func:`gaussian_grid` (Gaussian), the scale
    rounded up to an integer number of grid units. ``"opendp"``: the grid ``2^grid_exponent``
    and the scale as it is (OpenDP takes a real scale).
    """
    if sampler == "exact":
        return gaussian_grid(scale) if noise == "gaussian" else exact_grid(scale)
    k = grid_exponent(scale)
    return k, scale / 2.0**k, scale


def exact_grid(scale: float) -> tuple[int, int, float]:
    """``(k, t, rounded)`` of the exact sampler for a Laplace scale ``b > 0``.

    The noise is ``2^k Z`` with ``Z`` discrete Laplace of integer scale ``t = ceil(b / 2^k)``
    (:func:`pufferfish.noise.discrete.discrete_laplace`), ``k = grid_exponent(b)``, so the
    released noise has scale ``rounded = t 2^k >= b``, within a relative ``2^-40`` of ``b``:
    more noise, never less (the exact loss is non-increasing in the scale, SPEC sec 2.1, and
    the release checks it again at ``rounded``). ``b / 2^k`` is exact in float64 (a power of
    two), so the ceiling is exact.
    """
    k, t = _grid_units(scale)
    return k, t, float(t * 2.0**k)


def _grid_units(scale: float) -> tuple[int, int]:
    """``(k, ceil(scale / 2^k))`` with ``k = grid_exponent(scale)``, except that an integer scale of
    exactly ``2^41`` (a scale within ``2^k`` below a power of two) is written ``(k + 1, 2^40)``: the
    same drawn scale, whose own grid is then the same, so the grid of a drawn scale is the grid
    it was drawn on (a release that hands the drawn scale on rounds the values as checked)."""
    k = grid_exponent(scale)
    units = math.ceil(scale / 2.0**k)
    if units == 2 ** (_GRID_BELOW_SCALE + 1):
        return k + 1, 2**_GRID_BELOW_SCALE
    return k, int(units)


def add_laplace(
    values: Any,
    scale: float,
    *,
    rng: np.random.Generator | int | None = None,
    workers: int | None = None,
    sampler: str = "exact",
) -> NoisyValues:
    """Add i.i.d. Laplace noise to values.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        Finite values to perturb (the public column, in its numeric codes).
    scale : float
        Laplace scale ``theta >= 0`` (noise variance ``2 theta^2``). ``0`` returns the values.
    rng : numpy.random.Generator, int or None
        ``None`` (default): the secure sampler (cryptographic randomness, granularity
        ``2^grid_exponent(scale)``), for any release that leaves the library. A Generator or an
        int seed: NumPy's ``Generator.laplace``, reproducible but **not secure** (textbook
        floating-point sampling); for simulations and experiments only.
    workers : int, optional
        Threads of the secure sampler (default: every core, ``os.cpu_count()``); at most one per
        :data:`MIN_CHUNK` values. Ignored by the insecure sampler.
    sampler : {"exact", "opendp"}
        The secure sampler: ``"exact"`` (default), the vectorised exact discrete Laplace of
        :mod:`pufferfish.noise.discrete` at the scale :func:`exact_grid` rounds up to; or
        OpenDP's ``make_laplace`` (the cross-check).

    Returns
    -------
    NoisyValues
        The noisy values and a description of the sampler.

    Raises
    ------
    ValueError
        If ``values`` is not a 1-D array of finite numbers, ``scale`` is not finite and >= 0, or
        ``workers`` is not an int >= 1.
    TypeError
        If ``rng`` is not a Generator, an int or None.

    Notes
    -----
    The exact path rounds the values to the grid ``2^k`` and adds ``2^k Z``, ``Z`` exactly
    discrete Laplace with ``Pr(Z = z) ~ exp(-|z| 2^k / rounded)``, every random bit from
    :func:`pufferfish.noise.randomness.secure_bytes` (OpenSSL's CSPRNG), chunks drawn in parallel
    threads (NumPy's passes release the GIL). The OpenDP path uses ``opendp.measurements.make_laplace`` on
    ``vector_domain(atom_domain(T=float, nan=False), size=m)`` with ``l1_distance`` and ``k``, one
    measurement per chunk of ``m`` values, chunks drawn in parallel threads (module docstring).
    Measured rates: ``benchmarks/bench_noise.py``.
    """
    return _add_noise(values, scale, "laplace", sampler, rng, workers)


def add_gaussian(
    values: Any,
    scale: float,
    *,
    rng: np.random.Generator | int | None = None,
    workers: int | None = None,
    sampler: str = "exact",
) -> NoisyValues:
    """Add i.i.d. Gaussian noise ``N(0, scale^2)`` to values.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        Finite values to perturb.
    scale : float
        Standard deviation ``sigma >= 0``. ``0`` returns the values.
    rng : numpy.random.Generator, int or None
        ``None`` (default): the secure sampler (discrete Gaussian on the grid
        ``2^grid_exponent(sigma)``, cryptographic randomness). A Generator or an int seed: NumPy's
        ``Generator.normal``, **not secure**; for experiments only.
    workers : int, optional
        Threads of the secure sampler (default: every core); see :func:`add_laplace`.
    sampler : {"exact", "opendp"}
        ``"exact"`` (default): the vectorised exact discrete Gaussian of
        :mod:`pufferfish.noise.discrete` at the sigma :func:`gaussian_grid` rounds up to;
        ``"opendp"``: OpenDP's ``make_gaussian`` (the cross-check).

    Returns
    -------
    NoisyValues

    Raises
    ------
    ValueError
        If ``values`` is not a 1-D array of finite numbers, ``scale`` is not finite and >= 0,
        ``workers`` is not an int >= 1 or ``sampler`` is unknown.
    TypeError
        If ``rng`` is not a Generator, an int or None.

    Notes
    -----
    For an (eps, delta) guarantee, add :func:`discretisation_delta` to the continuous noise's
    delta (the release does).
    """
    return _add_noise(values, scale, "gaussian", sampler, rng, workers)


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
    ValueError
        If ``rng`` is a negative seed.
    """
    if rng is None:
        return None, None
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (int, np.integer, np.random.Generator)):
        raise TypeError(
            f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}"
        )
    if isinstance(rng, np.random.Generator):
        return rng, None
    if rng < 0:
        raise ValueError(f"rng seed (--rng-seed) must be >= 0, got {int(rng)}")
    return np.random.default_rng(int(rng)), int(rng)


#: Most sampler threads accepted (each is an OS thread; more is a typo, not a machine).
WORKERS_MAX = 1024


def check_workers(workers: Any) -> int:
    """``workers`` as an int in [1, :data:`WORKERS_MAX`]; ``None`` means every core.

    Raises
    ------
    ValueError
        If ``workers`` is not None and not an int in [1, 1024].
    """
    if workers is None:
        return max(1, os.cpu_count() or 1)
    if (
        isinstance(workers, (bool, np.bool_))
        or not isinstance(workers, (int, np.integer))
        or not 1 <= workers <= WORKERS_MAX
    ):
        raise ValueError(f"workers must be an int in [1, {WORKERS_MAX}], got {workers!r}")
    return int(workers)


def _add_noise(
    values: Any,
    scale: float,
    kind: str,
    sampler: str,
    rng: np.random.Generator | int | None,
    workers: int | None,
) -> NoisyValues:
    scale = check_scale(scale)
    sampler = check_sampler(sampler)
    n_workers = check_workers(workers)
    x = np.asarray(values, dtype=np.float64) if np.size(values) == 0 else as_float_vector(values, "values")
    x = to_release_grid(x)  # what the checks saw (priors.to_release_grid); a no-op for the sampler's 2^k
    gen, seed = insecure_generator(rng)
    if gen is not None:
        if scale > 0:
            draw = (
                gen.normal(0.0, scale, size=x.shape)
                if kind == "gaussian"
                else gen.laplace(0.0, scale, size=x.shape)
            )
            noisy = x + draw
        else:
            noisy = x.copy()
        name = "normal" if kind == "gaussian" else "laplace"
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
    if sampler == "exact":
        return _exact_noise(x, scale, n_workers, gaussian=kind == "gaussian")
    import opendp.prelude as dp

    dp.enable_features("contrib")
    k = sampler_grid(scale, kind, sampler)[0]
    what = "make_laplace (discrete Laplace" if kind == "laplace" else "make_gaussian (discrete Gaussian"
    measurements: dict[int, Any] = {}

    def measurement(size: int) -> Any:
        if size not in measurements:
            domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)
            if kind == "laplace":
                measurements[size] = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale, k=k)
            else:
                measurements[size] = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale, k=k)
        return measurements[size]

    def sample(chunk: NDArray[np.float64]) -> NDArray[np.float64]:
        # on the grid first, by the function the checks use (OpenDP's own rounding is then a no-op)
        return np.asarray(measurement(chunk.size)(to_grid(chunk, k).tolist()), dtype=np.float64)

    noisy, n_chunks = _in_chunks(x, n_workers, sample, prepare=measurement)
    return NoisyValues(
        values=noisy,
        scale=scale,
        sampler=f"opendp {version('opendp')} {what} on the grid 2^{k}, OS randomness)",
        secure=True,
        granularity=2.0**k,
        seed=None,
        workers=n_chunks,
    )


def _in_chunks(
    x: NDArray[np.float64],
    n_workers: int,
    sample: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    prepare: Callable[[int], Any] | None = None,
) -> tuple[NDArray[np.float64], int]:
    """``(sample applied to x, chunks)`` (:func:`_on_pool`); ``prepare(chunk size)`` runs for each
    chunk before the threads start."""
    out = np.empty_like(x)

    def into(a: int, b: int) -> None:
        out[a:b] = sample(x[a:b])

    return out, _on_pool(x.size, n_workers, into, prepare)


def _on_pool(
    size: int, n_workers: int, work: Callable[[int, int], None], prepare: Callable[[int], Any] | None = None
) -> int:
    """Run ``work(a, b)`` over ``[0, size)`` split into one chunk per worker (at least
    :data:`MIN_CHUNK` each) on the threads of a pool kept for the process (:func:`_pool`; threads
    are not started per call), or in this thread for one chunk; returns the number of chunks."""
    bounds = np.linspace(0, size, max(1, min(n_workers, size // MIN_CHUNK)) + 1).astype(np.intp).tolist()
    chunks = list(itertools.pairwise(bounds))
    if prepare is not None:
        for a, b in chunks:
            prepare(b - a)
    if len(chunks) == 1:
        work(*chunks[0])
        return 1
    for job in [_pool().submit(work, a, b) for a, b in chunks]:
        job.result()
    return len(chunks)


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The secure samplers' worker threads, one per core (:data:`WORKERS_MAX` at most), started
    once per process: a release draws each batch on them. A child made by ``fork`` has none of
    its parent's threads, so it starts its own pool (keyed by process id)."""
    with _POOL_LOCK:
        pid = os.getpid()
        if pid not in _POOLS:
            _POOLS.clear()  # a parent's pool, inherited by fork: its threads do not exist here
            _POOLS[pid] = ThreadPoolExecutor(
                max_workers=min(os.cpu_count() or 1, WORKERS_MAX), thread_name_prefix="pufferfish-noise"
            )
        return _POOLS[pid]


def _exact_noise(x: NDArray[np.float64], scale: float, n_workers: int, *, gaussian: bool) -> NoisyValues:
    """``x`` (on the release grid already: :func:`_add_noise`) plus exact noise drawn for it alone."""
    return NoiseStream("gaussian" if gaussian else "laplace", scale, n_workers, ahead=0).add_on_grid(x)


class NoiseStream:
    """Secure exact noise of one scale for values that come in batches: drawn ahead, on every
    core, in calls of at least ``ahead`` values from the second batch on (the first draws only
    what it needs), and handed out in order, each value once.

    A release reads its table in batches of about 120,000 rows; drawing each batch's noise in one
    call of the exact sampler costs a fixed overhead per call (its blocks, the worker threads'
    round trip), so the stream draws for several batches at once (issue 45). The noise values are
    i.i.d. whatever the calls, and each is added to one value only, so the output is the same in
    law as :func:`add_laplace` / :func:`add_gaussian` on each batch; values drawn and not used are
    dropped with the stream.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
    scale : float
        Laplace scale or Gaussian sigma, finite and > 0 (rounded up to the sampler's grid as by
        :func:`add_laplace`).
    workers : int, optional
        Threads of each draw (default: every core).
    ahead : int
        Fewest values a draw makes (default ``2^21``; 0: exactly what is asked).

    Raises
    ------
    ValueError
        If ``noise`` is not one of the two, ``scale`` is not finite and > 0, ``workers`` is not
        an int >= 1 or ``ahead < 0``.
    """

    def __init__(self, noise: str, scale: float, workers: int | None = None, ahead: int = 2**21) -> None:
        from pufferfish.noise.discrete import build_tables, discrete_gaussian, discrete_laplace
        from pufferfish.noise.randomness import SOURCE

        if noise not in ("laplace", "gaussian"):
            raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
        if check_scale(scale) == 0.0:
            raise ValueError(f"scale must be > 0 for a noise stream, got {scale!r}")
        if isinstance(ahead, bool) or not isinstance(ahead, int) or ahead < 0:
            raise ValueError(f"ahead must be an int >= 0, got {ahead!r}")
        gaussian = noise == "gaussian"
        self._workers, self._ahead = check_workers(workers), ahead
        self._k, units, self.scale = sampler_grid(scale, noise, "exact")
        self._units = int(units)  # an integer for the exact sampler
        self._draw = discrete_gaussian if gaussian else discrete_laplace
        build_tables(self._units + 1 if gaussian else self._units)  # before the threads: built once, shared
        self._left = np.empty(0, dtype=np.int64)
        self._drawn_once = False
        self._chunks = 1
        what = (
            f"discrete Gaussian (Canonne, Kamath and Steinke 2020, Alg 3, vectorised) on the grid "
            f"2^{self._k}, integer sigma s = {self._units} (sigma rounded up to {self.scale!r})"
            if gaussian
            else f"discrete Laplace (exact, vectorised; Canonne, Kamath and Steinke 2020) on the grid "
            f"2^{self._k}, integer scale t = {self._units} (scale rounded up to {self.scale!r})"
        )
        self.sampler = f"pufferfish exact {what}, cryptographic randomness ({SOURCE})"

    def add(self, values: Any) -> NoisyValues:
        """``values`` (1-D, finite) on the sampler's grid plus the next ``len(values)`` noise values.

        Raises
        ------
        ValueError
            If ``values`` is not a 1-D array of finite numbers.
        """
        x = (
            np.asarray(values, dtype=np.float64)
            if np.size(values) == 0
            else as_float_vector(values, "values")
        )
        return self.add_on_grid(to_release_grid(x))

    def add_on_grid(self, x: NDArray[np.float64]) -> NoisyValues:
        """:meth:`add` for values already on the release grid (checked by the caller)."""
        g = 2.0**self._k
        if self._left.size < x.size:  # the first batch draws only its own: one batch wastes none
            short = x.size - self._left.size
            fresh = self._drawn(max(short, self._ahead) if self._drawn_once else short)
            self._drawn_once = True
            self._left = np.concatenate([self._left, fresh]) if self._left.size else fresh
        z, self._left = self._left[: x.size], self._left[x.size :]
        noisy = z.astype(np.float64)
        noisy *= g  # exact: a power of two times an integer below 2^53
        noisy += x if self._k <= RELEASE_EXPONENT else to_grid(x, self._k)
        return NoisyValues(noisy, self.scale, self.sampler, True, g, None, workers=self._chunks)

    def _drawn(self, size: int) -> NDArray[np.int64]:
        """``size`` noise values drawn on the pool's threads (:func:`_on_pool`)."""
        out = np.empty(size, dtype=np.int64)

        def into(a: int, b: int) -> None:
            out[a:b] = self._draw(self._units, b - a)

        self._chunks = _on_pool(size, self._workers, into)
        return out


@dataclass(frozen=True)
class MappedValues:
    """Alphabet positions released by a randomized mapping, and how they were drawn.

    Attributes
    ----------
    indices : numpy.ndarray of intp, shape (n,)
        The released value's position in the alphabet, for each input position.
    sampler : str
        Human-readable description of the sampler.
    secure : bool
        ``True`` for integer sampling from the operating system's CSPRNG.
    seed : int or None
        The seed of the insecure sampler, when one was given.
    """

    indices: NDArray[np.intp]
    sampler: str
    secure: bool
    seed: int | None

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the sampler (without the values)."""
        return {"sampler": self.sampler, "secure": self.secure, "granularity": 2.0**-MAPPING_BITS,
                "seed": self.seed, "scale": None, "workers": 1}  # fmt: skip


def sample_mapping(
    indices: Any,
    channel: Any,
    *,
    rng: np.random.Generator | int | None = None,
    random_bytes: Any = None,
) -> MappedValues:
    """Release each alphabet position ``x`` as ``w`` with probability ``W[x, w] / 2^52``.

    Parameters
    ----------
    indices : array_like of int, shape (n,)
        Positions of the true values in the alphabet, in ``[0, k)``.
    channel : DenseChannel, RandomizedResponseChannel or array_like of int64, shape (k, k)
        The mapping (:mod:`pufferfish.noise.channels`); an array is the dense matrix of integer weights
        ``W``, non-negative, every row summing to ``2^52`` exactly, ``k <= 1024``.
    rng : numpy.random.Generator, int or None
        ``None`` (default): the secure sampler. A Generator or an int seed: NumPy's
        ``Generator.integers``, reproducible but **not secure**; for experiments only.
    random_bytes : callable, optional
        ``random_bytes(n) -> bytes`` replacing :func:`pufferfish.noise.randomness.secure_bytes`
        (tests drive the secure path
        with a deterministic source through it).

    Returns
    -------
    MappedValues

    Raises
    ------
    ValueError
        If a weight row does not sum to ``2^52``, a weight is negative, or an index is outside
        ``[0, k)``.

    Notes
    -----
    Exact integer sampling, no floating point on the random path: ``U`` is uniform on
    ``{0, ..., 2^52 - 1}`` (the top 52 bits of 8 cryptographically random bytes, so every value has
    probability ``2^-52`` exactly, without rejection), and the channel turns ``(x, U)`` into the
    released position with integer arithmetic only (:meth:`DenseChannel.draw`: the first ``w``
    with cumulative weight ``C[x, w] > U``; :meth:`RandomizedResponseChannel.draw`: keep when
    ``U < keep``, else the ``(U - keep) // other``-th other position).
    """
    chan = (
        channel if isinstance(channel, (DenseChannel, RandomizedResponseChannel)) else DenseChannel(channel)
    )
    one = 2**MAPPING_BITS
    x = np.asarray(indices)
    if x.size and (not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= chan.k):
        raise ValueError(f"indices must be integers in [0, {chan.k}), got {x.dtype} values")
    x = x.astype(np.int64)
    gen, seed = insecure_generator(rng)
    n = x.size
    if gen is not None:
        u = gen.integers(0, one, size=n, dtype=np.int64)
        sampler = "INSECURE numpy.random.Generator.integers (seeded; for experiments only)"
    else:
        from pufferfish.noise.randomness import SOURCE, secure_bytes

        draw = secure_bytes if random_bytes is None else random_bytes
        u = (np.frombuffer(draw(8 * n), dtype="<u8") >> np.uint64(64 - MAPPING_BITS)).astype(np.int64)
        sampler = f"integer sampling of a dyadic (2^-52) channel, cryptographic randomness ({SOURCE})"
    return MappedValues(chan.draw(x, u), sampler, gen is None, seed)
