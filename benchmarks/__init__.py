"""Benchmarks: scripts that print a table and write JSON to ``benchmarks/results/``.

``python -m benchmarks`` runs them all (see ``__main__``); each also runs alone with
``python -m benchmarks.<name>``. Never run as timed tests.
"""
