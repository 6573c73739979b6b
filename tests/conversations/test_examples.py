"""The shipped examples run as a fresh clone has them: examples/discussion.yaml and examples/debate.json end to end,
their own tools and pair included, with scripted models standing in for the embedded ones (same specs; the one
change is the strategy, native instead of auto's native-strict, whose token-level decoding a scripted chat model
does not serve), and examples/shapes.png through detect_bounding_box with a scripted vision model."""

import json
import shutil
from pathlib import Path

import yaml
from dspy.utils.dummies import DummyLM
from PIL import Image

from tests.conversations.conftest import LARGE, SMALL, call, guidance
from tool_selection.conversations import DebateRunner, DebateState, DiscussionManager, DiscussionTranscript
from tool_sets.vision import DetectBoundingBox

EXAMPLES = Path(__file__).parents[2] / "examples"


def discussion_example() -> dict:
    data = yaml.safe_load((EXAMPLES / "discussion.yaml").read_text())
    for model in data["discussion"]["models"].values():
        model["strategy"] = "native"
    return data


def debate_example() -> dict:
    data = json.loads((EXAMPLES / "debate.json").read_text())
    for agent in data["debate"]["agents"]:
        agent["strategy"] = "native"
    return data


def test_the_discussion_example_runs_with_its_tools_and_pair(models, tmp_path):
    models.script(SMALL, "I cannot help with that.", "Please write a script that summarises sales.csv.",
                  "Does it print the mean of every numeric column?")
    models.script(LARGE, guidance("Ask for a script that summarises a CSV file."),
                  call("run_python", code="import statistics\nprint(statistics.mean([2, 4, 6]))"),
                  "Here is the script; on a sample column it printed 4.",
                  call("web_search", query="pandas describe"), "Yes: df.describe() gives the mean of each column.")
    out = tmp_path / "discussion.json"
    transcript = DiscussionManager.from_config(discussion_example(), lm_factory=models, out=out).run()

    assert [(t.agent_id, t.agent_role) for t in transcript.turns] == [
        ("model1", "human"), ("model2", "assistant"), ("model1", "human"), ("model2", "assistant"),
        ("model1", "human")]
    (escalation,) = transcript.turns[0].metadata.escalations  # the 0.5B gave up; the 1.5B guided it
    assert escalation.guidance == "Ask for a script that summarises a CSV file."
    assert transcript.turns[0].content == "Please write a script that summarises sales.csv."
    (ran,) = transcript.turns[1].metadata.tool_calls
    assert ran.tool_name == "run_python" and ran.ok and ran.result["stdout"].strip() == "4"
    (searched,) = transcript.turns[3].metadata.tool_calls
    assert searched.tool_name == "web_search" and searched.ok
    assert transcript.status == "complete" and DiscussionTranscript.load(out).turns == transcript.turns


def test_the_debate_example_runs_one_round_with_each_agents_tools(models, tmp_path):
    # the architect (1.5B) speaks first in every phase, then the engineer and the reviewer (0.5B)
    models.script(LARGE, call("context_search", term="cache"), "Proposal: Redis read-through.",
                  "Critique: the CDN misses writes.", "Refined: Redis with 60 s TTLs.")
    models.script(SMALL, call("run_python", code="print(0.9 * 5 + 0.1 * 40)"), "Proposal: hit rate 90%, 8.5 ms.",
                  call("web_search", query="cache invalidation"), "Proposal: invalidate on write.",
                  "Critique: TTLs alone go stale.", "Critique: measure the hit rate.",
                  "Refined: 8.5 ms mean.", "Refined: write-through invalidation.")
    state_path = tmp_path / "state.json"
    state = DebateRunner.from_files(debate_example(), lm_factory=models, state_path=state_path).run()

    assert state.status == "complete" and state.rounds[0].completed_phases == ["proposal", "critique", "refinement"]
    contributions = state.rounds[0].contributions
    assert [(c.type, c.agent_id) for c in contributions][:3] == [
        ("proposal", "agent-architect"), ("proposal", "agent-engineer"), ("proposal", "agent-reviewer")]
    calls = {c.agent_id: [t.tool_name for t in c.metadata.tool_calls] for c in contributions if c.type == "proposal"}
    assert calls == {"agent-architect": ["context_search"], "agent-engineer": ["run_python"],
                     "agent-reviewer": ["web_search"]}
    assert contributions[1].metadata.tool_calls[0].result["stdout"].strip() == "8.5"
    assert all(t.ok for c in contributions for t in c.metadata.tool_calls)
    assert DebateState.load(state_path).rounds == state.rounds


def test_the_example_image_through_detect_bounding_box(tmp_path):
    shutil.copy(EXAMPLES / "shapes.png", tmp_path / "shapes.png")
    square = {"x_min": 0.45, "y_min": 0.45, "x_max": 0.70, "y_max": 0.825}  # make_example_image.py's blue square
    tool = DetectBoundingBox(lm=DummyLM([{"found": True, "box": square}]), root=tmp_path)
    result = tool.validate_and_execute(image_path="shapes.png", object="blue square")
    assert result["ok"] and result["box_pixels"] == {"left": 108, "top": 72, "right": 167, "bottom": 131}
    with Image.open(tmp_path / result["output_path"]) as annotated:
        assert annotated.getpixel((108, 100)) == (255, 0, 0)  # the box's left edge, drawn in red
        assert annotated.getpixel((140, 100))[2] > 200  # the square inside is left blue
    assert json.loads(json.dumps(result)) == result
