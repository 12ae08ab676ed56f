"""Retrieval memory for the memory baselines (Appendix F): a store of past exchanges the agent's
turn recalls from, as top-k similarity over sentence embeddings or as Mem0's extracted facts."""

from taskgate.lab.memory.base import Memory, Recall, render_recall
from taskgate.lab.memory.factory import EMBEDDERS, build_memory, embedder_of
from taskgate.lab.memory.topk import TopKMemory

__all__ = [
    "EMBEDDERS",
    "Memory",
    "Recall",
    "TopKMemory",
    "build_memory",
    "embedder_of",
    "render_recall",
]
