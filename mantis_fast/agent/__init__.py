"""The stateless vision loop on mantis_fast's stages (capture -> crop/resize -> overlays ->
model -> input), with its run logs, OpenAI-compatible model client and HTTP panel."""

from mantis_fast._extras import require_extra

require_extra("agent", __name__)  # before the imports that need it

from mantis_fast.agent.app import AgentThread, run_agent
from mantis_fast.agent.config import AgentConfig, ConfigError
from mantis_fast.agent.engine import Engine, EngineFinished, SeqMismatch, TurnResult
from mantis_fast.agent.panel import Panel
from mantis_fast.agent.parse import AgentAction, BBox, ModelOutput, parse_model_output
from mantis_fast.agent.runlog import RunLog, read_events, read_records
from mantis_fast.agent.turn import ModelTurn
from mantis_fast.agent.vlm import VLMClient, VLMError, VLMReply

__all__ = [
    "AgentAction",
    "AgentConfig",
    "AgentThread",
    "BBox",
    "ConfigError",
    "Engine",
    "EngineFinished",
    "ModelOutput",
    "ModelTurn",
    "Panel",
    "RunLog",
    "SeqMismatch",
    "TurnResult",
    "VLMClient",
    "VLMError",
    "VLMReply",
    "parse_model_output",
    "read_events",
    "read_records",
    "run_agent",
]
