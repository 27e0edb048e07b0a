"""The grammar layer: a Lark grammar read as lark reads it and compiled for llguidance's matcher.

One module per phase, as lark has (bottom to top; each imports only modules above it in this list):

- ``regex``: which of Python's regexes the matcher honours, read with CPython's own parser;
- ``charclass``: character classes as code-point ranges, exactly as Python's ``re`` means them;
- ``unicode_classes``: ``regex=True`` patterns (``\\p{XID_Start}``) written out with the ``regex``
  module's tables;
- ``automaton``: terminals as finite automata over code-point ranges;
- ``exact``: regexes written out exactly for the matcher (lexemes, or character-level rules);
- ``lazy``: lazy quantifiers (``*?``) read as lark's lexer reads them;
- ``matcher``: llguidance's byte-level matcher, and what a regex matches;
- ``load``: loading the ``.lark`` text with lark's own loader; positions for errors;
- ``hazards``: where the matcher's greedy lexer could read a grammar differently from lark's
  dynamic lexer;
- ``compile``: the rules and terminals compiled to llguidance's Lark dialect;
- ``first_path``: which comes first in Python's backtracking match (for the LALR lexer);
- ``postlex``: lark's ``Indenter`` postlexers, one token at a time;
- ``lalr``: the language of lark's LALR parser with its contextual lexer;
- ``export``: the grammar written out as plain Lark and as GBNF.

``grammar_guide.Grammar`` (``_grammar``) is the front end that wires them; the checkers read
what they compile. Nothing here imports the front end or the checkers.
"""
