"""lark's verdict on a whole text, as the tests compare the checker with it."""

from __future__ import annotations

import lark


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    """Whether ``parser`` parses ``text`` (any of lark's errors is a no)."""
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True
