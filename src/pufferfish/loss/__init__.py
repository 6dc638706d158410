"""The exact privacy loss of a release and the divergences behind every check (SPEC sec 2).

* :mod:`pufferfish.loss.laplace_sums`: Laplace sums over sorted points in log space;
* :mod:`pufferfish.loss.exact`: the exact Laplace loss of discrete priors (SPEC 2.1);
* :mod:`pufferfish.loss.density`: release densities of ``X + N``;
* :mod:`pufferfish.loss.divergence`: certified loss, hockey-stick divergence, mutual information;
* :mod:`pufferfish.loss.gaussian`: the closed form of two Gaussians with Gaussian noise;
* :mod:`pufferfish.loss.information`: certified pieces of ``I(S; Y)`` of Laplace releases;
* :mod:`pufferfish.loss.robust`: the worst case over prior sets of one column;
* :mod:`pufferfish.loss.product`: the exact loss of the product channel on several columns;
* :mod:`pufferfish.loss.balls`: its worst case over L1 balls of joint priors.
"""
