"""Calibration: train real curves (optional PyTorch), fit the model parameters, test the fits, draw them.

* :mod:`~deplbench.instances.calibration.curves`: training runs of pruned CNNs (extra ``[calibrate]``);
* :mod:`~deplbench.instances.calibration.pipeline`: curves -> a ``depl-calibration/1`` parameter file;
* :mod:`~deplbench.instances.calibration.fit`: maximum-likelihood fits and goodness of fit of the noise laws;
* :mod:`~deplbench.instances.calibration.plots`: the figures of the report;
* :mod:`~deplbench.cli.calibrate`: ``deplbench train-curves`` and ``calibrate``.

The ``calibrated`` instance family (:mod:`deplbench.instances.families.calibrated`) reads the parameter files.

May import: the core, ``deplbench.instances``, ``instances.laws``, pandas, scipy and matplotlib.
Imported by: ``instances.families.calibrated``, ``deplbench.cli.calibrate``.
"""
