"""Grammars shipped with grammar-guide (loaded with ``Grammar.builtin(name)``)."""
