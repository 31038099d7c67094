"""heuristics of depl-bench."""
