"""Finished tasks shown to the loop's model as earlier conversations: what a multi-step task looks like done.

A ``Trajectory`` is one solved task: the request, each call with the result it returned, and the answer. The loop
(``LoopPrompt(demonstrations=...)``) shows the chosen ones either after its system prompt as the turns the model
would have produced (``show_as="turns"``: its calls in its own format, the tools' results as tool turns, the
answer, or the ``finish`` call under ``LoopLimits(finish="tool")``), or told as examples inside the system prompt
(``show_as="text"``), so that a small model sees a whole task carried to its end before its own.
``choose_trajectories`` picks those whose tools the current task has. Saved as JSON (``save_trajectories``);
``evals.loop_trajectories`` builds them from a loop suite's verified oracles.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tool_selection.decision import ToolCall
from tool_selection.errors import ToolSelectionError
from tool_selection.parsing import clip
from tool_selection.strict_files import read_json
from tool_selection.transcript import FINISH_TOOL, Message, Role

__all__ = ["Trajectory", "TrajectoryStep", "choose_trajectories", "load_trajectories", "save_trajectories"]

FINISHED = '{"ok": true, "turn": "ended"}'  # the tool turn that answers a demonstration's finish call
TEXT_RESULT_CHARS = 300  # a result told in an example longer than this is cut


class TrajectoryStep(BaseModel):
    call: ToolCall
    result: str = Field(description="The result as the model read it (JSON text).")


class Trajectory(BaseModel):
    """One solved task: ``request``, each ``steps`` call with its result, the ``answer``; ``source`` names the
    task it came from."""

    source: str
    request: str
    steps: list[TrajectoryStep] = Field(min_length=1)
    answer: str

    @property
    def tools(self) -> set[str]:
        return {step.call.tool_name for step in self.steps}

    def messages(self, finish: Literal["answer", "tool"] = "answer") -> list[Message]:
        """The trajectory as conversation turns, marked ``demonstration`` in their metadata."""
        mark = {"demonstration": self.source}
        turns = [Message(role=Role.USER, content=self.request, metadata=mark)]
        for index, step in enumerate(self.steps):
            call_id = f"demo_{self.source}_{index}"
            turns += [Message(role=Role.ASSISTANT, tool_calls=[step.call], call_ids=[call_id], metadata=mark),
                      Message(role=Role.TOOL, tool_call_id=call_id, name=step.call.tool_name, content=step.result,
                              metadata=mark)]
        if finish == "tool":
            call_id = f"demo_{self.source}_finish"
            turns += [Message(role=Role.ASSISTANT, call_ids=[call_id], metadata=mark,
                              tool_calls=[ToolCall(tool_name=FINISH_TOOL, arguments={"answer": self.answer})]),
                      Message(role=Role.TOOL, tool_call_id=call_id, name=FINISH_TOOL, content=FINISHED, metadata=mark)]
        else:
            turns.append(Message(role=Role.ASSISTANT, content=self.answer, metadata=mark))
        return turns

    def text(self, finish: Literal["answer", "tool"] = "answer", result_chars: int = TEXT_RESULT_CHARS) -> str:
        """The trajectory told as an example in prose, for a system prompt: each call with its result (cut at
        ``result_chars``), then how it ended."""
        lines = [f"Request: {self.request}"]
        for step in self.steps:
            lines.append(f"Call {step.call} -> {clip(step.result, result_chars)}")
        ending = (f'Call {ToolCall(tool_name=FINISH_TOOL, arguments={"answer": self.answer})}' if finish == "tool"
                  else f"Answer: {self.answer}")
        return "\n".join([*lines, ending])


def choose_trajectories(pool: Iterable[Trajectory], tool_names: Iterable[str], k: int, *,
                        exclude: Iterable[str] = ()) -> list[Trajectory]:
    """Up to ``k`` trajectories whose calls all use tools among ``tool_names`` (none from the ``exclude``d
    sources), those using the most of them first, then the longer ones (a whole task rather than one call)."""
    names, excluded = set(tool_names), set(exclude)
    usable = [t for t in pool if t.tools <= names and t.source not in excluded]
    return sorted(usable, key=lambda t: (-len(t.tools), -len(t.steps), t.source))[:k]


def save_trajectories(trajectories: Sequence[Trajectory], path: str | Path, **about: str) -> Path:
    """Write ``trajectories`` as JSON, with ``about`` (where they came from) beside them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**about, "trajectories": [t.model_dump(mode="json") for t in trajectories]},
                               indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """The trajectories saved at ``path`` (a file, or a folder holding ``trajectories.json``)."""
    path = Path(path)
    if path.is_dir():
        path = path / "trajectories.json"
    if not path.is_file():
        raise ToolSelectionError(f"No trajectories at {path}: give the file or folder 'toolsel optimize --suite "
                                 "LOOP_SUITE --out DIR' wrote.")
    data = read_json(path, what="trajectories file", fix="Write it with save_trajectories (or 'toolsel optimize "
                                                         "--suite LOOP_SUITE --out DIR').")
    try:
        return [Trajectory.model_validate(t) for t in data["trajectories"]]
    except (ValueError, KeyError, TypeError) as error:
        raise ToolSelectionError(f"{path} is not a trajectories file ({error}); write it with "
                                 "save_trajectories.") from None
