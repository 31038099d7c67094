"""The probability laws of the loss: the distribution type, the penalty laws and the noise laws.

``distributions`` (:class:`~.distributions.Dist`, penalty laws), ``noise`` (one table of
improvement-factor laws, :func:`~.noise.noise_dist`, :func:`~.noise.model_noise`).

May import: the core and numpy/scipy only. Imported by: the schema, scenarios, the evaluator,
calibration and the methods.
"""
