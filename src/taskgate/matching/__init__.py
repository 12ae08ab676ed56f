"""Matching without a model call: the lexical matcher, the explicit-redo reading and ask-back
questions (no extra), and the sentence embedders with the embedding and cascade matchers
(``taskgate[embedding]`` for MiniLM; numpy for any of them)."""

from typing import TYPE_CHECKING

from taskgate._lazy import lazy
from taskgate.matching.askback import ask_back_question
from taskgate.matching.lexical import LexicalMatcher
from taskgate.matching.redo import explicit_redo

if TYPE_CHECKING:
    from taskgate.matching.cascade import CascadeMatcher
    from taskgate.matching.embedders import Embedder, HashEmbedder, MiniLMEmbedder, minilm
    from taskgate.matching.embedding import (
        EmbeddingMatcher,
        Resolution,
        Thresholds,
        shared_matcher,
    )

__getattr__ = lazy(
    __name__,
    {
        **dict.fromkeys(
            ("Embedder", "HashEmbedder", "MiniLMEmbedder", "minilm"), f"{__name__}.embedders"
        ),
        **dict.fromkeys(
            ("EmbeddingMatcher", "Resolution", "Thresholds", "shared_matcher"),
            f"{__name__}.embedding",
        ),
        "CascadeMatcher": f"{__name__}.cascade",
    },
)

__all__ = [
    "CascadeMatcher",
    "Embedder",
    "EmbeddingMatcher",
    "HashEmbedder",
    "LexicalMatcher",
    "MiniLMEmbedder",
    "Resolution",
    "Thresholds",
    "ask_back_question",
    "explicit_redo",
    "minilm",
    "shared_matcher",
]
