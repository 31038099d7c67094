"""formulations of depl-bench."""
