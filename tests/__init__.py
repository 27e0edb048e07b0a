"""grammar-guide's tests (``make test``); helpers that are not tests live in ``support/``."""
