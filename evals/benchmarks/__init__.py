"""Performance benchmarks (scripts, not timed tests): ``python -m evals.benchmarks.<name>``."""
