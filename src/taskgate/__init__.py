"""taskgate: own an LLM agent's task state outside the prompt, and gate its tool calls on it.

The library's public API lives here: the task-state machine and its receipts ledger
(:mod:`taskgate.core`), the tool gate, the protocol's texts and parsers, the matchers, the rungs,
the model client and the errors. Import from ``taskgate`` only::

    from taskgate import Plan, StepSpec, ToolGate

Names whose modules need an extra (the model client: ``taskgate[llm]``; the embedding matchers:
``taskgate[embedding]``) are imported when first used. The lab, the paper's testbed, is
:mod:`taskgate.lab` (``taskgate[lab]``); the library never imports it.
"""

from typing import TYPE_CHECKING

from taskgate._lazy import lazy
from taskgate._version import __version__
from taskgate.core.booking import Booking
from taskgate.core.graph import TaskGraph
from taskgate.core.ids import normalize_code, normalize_work_order
from taskgate.core.ledger import (
    ApprovalEntry,
    AttemptEntry,
    LedgerEntry,
    PlanEntry,
    RequestEntry,
    RevisionEntry,
    dump_ledger,
    load_ledger,
    receipts,
    sealed_rows,
    unseal_rows,
)
from taskgate.core.machine import Request, Snapshot, Status, TaskMachine
from taskgate.core.plan import Plan, Revision, StepSpec
from taskgate.core.validator import Defect, validate
from taskgate.core.verdict import Policy, Reason, Verdict
from taskgate.errors import (
    BookingError,
    BriefError,
    CycleError,
    GeneratorError,
    LedgerFormatError,
    LogFormatError,
    MissingExtraError,
    ModelError,
    PlanError,
    RulesetError,
    TaskgateError,
    UnknownNameError,
    UnknownStepError,
    UsageError,
    WorkOrderError,
    WorkspaceError,
)
from taskgate.gate import Call, GateSession, Opened, Ticket, ToolGate, ToolRefused, check_tools
from taskgate.llm.calls import CallInfo
from taskgate.llm.endpoint import Endpoint
from taskgate.matching.askback import ask_back_question
from taskgate.matching.lexical import LexicalMatcher
from taskgate.matching.redo import explicit_redo
from taskgate.matching.wordings import ToolInfo
from taskgate.protocol.bookings import parse_bookings
from taskgate.protocol.briefparse import ParserCompiler, parse_brief, parse_revision
from taskgate.protocol.refusals import classify, has_refusal_language, is_refusal
from taskgate.protocol.render import (
    render_brief,
    render_checklist,
    render_directive,
    render_rejection,
    render_same_turn_notice,
)
from taskgate.protocol.tools import harness_brief
from taskgate.roles import Agent, ChatMessage, Compiler, Match, Matcher
from taskgate.rungs import RUNGS, Rung, get_rung
from taskgate.understanding import (
    CascadeReader,
    ConversationReader,
    ModelReader,
    Reader,
    Reading,
)

if TYPE_CHECKING:
    from taskgate.llm.client import ChatClient, Completion
    from taskgate.llm.fake import (
        FakeServer,
        Fault,
        Reply,
        careless_responder,
        protocol_responder,
        script,
    )
    from taskgate.llm.local import InProcessModel, LocalServer, gguf_path
    from taskgate.llm.plan_compiler import PlanCompiler
    from taskgate.llm.roles import LLMAgent, LLMCompiler, LLMMatcher
    from taskgate.matching.cascade import CascadeMatcher
    from taskgate.matching.embedders import Embedder, HashEmbedder, MiniLMEmbedder
    from taskgate.matching.embedding import EmbeddingMatcher, Thresholds

__getattr__ = lazy(
    __name__,
    {
        **dict.fromkeys(("ChatClient", "Completion"), "taskgate.llm.client"),
        **dict.fromkeys(
            ("FakeServer", "Fault", "Reply", "careless_responder", "protocol_responder", "script"),
            "taskgate.llm.fake",
        ),
        **dict.fromkeys(("InProcessModel", "LocalServer", "gguf_path"), "taskgate.llm.local"),
        **dict.fromkeys(("LLMAgent", "LLMCompiler", "LLMMatcher"), "taskgate.llm.roles"),
        "PlanCompiler": "taskgate.llm.plan_compiler",
        **dict.fromkeys(
            ("Embedder", "HashEmbedder", "MiniLMEmbedder"), "taskgate.matching.embedders"
        ),
        **dict.fromkeys(("EmbeddingMatcher", "Thresholds"), "taskgate.matching.embedding"),
        **dict.fromkeys(("CascadeMatcher",), "taskgate.matching.cascade"),
    },
)

__all__ = [
    "RUNGS",
    "Agent",
    "ApprovalEntry",
    "AttemptEntry",
    "Booking",
    "BookingError",
    "BriefError",
    "Call",
    "CallInfo",
    "CascadeMatcher",
    "CascadeReader",
    "ChatClient",
    "ChatMessage",
    "Compiler",
    "Completion",
    "ConversationReader",
    "CycleError",
    "Defect",
    "Embedder",
    "EmbeddingMatcher",
    "Endpoint",
    "FakeServer",
    "Fault",
    "GateSession",
    "GeneratorError",
    "HashEmbedder",
    "InProcessModel",
    "LLMAgent",
    "LLMCompiler",
    "LLMMatcher",
    "LedgerEntry",
    "LedgerFormatError",
    "LexicalMatcher",
    "LocalServer",
    "LogFormatError",
    "Match",
    "Matcher",
    "MiniLMEmbedder",
    "MissingExtraError",
    "ModelError",
    "ModelReader",
    "Opened",
    "ParserCompiler",
    "Plan",
    "PlanCompiler",
    "PlanEntry",
    "PlanError",
    "Policy",
    "Reader",
    "Reading",
    "Reason",
    "Reply",
    "Request",
    "RequestEntry",
    "Revision",
    "RevisionEntry",
    "RulesetError",
    "Rung",
    "Snapshot",
    "Status",
    "StepSpec",
    "TaskGraph",
    "TaskMachine",
    "TaskgateError",
    "Thresholds",
    "Ticket",
    "ToolGate",
    "ToolInfo",
    "ToolRefused",
    "UnknownNameError",
    "UnknownStepError",
    "UsageError",
    "Verdict",
    "WorkOrderError",
    "WorkspaceError",
    "__version__",
    "ask_back_question",
    "careless_responder",
    "check_tools",
    "classify",
    "dump_ledger",
    "explicit_redo",
    "get_rung",
    "gguf_path",
    "harness_brief",
    "has_refusal_language",
    "is_refusal",
    "load_ledger",
    "normalize_code",
    "normalize_work_order",
    "parse_bookings",
    "parse_brief",
    "parse_revision",
    "protocol_responder",
    "receipts",
    "render_brief",
    "render_checklist",
    "render_directive",
    "render_rejection",
    "render_same_turn_notice",
    "script",
    "sealed_rows",
    "unseal_rows",
    "validate",
]
