"""Matching without a model call: sentence embedders, the embedding and hybrid matchers, the
explicit-redo reading, ask-back questions, and the agreement evaluation of Table 10's layout."""

from .askback import ask_back_question
from .embedders import Embedder, HashEmbedder, MiniLMEmbedder, minilm
from .embedding import EmbeddingMatcher, Resolution, Thresholds, shared_matcher
from .hybrid import HybridMatcher
from .redo import explicit_redo

__all__ = [
    "Embedder",
    "EmbeddingMatcher",
    "HashEmbedder",
    "HybridMatcher",
    "MiniLMEmbedder",
    "Resolution",
    "Thresholds",
    "ask_back_question",
    "explicit_redo",
    "minilm",
    "shared_matcher",
]
