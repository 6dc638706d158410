"""The cryptographic randomness of the secure samplers: OpenSSL's CSPRNG, as OpenDP's.

The exact samplers (:mod:`pufferfish.noise.discrete`) and the mapping sampler read their random
bytes from :func:`secure_bytes`: OpenSSL's ``RAND_bytes`` through Python's :mod:`ssl` module,
the source of OpenDP's secure samplers (its ``fill_bytes`` with the ``use-openssl`` feature).
OpenSSL (1.1.1 and later; Python requires it) draws from a deterministic random bit generator of
NIST SP 800-90A (CTR-DRBG with AES-256), seeded and periodically reseeded from the operating
system, and reseeded in a child process after ``fork``; its output is "cryptographically strong"
(Python documentation of ``ssl.RAND_bytes``). It is about six times faster than
:func:`os.urandom` on both cores here (``benchmarks/bench_randomness.py``: 360 against 57 million
values a second of the Laplace sampler's bytes), whose kernel generator was most of a secure
release's CPU time (issue 45). Where Python has no :mod:`ssl`, :func:`os.urandom` is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable

RandomBytes = Callable[[int], bytes]

_rand_bytes: RandomBytes | None
try:
    from ssl import RAND_bytes as _rand_bytes
except ImportError:  # pragma: no cover - Python built without OpenSSL
    _rand_bytes = None

#: What :func:`secure_bytes` reads, for the samplers' descriptions.
SOURCE = "OpenSSL RAND_bytes" if _rand_bytes is not None else "os.urandom"


def secure_bytes(n: int) -> bytes:
    """``n`` bytes from OpenSSL's CSPRNG (``ssl.RAND_bytes``), or :func:`os.urandom` without
    :mod:`ssl`.

    Parameters
    ----------
    n : int
        >= 0.

    Returns
    -------
    bytes
        Of length ``n``, each bit an independent fair bit (computationally).

    Raises
    ------
    ssl.SSLError
        If OpenSSL's generator could not be seeded.
    """
    if _rand_bytes is None:  # pragma: no cover - Python built without OpenSSL
        return os.urandom(n)
    return _rand_bytes(n)
