"""Multi-user systems and the distribution of their summation query (seed 000 sec 3).

Users ``i`` report independent random values ``D_i ~ P_i`` and are present with probability
``zeta_i``; the query is ``X = sum_i D_i`` where an absent user contributes 0 (seed 000 Remark 1).
So a user ``j`` other than the target enters ``X`` as the mixture
``(1 - zeta_j) delta_0 + zeta_j P_j``, and for the target user ``i`` (seed 000 Table 1, eq 7-9):

=============  ============================================  ===================================
secret         meaning                                       ``X`` given the secret
=============  ============================================  ===================================
``s_{a,i}``    present, reports ``a``                        ``a + R_i``
``s_{bot,i}``  absent                                        ``R_i``
``s_{P,i}``    present, ``D_i ~ P_i``                        ``D_i + R_i``
``s_{Q,i}``    present, ``D_i ~ Q_i`` (the alternative)      ``D_i' + R_i``
=============  ============================================  ===================================

with ``R_i = sum_{j != i} D_j`` (the other users). The four discriminative pair sets of seed 000
sec 4 are ``ab``, ``a-bot``, ``P-bot`` and ``P-Q`` (:data:`PAIR_SETS`).

The sums themselves are computed by :mod:`.convolution`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from pufferfish._checks import as_float_vector, short_repr
from pufferfish.multiuser.convolution import sum_distribution
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.scenario import AdversaryPrior, Scenario

#: Systems shipped with the package, readable by name (``pufferfish multiuser seed000-4users``):
#: seed 000's 4-user example (Tables 2-3), the file ``examples/seed000-4users.json`` of the repository.
SHIPPED_SYSTEMS = ("seed000-4users",)

#: The discriminative pair sets of seed 000 sec 4.
PAIR_SETS: tuple[str, ...] = ("ab", "a-bot", "P-bot", "P-Q")

#: Name of the single adversary prior of a multi-user scenario.
SYSTEM_PRIOR = "system"

# ---------------------------------------------------------------------------------------------
# Model


@dataclass(frozen=True)
class User:
    """One user of a multi-user system (seed 000 sec 3).

    Parameters
    ----------
    name : str
        Unique, non-empty name.
    prior : DiscretePrior
        ``P_i``: distribution of the value ``D_i`` the user reports when present (any finite real
        support, in the unit of the query).
    presence : float
        ``zeta_i`` in ``[0, 1]``: probability that the user is present (default 1). Only matters
        when the user is one of the *other* users of a query.
    alternative : DiscretePrior, optional
        ``Q_i``, the other distribution of the pair set ``P-Q`` (seed 000 sec 4.4).
    values : tuple of float, optional
        ``(a,)`` or ``(a, b)``: the reported values of the pair sets ``a-bot`` (uses ``a``) and
        ``ab`` (needs ``a != b``), seed 000 sec 4.1-4.2.

    Raises
    ------
    ValueError
        If the name is empty, ``presence`` is outside ``[0, 1]``, or ``values`` does not hold one
        or two finite numbers.
    """

    name: str
    prior: DiscretePrior
    presence: float = 1.0
    alternative: DiscretePrior | None = None
    values: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"user name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.prior, DiscretePrior):
            raise ValueError(f"prior of user {self.name!r} must be a DiscretePrior, got {self.prior!r}")
        if self.alternative is not None and not isinstance(self.alternative, DiscretePrior):
            raise ValueError(
                f"alternative of user {self.name!r} must be a DiscretePrior, got {self.alternative!r}"
            )
        try:
            zeta = float(self.presence)
        except (TypeError, ValueError):
            raise ValueError(
                f"presence of user {self.name!r} must be a number in [0, 1], got {self.presence!r}"
            ) from None
        if not 0.0 <= zeta <= 1.0:
            raise ValueError(f"presence of user {self.name!r} must be in [0, 1], got {self.presence!r}")
        object.__setattr__(self, "presence", zeta)
        if self.values is not None:
            vals = as_float_vector(self.values, f"values of user {self.name!r}")
            if vals.size > 2:
                raise ValueError(
                    f"values of user {self.name!r} must be [a] or [a, b], got {len(vals)} numbers"
                )
            object.__setattr__(self, "values", tuple(float(v) for v in vals))

    def contribution(self) -> DiscretePrior:
        """How this user enters the sum of the *other* users: ``(1 - zeta) delta_0 + zeta P``.

        Returns
        -------
        DiscretePrior
            The mixture; equal to ``prior`` when ``presence == 1`` (seed 000 Remark 1).
        """
        if self.presence == 1.0:
            return self.prior
        support = np.union1d(self.prior.support, [0.0])
        with np.errstate(divide="ignore"):
            log_mix = np.log(self.presence) + self.prior.log_on(support)
            zero = support == 0.0
            log_mix[zero] = np.logaddexp(log_mix[zero], math.log1p(-self.presence))
        return DiscretePrior.from_log_pmf(support, log_mix)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as read by :meth:`MultiUserSystem.from_dict`."""
        out: dict[str, Any] = {"name": self.name, **self.prior.to_dict(), "presence": self.presence}
        if self.alternative is not None:
            out["alternative"] = self.alternative.to_dict()
        if self.values is not None:
            out["values"] = list(self.values)
        return out


@dataclass(frozen=True)
class MultiUserSystem:
    """Users whose reported values are summed (seed 000 sec 3).

    Parameters
    ----------
    users : sequence of User
        At least one user; names must be unique.

    Raises
    ------
    ValueError
        If there is no user or two users share a name.

    Examples
    --------
    The three users of seed 000 Table 2 and user 4 of Table 3:

    >>> sys = MultiUserSystem.from_arrays(
    ...     [[1, 2, 3, 4, 5]] * 4,
    ...     [[.01, .04, .1, .2, .65], [.7, .2, .05, .04, .01], [.2] * 5, [.4, .1, 0, .1, .4]])
    >>> sys.names
    ('u1', 'u2', 'u3', 'u4')
    >>> float(sum_distribution([u.prior for u in sys.users]).support[-1])
    20.0
    """

    users: tuple[User, ...]
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        users = tuple(self.users)
        if not users:
            raise ValueError("users must hold at least one user, got none")
        index: dict[str, int] = {}
        for k, u in enumerate(users):
            if not isinstance(u, User):
                raise ValueError(f"users must hold User objects, got {u!r} at index {k}")
            if u.name in index:
                raise ValueError(f"user names must be unique, got {u.name!r} twice")
            index[u.name] = k
        object.__setattr__(self, "users", users)
        object.__setattr__(self, "_index", index)

    @property
    def names(self) -> tuple[str, ...]:
        """The users' names, in order."""
        return tuple(u.name for u in self.users)

    def user(self, name: str) -> User:
        """The user called ``name``.

        Raises
        ------
        ValueError
            If there is no such user.
        """
        if name not in self._index:
            known = ", ".join(short_repr(n) for n in self.names[:10])
            more = ", ..." if len(self.users) > 10 else ""
            raise ValueError(f"user must be one of {known}{more}, got {short_repr(name)}")
        return self.users[self._index[name]]

    def others(self, name: str) -> tuple[User, ...]:
        """Every user except ``name`` (the ``-i`` of seed 000 sec 3)."""
        k = self._index[self.user(name).name]
        return self.users[:k] + self.users[k + 1 :]

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_arrays(
        cls,
        supports: Sequence[Any],
        pmfs: Sequence[Any],
        *,
        presence: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
    ) -> MultiUserSystem:
        """Build a system from one support and one pmf per user.

        Parameters
        ----------
        supports, pmfs : sequence of array_like, length K
            ``supports[i]`` (strictly increasing reals) and ``pmfs[i]`` (probabilities summing to
            1) of user ``i``.
        presence : sequence of float, length K, optional
            ``zeta_i`` in ``[0, 1]`` (default all 1).
        names : sequence of str, length K, optional
            Default ``u1, ..., uK``.

        Returns
        -------
        MultiUserSystem

        Raises
        ------
        ValueError
            If the lengths differ or a distribution is invalid.
        """
        k = len(supports)
        if len(pmfs) != k:
            raise ValueError(f"supports and pmfs must have the same length, got {k} and {len(pmfs)}")
        zetas = [1.0] * k if presence is None else list(presence)
        labels = [f"u{i + 1}" for i in range(k)] if names is None else list(names)
        if len(zetas) != k or len(labels) != k:
            raise ValueError(
                f"presence and names must have one entry per user ({k}), got {len(zetas)} and {len(labels)}"
            )
        return cls(
            tuple(User(labels[i], DiscretePrior(supports[i], pmfs[i]), presence=zetas[i]) for i in range(k))
        )

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> MultiUserSystem:
        """Build a system from ``{"users": [{"name", "support", "pmf", "presence"?, ...}]}``.

        Parameters
        ----------
        obj : mapping
            ``users`` is a list of objects with ``name`` (str), ``support`` and ``pmf`` (lists of
            numbers), optional ``presence`` (default 1), ``alternative`` (``{"support", "pmf"}``,
            the ``Q`` of ``P-Q``) and ``values`` (``[a]`` or ``[a, b]``).

        Returns
        -------
        MultiUserSystem

        Raises
        ------
        ValueError
            If a key is missing or has the wrong type; the message names the user and the key.
        """
        if not isinstance(obj, Mapping) or not isinstance(obj.get("users"), list):
            raise ValueError('system must be an object with a "users" list, got ' + _short(obj))
        users = []
        for k, entry in enumerate(obj["users"]):
            if not isinstance(entry, Mapping):
                raise ValueError(f"users[{k}] must be an object, got {_short(entry)}")
            name = entry.get("name", f"u{k + 1}")
            where = f"user {name!r}"
            for key in ("support", "pmf"):
                if key not in entry:
                    raise ValueError(f'{where} needs "{key}", which is missing')
            unknown = set(entry) - {"name", "support", "pmf", "presence", "alternative", "values"}
            if unknown:
                raise ValueError(f"{where} has unknown keys {sorted(unknown)}")
            try:
                prior = DiscretePrior(entry["support"], entry["pmf"])
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            alt = None
            if entry.get("alternative") is not None:
                a = entry["alternative"]
                if not isinstance(a, Mapping) or "support" not in a or "pmf" not in a:
                    raise ValueError(f'{where}: "alternative" must be {{"support": [...], "pmf": [...]}}')
                try:
                    alt = DiscretePrior(a["support"], a["pmf"])
                except ValueError as exc:
                    raise ValueError(f"{where}: alternative: {exc}") from None
            values = entry.get("values")
            users.append(
                User(
                    name,
                    prior,
                    presence=entry.get("presence", 1.0),
                    alternative=alt,
                    values=None if values is None else tuple(values),
                )
            )
        return cls(tuple(users))

    @classmethod
    def from_json(cls, path: str | Path) -> MultiUserSystem:
        """Read a system from a JSON file in the format of :meth:`from_dict`, or a shipped example
        by name (:data:`SHIPPED_SYSTEMS`: ``seed000-4users``, seed 000's 4-user example) when no
        such file exists.

        Raises
        ------
        ValueError
            If the file cannot be read or parsed, or the content is invalid.
        """
        p = Path(path)
        name = str(path).removesuffix(".json")
        if not p.exists() and name in SHIPPED_SYSTEMS:
            p = Path(str(resources.files("pufferfish") / "datasets" / f"{name}.json"))
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read system file {str(p)!r}: {exc.strerror or exc}") from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"system file {str(p)!r} is not valid JSON: {exc}") from None
        return cls.from_dict(obj)

    @classmethod
    def from_table(
        cls,
        data: Any,
        *,
        value: str,
        user_by: str,
        users: Sequence[str] | None = None,
        codes: Mapping[str, float] | None = None,
    ) -> MultiUserSystem:
        """One user per class of records: ``P_i = Pr(value | user_by = i)`` (seed 000 Fig 5, 9).

        Parameters
        ----------
        data : str, pathlib.Path or pandas.DataFrame
            A CSV or Parquet file, a DataFrame, or a shipped dataset name (``"adult"``).
        value : str
            Column whose per-class distribution is the user's ``P_i``. Numeric columns are used
            as they are; a text column needs ``codes``.
        user_by : str
            Column whose values name the users (classes of records).
        users : sequence of str, optional
            Classes to keep, in this order (default: every class, sorted).
        codes : mapping of str to float, optional
            Number of each label of a text ``value`` column (labels may share a number, e.g. to
            reduce ``relationship`` to married = 1 / unmarried = 0). Every label present must
            have a code.

        Returns
        -------
        MultiUserSystem
            Users named by their class, presence 1.

        Raises
        ------
        ValueError
            If a column is missing, a label has no code, or a requested class has no rows.
        """
        from pufferfish.tables.duckdb_engine import estimate_class_counts

        counts = estimate_class_counts(data, value=value, by=user_by, codes=codes)
        names = sorted(counts) if users is None else list(users)
        out = []
        for name in names:
            if name not in counts:
                raise ValueError(f"users: no row has {user_by} = {name!r}")
            support, weights = counts[name]
            out.append(User(name, DiscretePrior.from_counts(support, weights)))
        return cls(tuple(out))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as read by :meth:`from_dict`."""
        return {"users": [u.to_dict() for u in self.users]}


def _short(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------
# Query distributions and scenarios


def others_distribution(system: MultiUserSystem, user: str) -> DiscretePrior:
    """Distribution of ``R_i = sum_{j != i} D_j``, absent users counting 0 (seed 000 eq 7-9).

    Parameters
    ----------
    system : MultiUserSystem
    user : str
        Name of the target user ``i``.

    Returns
    -------
    DiscretePrior
        Sum of the mixtures ``(1 - zeta_j) delta_0 + zeta_j P_j`` of the other users (``delta_0``
        if there is none), with log-probabilities accurate in the tails; its support is the sum as
        released (:func:`~pufferfish.multiuser.sum_distribution`: exact, then the release grid).
        Passed to :func:`~pufferfish.multiuser.sum_distribution` with the target's own value, it
        is added from its exact description, so ``R_i + D_i`` is exact too.

    Raises
    ------
    ValueError
        If there is no such user.
    """
    return sum_distribution([u.contribution() for u in system.others(user)])


def _signature(user: User) -> tuple[float, bytes, bytes]:
    """Key under which two users contribute identically to the other users' sum."""
    c = user.contribution()
    assert c.log_pmf is not None
    return (user.presence, c.support.tobytes(), c.log_pmf.tobytes())


def leave_one_out(system: MultiUserSystem, users: Iterable[str] | None = None) -> dict[str, DiscretePrior]:
    """``R_i`` (the sum of every other user) for several target users, shared between look-alikes.

    Parameters
    ----------
    system : MultiUserSystem
    users : iterable of str, optional
        Target users (default: every user).

    Returns
    -------
    dict
        ``name -> R_i`` (see :func:`others_distribution`).

    Raises
    ------
    ValueError
        If a name is unknown.

    Notes
    -----
    Users with the same presence and distribution (e.g. the records of one class) have the same
    ``R_i``: it is computed once per distinct user, not once per user. Each ``R_i`` is one sum of
    ``K - 1`` users (O(n log n) per FFT window); pruning by per-user bounds
    (:func:`~pufferfish.multiuser.calibrate_system.calibrate_system`) decides which users need it.
    """
    names = list(system.names if users is None else users)
    cache: dict[tuple[float, bytes, bytes], DiscretePrior] = {}
    out: dict[str, DiscretePrior] = {}
    for name in names:
        key = _signature(system.user(name))
        if key not in cache:
            cache[key] = others_distribution(system, name)
        out[name] = cache[key]
    return out


def _value_text(value: float) -> str:
    """Shortest text that round-trips ``value`` (``4``, ``4.000000001``); ``:g`` made those equal."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def secret_names(user: User, pair_set: str) -> tuple[str, str]:
    """Names of the two secrets of ``user`` in ``pair_set`` (e.g. ``("u4 = 5", "u4 absent")``).

    Raises
    ------
    ValueError
        If ``pair_set`` is unknown or does not fit the user's data (see :func:`query_priors`).
    """
    check_fit(user, pair_set)
    if pair_set == "ab":
        assert user.values is not None
        return f"{user.name} = {_value_text(user.values[0])}", f"{user.name} = {_value_text(user.values[1])}"
    if pair_set == "a-bot":
        assert user.values is not None
        return f"{user.name} = {_value_text(user.values[0])}", f"{user.name} absent"
    if pair_set == "P-bot":
        return f"{user.name} ~ P", f"{user.name} absent"
    return f"{user.name} ~ P", f"{user.name} ~ Q"


def check_pair_set(pair_set: str) -> str:
    """Return ``pair_set`` if it is one of :data:`PAIR_SETS`, else raise ValueError naming it."""
    if pair_set not in PAIR_SETS:
        raise ValueError(f"pair_set must be one of {', '.join(PAIR_SETS)}, got {pair_set!r}")
    return pair_set


def check_fit(user: User, pair_set: str) -> None:
    """ValueError if ``user``'s data does not define ``pair_set`` (``ab`` needs ``values = (a, b)``
    with ``a != b``, ``a-bot`` needs ``values``, ``P-Q`` needs an alternative distribution ``Q``)."""
    check_pair_set(pair_set)
    if pair_set == "ab":
        if user.values is None or len(user.values) != 2:
            raise ValueError(
                f'pair set ab needs "values": [a, b] for user {user.name!r}, got {user.values!r}'
            )
        if user.values[0] == user.values[1]:
            raise ValueError(f"pair set ab needs a != b for user {user.name!r}, got {list(user.values)}")
    elif pair_set == "a-bot" and user.values is None:
        raise ValueError(f'pair set a-bot needs "values": [a] for user {user.name!r}, got none')
    elif pair_set == "P-Q" and user.alternative is None:
        raise ValueError(f'pair set P-Q needs an "alternative" distribution for user {user.name!r}, got none')


def own_pair(user: User, pair_set: str) -> tuple[DiscretePrior, DiscretePrior]:
    """The target user's own contribution under the two secrets of ``pair_set``.

    Parameters
    ----------
    user : User
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}

    Returns
    -------
    (DiscretePrior, DiscretePrior)
        ``(delta_a, delta_b)``, ``(delta_a, delta_0)``, ``(P_i, delta_0)`` or ``(P_i, Q_i)``
        (seed 000 Table 1; absence counts 0, Remark 1). The query's conditionals are these
        convolved with the other users' sum ``R_i``.

    Raises
    ------
    ValueError
        If the pair set is unknown or does not fit the user's data.
    """
    check_fit(user, pair_set)
    absent = DiscretePrior.point(0.0)
    if pair_set == "P-Q":
        assert user.alternative is not None
        return user.prior, user.alternative
    if pair_set == "P-bot":
        return user.prior, absent
    assert user.values is not None
    a = DiscretePrior.point(user.values[0])
    return (a, DiscretePrior.point(user.values[1])) if pair_set == "ab" else (a, absent)


def query_priors(
    system: MultiUserSystem, user: str, pair_set: str, *, others: DiscretePrior | None = None
) -> tuple[tuple[str, DiscretePrior], tuple[str, DiscretePrior]]:
    """The query's distribution under the two secrets of ``user`` in ``pair_set``.

    Parameters
    ----------
    system : MultiUserSystem
    user : str
        Name of the target user ``i``.
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
        Seed 000 sec 4: ``ab`` = ``(s_{a,i}, s_{b,i})`` (needs ``values = [a, b]``), ``a-bot`` =
        ``(s_{a,i}, s_{bot,i})`` (needs ``values``), ``P-bot`` = ``(s_{P,i}, s_{bot,i})``, ``P-Q``
        = ``(s_{P,i}, s_{Q,i})`` (needs ``alternative``).
    others : DiscretePrior, optional
        ``R_i`` if already computed (:func:`others_distribution`).

    Returns
    -------
    ((str, DiscretePrior), (str, DiscretePrior))
        Secret name and ``P_{X|S}(. | s)`` for each secret of the pair (seed 000 eq 7-9).

    Raises
    ------
    ValueError
        If the user is unknown, the pair set unknown, or it does not fit the user's data (e.g.
        ``P-Q`` without an alternative).
    """
    u = system.user(user)
    name_i, name_j = secret_names(u, pair_set)
    r = others_distribution(system, user) if others is None else others
    own_i, own_j = own_pair(u, pair_set)
    # sum_distribution gives the released sum: exact, rounded to the release grid before noise
    # (priors.to_release_grid); R_i is added from its exact description, not its rounded support
    first = sum_distribution([r, own_i])
    second = sum_distribution([r, own_j])
    return (name_i, first), (name_j, second)


def pair_scenario(
    system: MultiUserSystem,
    pair_set: str,
    users: Iterable[str] | None = None,
    *,
    others: Mapping[str, DiscretePrior] | None = None,
) -> Scenario:
    """A :class:`~pufferfish.priors.scenario.Scenario` of the query for ``pair_set`` over some users.

    Parameters
    ----------
    system : MultiUserSystem
    pair_set : {"ab", "a-bot", "P-bot", "P-Q"}
    users : iterable of str, optional
        Target users (default: every user). One discriminative pair per user, as in the sets
        ``S_{a,b} = {(s_{a,i}, s_{b,i}) : i}`` etc. of seed 000 sec 4.
    others : mapping of str to DiscretePrior, optional
        Precomputed ``R_i`` per user.

    Returns
    -------
    Scenario
        One adversary prior named ``"system"`` holding the query's conditional distribution of
        every secret; every calibrator of :mod:`pufferfish.calibration` applies to it.

    Raises
    ------
    ValueError
        As :func:`query_priors`.
    """
    names = list(system.names if users is None else users)
    if not names:
        raise ValueError("users must name at least one user, got none")
    for name in names:
        check_fit(system.user(name), pair_set)
    missing = [n for n in names if others is None or n not in others]
    sums = {**leave_one_out(system, missing), **(dict(others) if others is not None else {})}
    conditionals: dict[str, DiscretePrior] = {}
    pairs = []
    for name in names:
        (a, pa), (b, pb) = query_priors(system, name, pair_set, others=sums[name])
        conditionals[a] = pa
        conditionals[b] = pb
        pairs.append((a, b))
    return Scenario(pairs=tuple(pairs), priors=(AdversaryPrior(SYSTEM_PRIOR, conditionals),))
