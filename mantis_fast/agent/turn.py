"""One model turn, the same for the agent loop (``engine.Engine``) and the service's ``vlm``
brain (``mantis_fast.service.episodes``): the text sent with the screenshot, the one call to the
model (``VLMClient.complete``) and the reading of its reply with the configuration's caps
(``parse_model_output``).

What each caller does around the turn stays with it: the engine's injections and
``VLM_ON_ERROR`` policy, the service's deadline, run log and action space.
"""

from __future__ import annotations

import re

from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.parse import ModelOutput, parse_model_output
from mantis_fast.agent.vlm import VLMClient, VLMReply

__all__ = ["ModelTurn"]

# parse_model_output skips ``done`` (the agent loop runs until stopped): its reason says so.
_DONE_SKIPPED = re.compile(r"^action \d+: done is not an agent action")


class ModelTurn:
    """The model's side of one turn under ``config``: ``prompt`` (or ``task_prompt``) the
    text, ``call`` the model with it and the screenshot, ``parse`` the reply.

    Parameters
    ----------
    config : AgentConfig
        The caps a reply is read under (``MAX_ACTIONS_PER_TURN``, ``MAX_BBOXES_PER_TURN``).
    """

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    @staticmethod
    def prompt(observation: str) -> str:
        """The agent loop's text: the model's own observation of the last turn, as it wrote
        it (the loop is stateless: the frame and this text are all the model sees).

        Parameters
        ----------
        observation : str
            The last reply's ``observation`` ("" before the first reply).

        Returns
        -------
        str
            The text sent with the screenshot.
        """
        return observation

    @staticmethod
    def task_prompt(
        task: str, step: int, max_steps: int, last_observation: str = "", warning: str = ""
    ) -> str:
        """The service's text for one step of an episode: the task, the step, the model's last
        observation, a loop warning, and how to say the task is complete.

        Parameters
        ----------
        task : str
            The episode's instruction.
        step, max_steps : int
            This step's number (from 1) and the episode's step limit.
        last_observation : str
            The last reply's ``observation``; "" leaves its line out.
        warning : str
            The loop detector's nudge after a soft loop; "" leaves its line out.

        Returns
        -------
        str
            The text sent with the screenshot, one line per part.
        """
        lines = [f"TASK: {task}", f"Step {step} of at most {max_steps}."]
        if last_observation:
            lines.append(f"Your last observation: {last_observation}")
        if warning:
            lines.append(f"WARNING: {warning}")
        lines.append('When the task is complete, answer with the action {"name": "done"}.')
        return "\n".join(lines)

    async def call(
        self, client: VLMClient, prompt: str, png: bytes, displays: str = ""
    ) -> VLMReply:
        """Ask the model once (``client``'s retries and caps apply); raises ``VLMError``
        after its last attempt.

        Parameters
        ----------
        client : VLMClient
            The open client of the endpoint.
        prompt : str
            The text (``prompt`` or ``task_prompt``).
        png : bytes
            The screenshot the model sees, PNG-encoded.
        displays : str
            ``multi_display.displays_hint`` on a screen of several monitors, else "".

        Returns
        -------
        VLMReply
            The reply's text, seconds and attempts.
        """
        return await client.complete(prompt, png, displays)

    def parse(self, text: str) -> ModelOutput:
        """``text`` read as a reply, at most the configured actions and bboxes kept (the rest
        skipped, with reasons); never raises.

        Parameters
        ----------
        text : str
            The model's reply, or an injected one.

        Returns
        -------
        ModelOutput
            Its observation, bboxes, normalized actions and skip reasons.
        """
        config = self.config
        return parse_model_output(
            text, max_actions=config.max_actions_per_turn, max_bboxes=config.max_bboxes_per_turn
        )

    @staticmethod
    def asks_done(output: ModelOutput) -> bool:
        """Whether the reply named the ``done`` action, which ``parse`` skips (the agent loop
        has no end to reach) but which ends a service episode.

        Parameters
        ----------
        output : ModelOutput
            A parsed reply.

        Returns
        -------
        bool
            True when one of its skipped actions was ``done``.
        """
        return any(_DONE_SKIPPED.match(reason) for reason in output.skipped)
