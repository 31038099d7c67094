"""benchmarks of depl-bench."""
