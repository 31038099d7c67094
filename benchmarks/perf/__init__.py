"""Performance scripts run by hand (``python -m deplbench.benchmarks.perf.NAME``); speed is measured
here, never in tests. Each prints its figures and the command that reproduces them.

May import: anything. Imported by: nothing (``perf.depl`` uses ``perf.depl_speed``).
"""
