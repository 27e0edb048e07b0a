"""Which comes first in Python's backtracking match: a success, or a path that reads to the end.

``re.match(pattern, text, pos)`` returns the first path, in the backtracking order, that succeeds.
On a prefix of a text, a path that reads up to the end of the prefix might succeed on the text
(a greedy ``(\\.[0-9]+)?`` after ``-0`` when the prefix ends at ``-0.``); if such a path comes
before the successful one, more text can change the match. ``FirstPath.run`` replays the
backtracking order of Python's ``re`` on a pattern read by Python's own parser (``re._parser``,
the module ``re`` compiles with) and tells which comes first. Patterns it does not follow
(back-references, atomic groups, possessive or unbounded empty repeats) give ``compile_first_path``
``None``: the caller then assumes more text may change the match.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, Literal


def _module(name: str, before_311: str) -> Any:
    """Python's own regex parser (``re._parser`` from 3.11, ``sre_parse`` before)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        return importlib.import_module(before_311)


sre: Any = _module("re._constants", "sre_constants")
sre_parse: Any = _module("re._parser", "sre_parse")

__all__ = ["FirstPath", "Outcome", "compile_first_path"]

#: ``"match"`` (a path succeeded first, ending where ``run`` says), ``"end"`` (a path read to the
#: end first: more text may change the match) or ``"fail"`` (no path succeeds nor reaches the end).
Outcome = Literal["match", "end", "fail"]

_MAX_STEPS = 200_000
_MAX_COUNTED = 64
Pred = Callable[[str], bool]
Instr = tuple[Any, ...]
_HOLE: Instr = ("hole",)  # a split whose targets are not known yet


class _Unsupported(Exception):
    pass


class FirstPath:
    """A pattern compiled for ``run``."""

    def __init__(self, program: list[Instr]) -> None:
        self._program = program

    def run(self, text: str, pos: int, end: int) -> tuple[Outcome, int]:
        """The first event of the backtracking match at ``pos`` of ``text[:end]``, and where a
        match ends."""
        return _run(self._program, text, pos, end)


def compile_first_path(pattern: str, flags: int = 0) -> FirstPath | None:
    """``pattern`` (Python ``re`` syntax) for ``FirstPath.run``; ``None`` where it is not followed."""
    try:
        parsed = sre_parse.parse(pattern, flags)
        program: list[Instr] = []
        _emit(program, list(parsed), parsed.state.flags | flags)
        program.append(("match",))
        return FirstPath(program)
    except (_Unsupported, re.error, RecursionError):
        return None


# -- compiling ----------------------------------------------------------------------------------


def _emit(program: list[Instr], items: list[Any], flags: int) -> None:
    for op, av in items:
        _emit_one(program, op, av, flags)


def _emit_one(program: list[Instr], op: Any, av: Any, flags: int) -> None:
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
        program.append(("char", _predicate(op, av, flags)))
    elif op is sre.SUBPATTERN:
        _group, add, remove, sub = av
        _emit(program, list(sub), (flags | add) & ~remove)
    elif op is sre.BRANCH:
        _emit_branch(program, av[1], flags)
    elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        _emit_repeat(program, av, flags, greedy=op is sre.MAX_REPEAT)
    elif op in (sre.ASSERT, sre.ASSERT_NOT):
        direction, sub = av
        inner: list[Instr] = []
        _emit(inner, list(sub), flags)
        inner.append(("match",))
        width = None
        if direction < 0:
            low, high = sub.getwidth()
            if low != high:
                raise _Unsupported("variable-width look-behind")
            width = low
        if width == 1 and len(inner) == 2 and inner[0][0] == "char":  # (?<!\\): one character back
            program.append(("behind", inner[0][1], op is sre.ASSERT_NOT))
        else:
            program.append(("assert", inner, width, op is sre.ASSERT_NOT))
    elif op is sre.AT:
        program.append(("at", av, flags))
    else:  # back-references, atomic groups, possessive repeats, conditionals
        raise _Unsupported(str(op))


def _emit_branch(program: list[Instr], alternatives: list[Any], flags: int) -> None:
    jumps = []
    for i, alternative in enumerate(alternatives):
        if i < len(alternatives) - 1:
            split = len(program)
            program.append(("split", split + 1, None))
            _emit(program, list(alternative), flags)
            jumps.append(len(program))
            program.append(("jmp", None))
            program[split] = ("split", split + 1, len(program))
        else:
            _emit(program, list(alternative), flags)
    for at in jumps:
        program[at] = ("jmp", len(program))


def _emit_repeat(program: list[Instr], av: Any, flags: int, *, greedy: bool) -> None:
    low, high, sub = av
    items = list(sub)
    for _ in range(low):
        _emit(program, items, flags)
    if high == sre.MAXREPEAT:
        if sub.getwidth()[0] == 0:
            raise _Unsupported("an unbounded repeat of what may be empty")
        loop = len(program)
        program.append(_HOLE)
        _emit(program, items, flags)
        program.append(("jmp", loop))
        program[loop] = _split(greedy, loop + 1, len(program))
        return
    if high - low > _MAX_COUNTED:
        raise _Unsupported("a large counted repeat")
    holes = []
    for _ in range(high - low):  # x{0,k} as (x(x(...)?)?)?
        holes.append(len(program))
        program.append(_HOLE)
        _emit(program, items, flags)
    for at in holes:
        program[at] = _split(greedy, at + 1, len(program))


def _split(greedy: bool, body: int, out: int) -> Instr:
    return ("split", body, out) if greedy else ("split", out, body)


def _predicate(op: Any, av: Any, flags: int) -> Pred:
    fold = bool(flags & re.IGNORECASE)
    if op is sre.ANY:
        return (lambda ch: True) if flags & re.DOTALL else (lambda ch: ch != "\n")
    if op in (sre.LITERAL, sre.NOT_LITERAL):
        want = chr(av)
        same = _same_char(want, fold)
        return same if op is sre.LITERAL else (lambda ch: not same(ch))
    return _class_predicate(av, fold, bool(flags & re.ASCII))


def _same_char(want: str, fold: bool) -> Pred:
    if not fold:
        return lambda ch: ch == want
    forms = {want, want.lower(), want.upper()}
    return lambda ch: ch in forms or (ch >= "\x80" and ch.lower() in forms)


def _class_predicate(items: list[Any], fold: bool, ascii_only: bool) -> Pred:
    negate = False
    tests: list[Pred] = []
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            tests.append(_same_char(chr(av), fold))
        elif op is sre.RANGE:
            low, high = av
            tests.append(_in_range(low, high, fold))
        elif op is sre.CATEGORY:
            tests.append(_category(av, ascii_only))
        else:
            raise _Unsupported(str(op))

    def member(ch: str) -> bool:
        return any(test(ch) for test in tests) != negate

    return member


def _in_range(low: int, high: int, fold: bool) -> Pred:
    if not fold:
        return lambda ch: low <= ord(ch) <= high
    return lambda ch: any(low <= ord(c) <= high for c in {ch, ch.lower(), ch.upper()} if len(c) == 1)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORIES: dict[Any, Pred] = {
    sre.CATEGORY_DIGIT: str.isdecimal,
    sre.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdecimal(),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    sre.CATEGORY_WORD: _is_word,
    sre.CATEGORY_NOT_WORD: lambda ch: not _is_word(ch),
    sre.CATEGORY_LINEBREAK: lambda ch: ch == "\n",
    sre.CATEGORY_NOT_LINEBREAK: lambda ch: ch != "\n",
}


def _category(code: Any, ascii_only: bool) -> Pred:
    test = _CATEGORIES.get(code)
    if test is None:
        raise _Unsupported(str(code))
    if not ascii_only:
        return test
    positive = code in (sre.CATEGORY_DIGIT, sre.CATEGORY_SPACE, sre.CATEGORY_WORD, sre.CATEGORY_LINEBREAK)
    if positive:
        return lambda ch: ch < "\x80" and test(ch)
    return lambda ch: ch >= "\x80" or test(ch)


# -- running ------------------------------------------------------------------------------------


def _run(program: list[Instr], text: str, pos: int, end: int) -> tuple[Outcome, int]:
    stack = [(0, pos)]
    steps = 0
    while stack:
        pc, at = stack.pop()
        while True:
            steps += 1
            if steps > _MAX_STEPS:
                return "end", at  # too costly to follow: assume more text may change the match
            instr = program[pc]
            kind = instr[0]
            if kind == "char":
                if at >= end:
                    return "end", at
                if not instr[1](text[at]):
                    break
                pc, at = pc + 1, at + 1
            elif kind == "split":
                stack.append((instr[2], at))
                pc = instr[1]
            elif kind == "jmp":
                pc = instr[1]
            elif kind == "match":
                return "match", at
            elif kind == "behind":
                if (at > 0 and instr[1](text[at - 1])) == instr[2]:
                    break
                pc += 1
            elif kind == "at":
                holds = _at(instr[1], instr[2], text, at, end)
                if holds is None:
                    return "end", at
                if not holds:
                    break
                pc += 1
            else:  # assert
                holds = _assertion(instr, text, at, end)
                if holds is None:
                    return "end", at
                if not holds:
                    break
                pc += 1
    return "fail", pos


def _assertion(instr: Instr, text: str, at: int, end: int) -> bool | None:
    """Whether a look-around holds at ``at`` (``None``: it reads to the end, more text decides)."""
    _kind, inner, width, negate = instr
    negate = bool(negate)
    if width is None:
        outcome, _ = _run(inner, text, at, end)
        if outcome == "end":
            return None
        return (outcome == "match") != negate
    if at - width < 0:
        return bool(negate)
    outcome, stop = _run(inner, text, at - width, at)
    return (outcome == "match" and stop == at) != negate


def _at(code: Any, flags: int, text: str, at: int, end: int) -> bool | None:
    """Whether an anchor holds at ``at`` (``None``: only the text after ``end`` can tell)."""
    multiline = bool(flags & re.MULTILINE)
    if code in (sre.AT_BEGINNING, sre.AT_BEGINNING_LINE):
        return at == 0 or (multiline and text[at - 1] == "\n")
    if code is sre.AT_BEGINNING_STRING:
        return at == 0
    if code in (sre.AT_END, sre.AT_END_LINE):
        if at >= end or (at == end - 1 and text[at] == "\n"):
            return None
        return multiline and text[at] == "\n"
    if code is sre.AT_END_STRING:
        return None if at >= end else False
    if code in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY, sre.AT_UNI_BOUNDARY, sre.AT_UNI_NON_BOUNDARY):
        if at >= end:
            return None
        before = at > 0 and _is_word(text[at - 1])
        boundary = before != _is_word(text[at])
        return boundary if code in (sre.AT_BOUNDARY, sre.AT_UNI_BOUNDARY) else not boundary
    raise _Unsupported(str(code))
