"""Synthetic cases for the demo, the tests and the benchmarks.

``network`` builds and evaluates a small numpy network, ``faults`` describes the errors a fusion
can introduce, ``generator`` writes both runs (graphs and dumps in CANN's formats) and the truth
file. Nothing in ``compare/`` or ``diagnose/`` imports this package: the engine must never depend
on how its test data was made.
"""
