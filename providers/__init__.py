"""Draft-model adapters for grammar-guide.

Each module wraps one kind of model behind ``grammar_guide.Draft``; heavy SDKs are imported only
by the module that needs them. The core package never imports this one.
"""

from grammar_guide import FunctionDraft

__all__ = ["FunctionDraft"]
