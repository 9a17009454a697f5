"""The stateless vision loop on mantis_fast's stages (capture -> crop/resize -> overlays ->
model -> input), with its run logs, OpenAI-compatible model client and HTTP panel."""

from .app import AgentThread, run_agent
from .config import AgentConfig, ConfigError
from .engine import Engine, EngineFinished, SeqMismatch, TurnResult
from .panel import Panel
from .parse import AgentAction, BBox, ModelOutput, parse_model_output
from .runlog import RunLog, read_records
from .vlm import VLMClient, VLMError, VLMReply

__all__ = [
    "AgentAction",
    "AgentConfig",
    "AgentThread",
    "BBox",
    "ConfigError",
    "Engine",
    "EngineFinished",
    "ModelOutput",
    "Panel",
    "RunLog",
    "SeqMismatch",
    "TurnResult",
    "VLMClient",
    "VLMError",
    "VLMReply",
    "parse_model_output",
    "read_records",
    "run_agent",
]
