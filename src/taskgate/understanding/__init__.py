"""What the user's words authorize, read in the conversation's context (see :mod:`.reader`)."""

from __future__ import annotations

from taskgate.understanding.acts import AgentAct, UserAct, read_agent, read_user
from taskgate.understanding.model import CascadeReader, ModelReader
from taskgate.understanding.reader import (
    ConversationReader,
    Kind,
    Reader,
    Reading,
    Turn,
    revised,
    turns,
)

__all__ = [
    "AgentAct",
    "CascadeReader",
    "ConversationReader",
    "Kind",
    "ModelReader",
    "Reader",
    "Reading",
    "Turn",
    "UserAct",
    "read_agent",
    "read_user",
    "revised",
    "turns",
]
