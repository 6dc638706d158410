"""Noise that leaves the library: secure samplers of Laplace and Gaussian noise on a grid
(:mod:`~pufferfish.noise.samplers`, :mod:`~pufferfish.noise.discrete`) and randomized mappings
on the dyadic grid (:mod:`~pufferfish.noise.channels`).
"""
