"""taskgate: own an LLM agent's task state outside the prompt, and couple it to the agent.

The public API lives here; import from ``taskgate`` only::

    from taskgate import Plan, TaskMachine, parse_bookings, Policy
"""

from ._version import __version__
from .agents.base import Agent, ChatMessage, Compiler, Match, Matcher, Oracle, TurnView
from .agents.briefparse import ParserCompiler, parse_brief, parse_revision
from .agents.lexical import LexicalMatcher
from .agents.scripted import (
    AlwaysBookAgent,
    CorruptCompiler,
    ObedientAgent,
    PerfectAgent,
    ScriptedCompiler,
    ScriptedMatcher,
)
from .arms.arm import Arm, ArmState, Exchange, Judged
from .arms.memory import MemoryArm
from .arms.registry import ARMS, LADDER, MEMORY_LADDER, TOOL_LADDER, get_arm
from .core.booking import Booking
from .core.graph import TaskGraph
from .core.ids import normalize_code, normalize_work_order
from .core.ledger import (
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
from .core.machine import Request, Snapshot, Status, TaskMachine
from .core.plan import Plan, Revision, StepSpec
from .core.validator import Defect, validate
from .core.verdict import Policy, Reason, Verdict
from .episodes.generator import generate_episode
from .episodes.models import Episode, EpisodeParams, Turn
from .episodes.records import CallInfo
from .errors import (
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
from .gate import Opened, Ticket, ToolGate, ToolRefused, check_tools
from .harness.brief import harness_brief
from .llm.client import ChatClient, Completion, Endpoint
from .llm.fake import FakeServer, Fault, Reply, careless_responder, protocol_responder, script
from .llm.local import InProcessModel, LocalServer, gguf_path
from .llm.roles import LLMAgent, LLMCompiler, LLMMatcher
from .matching import (
    Embedder,
    EmbeddingMatcher,
    HashEmbedder,
    HybridMatcher,
    MiniLMEmbedder,
    Thresholds,
    ask_back_question,
    explicit_redo,
)
from .memory import Memory, Recall, TopKMemory, build_memory
from .onenode import NodeConfig, node_table, run_one_node
from .probe import ProbeConfig, ScriptedProbeAgent, probe_table, run_probe
from .progress import Progress
from .protocol.bookings import parse_bookings
from .protocol.refusals import classify, has_refusal_language, is_refusal
from .protocol.render import (
    render_brief,
    render_checklist,
    render_directive,
    render_rejection,
    render_same_turn_notice,
)
from .reporting import Report, RunSet, build_report, load_runs
from .reporting.figures import write_figures
from .reporting.html import render_html, write_html
from .runner.episode import Players, run_episode
from .runner.ladder import LadderConfig, run_episodes, run_ladder
from .runner.roles import ROLES, Clients, RoleContext, RoleRegistry, build_players
from .scoring.index import read_index
from .scoring.scorer import CHANNELS, EpisodeScore, score_episode
from .scoring.stats import holm, mcnemar_exact, wilson
from .scoring.summary import Row, adjacent_contrasts, pair_contrasts, score_run, summarize
from .scoring.table import Table
from .wording import RaterConfig, RewriteConfig, build_rewrites, rater_table, run_raters

__all__ = [
    "ARMS",
    "CHANNELS",
    "LADDER",
    "MEMORY_LADDER",
    "ROLES",
    "TOOL_LADDER",
    "Agent",
    "AlwaysBookAgent",
    "Arm",
    "ArmState",
    "AttemptEntry",
    "Booking",
    "BookingError",
    "BriefError",
    "CallInfo",
    "ChatClient",
    "ChatMessage",
    "Clients",
    "Compiler",
    "Completion",
    "CorruptCompiler",
    "CycleError",
    "Defect",
    "Embedder",
    "EmbeddingMatcher",
    "Endpoint",
    "Episode",
    "EpisodeParams",
    "EpisodeScore",
    "Exchange",
    "FakeServer",
    "Fault",
    "GeneratorError",
    "HashEmbedder",
    "HybridMatcher",
    "InProcessModel",
    "Judged",
    "LLMAgent",
    "LLMCompiler",
    "LLMMatcher",
    "LadderConfig",
    "LedgerEntry",
    "LedgerFormatError",
    "LexicalMatcher",
    "LocalServer",
    "LogFormatError",
    "Match",
    "Matcher",
    "Memory",
    "MemoryArm",
    "MiniLMEmbedder",
    "MissingExtraError",
    "ModelError",
    "NodeConfig",
    "ObedientAgent",
    "Opened",
    "Oracle",
    "ParserCompiler",
    "PerfectAgent",
    "Plan",
    "PlanEntry",
    "PlanError",
    "Players",
    "Policy",
    "ProbeConfig",
    "Progress",
    "RaterConfig",
    "Reason",
    "Recall",
    "Reply",
    "Report",
    "Request",
    "RequestEntry",
    "Revision",
    "RevisionEntry",
    "RewriteConfig",
    "RoleContext",
    "RoleRegistry",
    "Row",
    "RulesetError",
    "RunSet",
    "ScriptedCompiler",
    "ScriptedMatcher",
    "ScriptedProbeAgent",
    "Snapshot",
    "Status",
    "StepSpec",
    "Table",
    "TaskGraph",
    "TaskMachine",
    "TaskgateError",
    "Thresholds",
    "Ticket",
    "ToolGate",
    "ToolRefused",
    "TopKMemory",
    "Turn",
    "TurnView",
    "UnknownNameError",
    "UnknownStepError",
    "UsageError",
    "Verdict",
    "WorkOrderError",
    "WorkspaceError",
    "__version__",
    "adjacent_contrasts",
    "ask_back_question",
    "build_memory",
    "build_players",
    "build_report",
    "build_rewrites",
    "careless_responder",
    "check_tools",
    "classify",
    "dump_ledger",
    "explicit_redo",
    "generate_episode",
    "get_arm",
    "gguf_path",
    "harness_brief",
    "has_refusal_language",
    "holm",
    "is_refusal",
    "load_ledger",
    "load_runs",
    "mcnemar_exact",
    "node_table",
    "normalize_code",
    "normalize_work_order",
    "pair_contrasts",
    "parse_bookings",
    "parse_brief",
    "parse_revision",
    "probe_table",
    "protocol_responder",
    "rater_table",
    "read_index",
    "receipts",
    "render_brief",
    "render_checklist",
    "render_directive",
    "render_html",
    "render_rejection",
    "render_same_turn_notice",
    "run_episode",
    "run_episodes",
    "run_ladder",
    "run_one_node",
    "run_probe",
    "run_raters",
    "score_episode",
    "score_run",
    "script",
    "sealed_rows",
    "summarize",
    "unseal_rows",
    "validate",
    "wilson",
    "write_figures",
    "write_html",
]
