"""The side-by-side benchmark runner behind bench/run."""
