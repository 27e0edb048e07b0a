"""``python -m grammar_guide``: the ``grammar-guide`` command."""

from .cli import main

raise SystemExit(main())
