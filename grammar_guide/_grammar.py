"""The ``Grammar`` facade: load a Lark grammar with lark's own loader and compile it for llguidance.

A grammar written for the ``lark`` package means what Lark says it means: the text is loaded by
``lark.Lark`` (so ``%import``, templates, priorities, aliases, ``?``/``!``/``_`` rules, ``"kw"i``,
regex flags and ``%ignore`` all behave as in Lark), and the resolved rules and terminals are then
written out in llguidance's Lark dialect, which runs the incremental Earley matcher. Anything the
matcher cannot honour exactly raises ``GrammarError`` naming the construct and its position.

``LalrGrammar`` is the language of lark's LALR parser (``from_lark(parser="lalr")``): its checker
drives lark's own parse table, contextual lexer and ``Indenter``, and it has no llguidance form.

The layers below: the ``compiler`` package (lark's phases: loading the text, the terminals'
regexes, the hazards of the dynamic lexer, the rules' compilation, postlexers, LALR, the exports)
and the checkers (``_checker``, ``_lalr_checker``), which read a grammar through the
``CheckedGrammar`` interface and import nothing of this module.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import lark
import llguidance as llg
from lark.grammar import Terminal as LarkTerminal

from ._checker import Checker
from ._engine_limits import ENGINE_LIMITS
from ._errors import GrammarError
from ._json_schema import SOLIDUS_REWRITE, llguidance_schema, refused_value
from ._lexemes import keywords_of
from ._rewrites import Rewrite, load_rewrites
from .compiler.compile import Lexer, Terminal, compile_lark, probe_grammar, validate
from .compiler.completion_chart import CompletionChart
from .compiler.load import load_lark
from .compiler.matcher import ByteMatcherFactory, regex_start_bytes
from .compiler.terminal_costs import TerminalCosts

if TYPE_CHECKING:
    from ._lalr_checker import LalrChecker
    from .compiler.export import LarkForm

# The exports and the LALR reading (with its checker) are imported where first used, as before:
# they cost import time (tens of milliseconds) that most uses never need. They import nothing of this module.

__all__ = ["Grammar", "LalrGrammar", "Rewrite", "Terminal"]

_BUILTIN_PACKAGE = "grammar_guide.grammars"
_BUILTIN_DIR = Path(__file__).resolve().parent.parent / "grammars"
_LEXER_DIRECTIVE = re.compile(r"(?m)^//[ \t]*grammar-guide:[ \t]*lexer=(\w+)")
_REWRITES_DIRECTIVE = re.compile(r"(?m)^//[ \t]*grammar-guide:[ \t]*rewrites=(\S+)")


class Grammar:
    """A context-free grammar, ready for checking and constrained decoding.

    Build one with ``from_lark``, ``from_file``, ``builtin``, ``from_regex`` or
    ``from_json_schema``. ``checker()`` gives an incremental byte-exact checker;
    ``llguidance_grammar`` is the compiled form that token masks are computed from.
    """

    def __init__(
        self,
        llguidance_grammar: str,
        *,
        name: str,
        lark_parser: lark.Lark | None = None,
        terminals: Mapping[str, Terminal] | None = None,
        lark_source: str | None = None,
        captured_grammar: str | None = None,
        rewrites: Sequence[Rewrite] = (),
        lexer: Lexer | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        #: The JSON Schema this grammar was built from (``from_json_schema``), else ``None``: a
        #: provider with JSON-schema outputs and no grammars (Anthropic) may send it natively.
        self.json_schema: Mapping[str, Any] | None = json_schema
        #: How a Lark grammar's terminals are read (``"dynamic"`` or ``"greedy"``; ``None`` for
        #: grammars not written in Lark).
        self.lexer = lexer
        #: Known slips of drafts in this language and what they meant (see ``Rewrite``).
        self.rewrites: tuple[Rewrite, ...] = tuple(rewrites)
        #: The language's own engine's verdict on a complete text, for what a context-free
        #: grammar cannot count (SQLite's parser stack depth, see ``_engine_limits``): its message
        #: where it rejects the text, else ``None``. ``None`` (no check) but for builtins.
        self.engine_limit: Callable[[str], str | None] | None = None
        self.llguidance_grammar = llguidance_grammar
        #: The same language with each terminal captured under its Lark name (``None`` for
        #: grammars without named terminals): ``LLMatcher.get_captures()`` then lists every
        #: terminal as it completes, which tells where whole terminals end.
        self.captured_grammar = captured_grammar
        self.lark_source = lark_source
        self.terminals: Mapping[str, Terminal] = dict(terminals or {})
        #: Whether the grammar was compiled at the character level (a Lark grammar whose
        #: terminals a greedy lexer would read differently from lark, see ``from_lark``).
        self.character_level = False
        self._lark = lark_parser
        self._matchers = ByteMatcherFactory(llguidance_grammar, name)

    def __repr__(self) -> str:
        return f"Grammar({self.name!r})"

    @property
    def joins_values(self) -> bool:
        """Whether the grammar's rewrites read values written one after another as one (a
        pattern anchored at ``\\A``: JSON's ``{…}{…}`` as an array); then several fenced blocks
        in a draft's answer are read as such values too."""
        return any(r.at_start for r in self.rewrites)

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_lark(
        cls,
        text: str,
        start: str = "start",
        *,
        name: str | None = None,
        import_paths: Sequence[str | Path] = (),
        source: str | None = None,
        rewrites: Sequence[Rewrite] = (),
        lexer: Lexer = "dynamic",
        regex: bool = False,
        parser: Literal["earley", "lalr"] = "earley",
        postlex: object = None,
        g_regex_flags: int = 0,
    ) -> Grammar:
        """Load a Lark grammar (the ``lark`` package's syntax and meaning).

        ``lexer="dynamic"`` (the default, lark's Earley default) reads the text exactly as
        ``lark.Lark(text, parser="earley")`` does; ``lexer="greedy"`` reads terminals as a
        tokenizer does (each the longest match among those allowed, no going back: ``SELECTa`` is
        one word), which is the matcher's own lexer and the fastest.

        ``import_paths`` are searched by ``%import`` of other grammar files; ``rewrites`` are
        repairs for slips drafts often make in this language (see ``Rewrite``). ``regex=True``
        is lark's option of that name: terminals are matched with the ``regex`` module, which
        knows Unicode properties (``\\p{XID_Start}``); it must be installed, as lark needs it then.
        Raises ``GrammarError`` for syntax errors and for constructs the matcher cannot honour.

        ``parser="lalr"`` is the language of ``lark.Lark(text, parser="lalr")`` (its contextual
        lexer: ``OPENQASM2.0;`` is refused where Earley reads a keyword and a name), with
        ``postlex`` an ``Indenter`` (``lark.indenter.PythonIndenter()`` or your own subclass) when
        given; its checker drives lark's own parser, and it has no llguidance form (no local
        target masks, no exports). Needs the ``regex`` module. A grammar with LALR(1) conflicts
        is refused with lark's reason.

        ``g_regex_flags`` is lark's option of that name: flags of Python's ``re`` with which lark
        matches every terminal (``re.IGNORECASE``: each literal and pattern as if written with
        ``i``); ``re.IGNORECASE``, ``re.MULTILINE`` and ``re.DOTALL`` are read, others refused.
        """
        if parser == "lalr" or postlex is not None:
            return _lalr_grammar(
                text,
                start,
                name=name,
                import_paths=import_paths,
                source=source,
                rewrites=rewrites,
                regex=regex,
                g_regex_flags=g_regex_flags,
                parser=parser,
                postlex=postlex,
            )
        if parser != "earley":
            raise GrammarError(f"parser={parser!r}: choose 'earley' (the default) or 'lalr'")
        reference = load_lark(
            text, start, import_paths=import_paths, source=source, regex=regex, g_regex_flags=g_regex_flags
        )
        if lexer not in ("dynamic", "greedy"):
            raise GrammarError(f"lexer={lexer!r}: choose 'dynamic' (lark's Earley default) or 'greedy'")
        compiled = compile_lark(reference, text, source, lexer)
        validate(compiled.grammar, source, text)
        grammar = cls(
            compiled.grammar,
            captured_grammar=compiled.captured,
            name=name or source or "lark",
            lark_parser=reference,
            terminals=compiled.terminals,
            lark_source=text,
            rewrites=rewrites,
            lexer=lexer,
        )
        grammar.character_level = compiled.character_level
        return grammar

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        start: str = "start",
        *,
        lexer: Lexer | None = None,
        regex: bool = False,
        parser: Literal["earley", "lalr"] = "earley",
        postlex: object = None,
    ) -> Grammar:
        """Load a ``.lark`` file; ``%import`` of sibling grammar files works. A sibling
        ``<name>.rewrites.json`` file gives the grammar's rewrites (see ``Rewrite``), or the one a
        comment line names (``// grammar-guide: rewrites=sqlite.rewrites.json``). A file may
        say how it is read with a comment line ``// grammar-guide: lexer=greedy`` (``lexer``
        overrides it; the default is ``"dynamic"``). ``regex``, ``parser``, ``postlex``: as in
        ``from_lark``."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        sidecar = path.with_name(_rewrites_file(text, path.stem))
        rewrites = load_rewrites(sidecar) if sidecar.is_file() else ()
        declared = _LEXER_DIRECTIVE.search(text)
        return cls.from_lark(
            text,
            start,
            name=path.stem,
            import_paths=[path.parent],
            source=str(path),
            rewrites=rewrites,
            lexer=lexer or (declared.group(1) if declared else "dynamic"),  # type: ignore[arg-type]
            regex=regex,
            parser=parser,
            postlex=postlex,
        )

    @classmethod
    def builtin(cls, name: str) -> Grammar:
        """A grammar shipped with grammar-guide: ``Grammar.builtin("sqlite")``, ``("json")``."""
        return _builtin(name)

    @staticmethod
    def builtin_names() -> list[str]:
        """Names accepted by ``builtin``."""
        return sorted(p.name[: -len(".lark")] for p in _builtin_files() if p.name.endswith(".lark"))

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """A grammar whose language is the full matches of a regular expression."""
        grammar = llg.LLMatcher.grammar_from_regex(pattern)
        validate(grammar, None, None)
        return cls(grammar, name=f"regex {pattern!r}", terminals={"REGEX": Terminal("REGEX", regex=pattern)})

    @classmethod
    def from_guidance(cls, node: Any, *, name: str = "guidance") -> Grammar:
        """A grammar built with ``guidance`` (``select``, ``gen``, ``regex``, ``json``, and their
        combinations), through its llguidance form (``node.ll_grammar()``). Needs the
        ``guidance`` extra (guidance 0.3.1 pins llguidance 1.5.0, within the declared range).
        The result checks and masks like any grammar; it has no Lark form to export."""
        ll_grammar = getattr(node, "ll_grammar", None)
        if not callable(ll_grammar):
            raise TypeError(
                f"from_guidance takes a guidance grammar (a GrammarNode: select(...), gen(...), ...), "
                f"not {type(node).__name__}"
            )
        try:
            grammar = llg.LLMatcher.grammar_from_lark(ll_grammar())
        except ValueError as exc:
            raise GrammarError(f"guidance grammar: {exc}") from None
        validate(grammar, None, None)
        return cls(grammar, name=name)

    @classmethod
    def from_json_schema(cls, schema: Mapping[str, Any] | str) -> Grammar:
        """JSON documents valid under a JSON Schema (llguidance's JSON Schema compiler; strings take
        every escape JSON allows, ``\\/`` through a rewrite to ``/``). A keyword the grammar cannot
        honour (``uniqueItems``, ``not``, ...: ``UNHONOURED_KEYWORDS``) raises ``GrammarError``
        naming it and its JSON Pointer; so does a ``format``, ``pattern`` (or ``patternProperties``
        name) or outside ``$ref`` that the compiler refuses (an unknown format, a look-around).
        The schema is kept, as a copy, in ``json_schema`` (when it
        is a JSON object)."""
        try:
            parsed = json.loads(schema) if isinstance(schema, str) else json.loads(json.dumps(schema))
            grammar = llg.LLMatcher.grammar_from_json_schema(llguidance_schema(parsed))
        except ValueError as exc:
            raise GrammarError(f"invalid JSON schema: {exc}") from None
        try:
            validate(grammar, None, None)
        except GrammarError:
            refusal = refused_value(parsed, _schema_refusal)
            if refusal is None:
                raise
            raise GrammarError(refusal) from None
        return cls(
            grammar,
            name="json-schema",
            json_schema=parsed if isinstance(parsed, dict) else None,
            rewrites=[Rewrite(*SOLIDUS_REWRITE)],
        )

    # -- use --------------------------------------------------------------------------------

    def checker(self, *, probe_from: int | None = None) -> Checker:
        """A new incremental checker positioned at the start of the text (``probe_from``: see
        ``Checker``)."""
        return Checker(self, probe_from=probe_from)

    def valid_prefix(self, text: str) -> int:
        """Length, in characters, of the longest prefix of ``text`` that some valid text starts with."""
        checker = self.checker()
        return checker.feed(text)

    def is_complete(self, text: str) -> bool:
        """Whether ``text`` is a complete, valid text of the grammar."""
        checker = self.checker()
        return checker.feed(text) == len(text) and checker.is_complete

    def parse(self, text: str) -> lark.Tree[lark.Token]:
        """Parse complete text with the ``lark`` package (Earley, dynamic lexer) into a Lark tree."""
        if self._lark is None:
            raise GrammarError(f"{self.name} is not a Lark grammar; it has no parse tree")
        return self._lark.parse(text)

    @functools.cached_property
    def terminal_costs(self) -> TerminalCosts | None:
        """What the terminal-at-a-time completion ranks terminals by (``None``: not a Lark grammar)."""
        if self._lark is None:
            return None
        rules = ((r.origin.name, [(s.name, s.is_term) for s in r.expansion]) for r in self._lark.rules)
        return TerminalCosts.of(self.terminals, rules)

    @functools.cached_property
    def completion_chart(self) -> CompletionChart | None:
        """What the terminal-at-a-time completion reads the text's open rules with (``None``: not
        a Lark grammar)."""
        if self._lark is None:
            return None
        rules = ((r.origin.name, [s.name for s in r.expansion]) for r in self._lark.rules)
        return CompletionChart.of(self.terminals, rules, start=self._lark.options.start[0], ignored=self.ignored_text)

    @functools.cached_property
    def keywords(self) -> frozenset[str]:
        """The grammar's keywords (its literal terminals that are words), lower case: read once,
        where every violation's repair asks for them."""
        return keywords_of(t.literal for t in self.terminals.values() if t.literal)

    @functools.cached_property
    def ignored_terminals(self) -> frozenset[str]:
        """Names of the terminals the grammar ignores between its tokens (``%ignore``)."""
        return frozenset(self._lark.ignore_tokens) if self._lark is not None else frozenset()

    @functools.cached_property
    def ignored_start_bytes(self) -> frozenset[int]:
        """The bytes that can begin text the grammar ignores (``%ignore``: white space, comments)."""
        if self._lark is None:
            return frozenset()
        starts: set[int] = set()
        for name in self._lark.ignore_tokens:
            terminal = self.terminals.get(name)
            if terminal is not None:
                starts |= regex_start_bytes(terminal.pattern)
        return frozenset(starts)

    @functools.cached_property
    def ignored_text(self) -> re.Pattern[str]:
        """A run of text the grammar ignores between its tokens (``%ignore``: white space,
        comments); white space for a grammar that is not Lark text."""
        if self._lark is None:
            return re.compile(r"\s*")
        terminals = (self.terminals.get(name) for name in self._lark.ignore_tokens)
        parts = [t.pattern for t in terminals if t is not None]
        # Each run taken whole, as a lexer takes it (an atomic group: a lookahead's capture, then
        # that capture), never split again on a failed match: ``(?:[ \t]+)*`` before a word
        # tried every split of 25 spaces (a second) before giving up.
        return re.compile(r"(?:(?=(" + "|".join(parts) + r"))\1)*" if parts else "")

    @functools.cached_property
    def guard_terminals(self) -> frozenset[str]:
        """Names of terminals that lead nowhere: those matching no text, and those only ever
        followed by one (a dead-end guard ``_WORD _NEVER``). Diagnostics do not list them."""
        if self._lark is None:
            return frozenset()
        void = {name for name, t in self.terminals.items() if self.is_void(t)}
        followers: dict[str, set[bool]] = {}
        for rule in self._lark.rules:
            symbols = list(rule.expansion)
            for i, sym in enumerate(symbols):
                if isinstance(sym, LarkTerminal):
                    nxt = symbols[i + 1] if i + 1 < len(symbols) else None
                    followers.setdefault(sym.name, set()).add(isinstance(nxt, LarkTerminal) and nxt.name in void)
        return frozenset(void | {name for name, seen in followers.items() if seen == {True}})

    def is_void(self, terminal: Terminal) -> bool:
        """Whether ``terminal`` matches no text at all (a dead-end guard such as ``/[^\\s\\S]/``)."""
        return terminal.is_void

    @functools.cached_property
    def probe_matchers(self) -> tuple[ByteMatcherFactory, Mapping[tuple[int, int], str]] | None:
        """Matchers of the grammar with a probe beside each terminal (see ``compiler.compile.probe_grammar``),
        and the Lark name of each probe; ``None`` for grammars without named terminals. The checker
        asks one what may follow a long text without parsing it all again."""
        if self.captured_grammar is None or self._lark is None:
            return None
        probed = probe_grammar(self.captured_grammar)
        if probed is None:
            return None
        text, names = probed
        # Only terminals of rules are predicted; ignored text (read as rules at the character
        # level) is not one lark names.
        used = {sym.name for rule in self._lark.rules for sym in rule.expansion if isinstance(sym, LarkTerminal)}
        try:
            factory = ByteMatcherFactory(text, f"{self.name} (probes)")
        except GrammarError:  # lark answers instead
            return None
        return factory, {p: n for p, n in names.items() if n in used}

    def require_token_masks(self) -> None:
        """Raise ``GrammarError`` where a target model cannot be masked by this grammar (a
        grammar read with ``parser="lalr"`` has no llguidance form); nothing otherwise."""

    def new_matcher(self) -> llg.LLMatcher:
        """A fresh byte-level llguidance matcher for this grammar, at the start of the text (see
        ``Checker`` for the friendly face)."""
        return self._matchers.new()

    def to_plain_lark(self) -> str:
        """This grammar as plain Lark: the subset OpenAI's custom grammar tools and llguidance
        accept (templates expanded, imports inlined, priorities dropped; start rule ``start``).
        Raises ``GrammarError`` with the construct's line and column for what it cannot say."""
        return self._plain_lark

    def to_gbnf(self) -> str:
        """This grammar as GBNF, for llama.cpp's server, Fireworks and xgrammar. Raises
        ``GrammarError`` with the construct's line and column for what GBNF cannot say."""
        return self._gbnf

    # Each export is written once (a large grammar takes seconds; drafts send one per run).

    @functools.cached_property
    def _plain_lark(self) -> str:
        if self.character_level:
            # Lark's dynamic lexer reads it differently from a greedy lexer: the character-level
            # form is exact for both (one-character terminals leave no lexer anything to decide).
            return self.llguidance_grammar
        from .compiler.export import to_plain_lark

        return to_plain_lark(self._lark_form)

    @functools.cached_property
    def _gbnf(self) -> str:
        from .compiler.export import to_gbnf

        return to_gbnf(self._lark_form)

    @property
    def _lark_form(self) -> LarkForm:
        from .compiler.export import LarkForm

        return LarkForm(self.name, self._lark, self.terminals, self.lark_source or "")

    @property
    def lark_parser(self) -> lark.Lark | None:
        """The ``lark.Lark`` reference parser, for grammars loaded from Lark text."""
        return self._lark


class LalrGrammar(Grammar):
    """A grammar whose language is lark's LALR parser's (contextual lexer, optional ``Indenter``)."""

    def __init__(
        self, parser: lark.Lark, postlex: object, *, name: str, lark_source: str, rewrites: Sequence[Rewrite] = ()
    ) -> None:
        from .compiler.lalr import LalrLanguage
        from .compiler.postlex import driver_of, indenter_of

        indenter = indenter_of(postlex)
        self.language = LalrLanguage(parser, driver_of(indenter) if indenter is not None else None)
        self.name = name
        self.json_schema = None
        self.lexer = None
        self.rewrites = tuple(rewrites)
        self.engine_limit = None
        self.captured_grammar = None
        self.lark_source = lark_source
        self.terminals = dict(self.language.terminals)
        self.character_level = False
        self._lark = parser
        #: The postlexer lark's parser runs (``None`` for none).
        self.postlex = postlex

    @property
    def llguidance_grammar(self) -> str:
        self._no_llguidance("llguidance grammar for token masks")

    @llguidance_grammar.setter
    def llguidance_grammar(self, value: str) -> None:
        raise AttributeError("an LALR grammar has no llguidance form")

    def _no_llguidance(self, what: str) -> NoReturn:
        postlex = f" with postlex={type(self.postlex).__name__}" if self.postlex is not None else ""
        raise GrammarError(
            f"{self.name}: a grammar read with parser='lalr'{postlex} has no llguidance form "
            f"(lark's contextual lexer and indenter are not a character-level grammar): no {what}; "
            "its checker and the guide loop with target=False (repairs from the grammar and the "
            "draft's own text) work"
        )

    def require_token_masks(self) -> NoReturn:
        self._no_llguidance("token masks for a target model")

    def new_matcher(self) -> llg.LLMatcher:
        self._no_llguidance("byte-level matchers")

    def to_plain_lark(self) -> str:
        self._no_llguidance("an export to plain Lark")

    def to_gbnf(self) -> str:
        self._no_llguidance("an export to GBNF")

    def checker(self, *, probe_from: int | None = None) -> LalrChecker:
        """A new checker at the start of the text (``probe_from`` has no use here: the checker's
        diagnostics always come from lark's own parse table)."""
        from ._lalr_checker import LalrChecker

        return LalrChecker(self, self.language)


def _lalr_grammar(
    text: str,
    start: str,
    *,
    name: str | None,
    import_paths: Sequence[str | Path],
    source: str | None,
    rewrites: Sequence[Rewrite],
    regex: bool,
    g_regex_flags: int,
    parser: str,
    postlex: object,
) -> Grammar:
    """``from_lark(parser="lalr")``: lark's LALR parser and contextual lexer (see ``LalrGrammar``)."""
    from .compiler.postlex import indenter_of

    if parser != "lalr":
        raise GrammarError(f"postlex needs parser='lalr' (lark runs a postlexer only there), not {parser!r}")
    indenter = indenter_of(postlex)  # refuses another postlexer before lark runs it
    reference = load_lark(
        text,
        start,
        import_paths=import_paths,
        source=source,
        regex=regex,
        parser="lalr",
        postlex=indenter,
        g_regex_flags=g_regex_flags,
    )
    return LalrGrammar(reference, indenter, name=name or source or "lark", lark_source=text, rewrites=rewrites)


def _rewrites_file(text: str, stem: str) -> str:
    """The name of the rewrites file of grammar file ``stem``.lark whose text is ``text``."""
    declared = _REWRITES_DIRECTIVE.search(text)
    return declared.group(1) if declared else f"{stem}.rewrites.json"


# -- builtins -----------------------------------------------------------------------------------


def _builtin_files() -> Iterable[Any]:
    try:
        return list(resources.files(_BUILTIN_PACKAGE).iterdir())
    except (ModuleNotFoundError, FileNotFoundError):
        return list(_BUILTIN_DIR.iterdir()) if _BUILTIN_DIR.is_dir() else []


@functools.cache
def _builtin(name: str) -> Grammar:
    entries = {entry.name: entry for entry in _builtin_files()}
    if f"{name}.lark" in entries:
        with resources.as_file(entries[f"{name}.lark"]) as path:
            grammar = Grammar.from_file(path)
            sidecar = _rewrites_file(path.read_text(encoding="utf-8"), name)
        if sidecar in entries:
            with resources.as_file(entries[sidecar]) as path:
                grammar.rewrites = load_rewrites(path)
        grammar.engine_limit = ENGINE_LIMITS.get(name)
        return grammar
    names = ", ".join(Grammar.builtin_names()) or "none"
    raise GrammarError(f"no builtin grammar named {name!r} (available: {names})")


def _schema_refusal(schema_text: str) -> str | None:
    """The matcher's reason for refusing a JSON Schema (its JSON text), or ``None``."""
    try:
        grammar = llg.LLMatcher.grammar_from_json_schema(schema_text)
    except ValueError as exc:
        return str(exc)
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    return messages[0] if is_error else None
