"""The ``vision`` tool set: ``detect_bounding_box(image_path, object)`` asks a vision-capable model where an object
is in an image, validates the box and draws it on a copy saved beside the image.

The model is the tool's ``model`` (a spec such as ``openai/gpt-4o-mini``; default ``$TOOLSEL_VISION_MODEL``) or an
LM given as ``lm=``. No small vision-language model ships its weights in a package for the local engine, so there
is no offline default: without a model the tool answers with a failure that says how to configure one.
"""

from tool_selection import ToolSet
from tool_sets.vision.boxes import BoxProblem, NormalizedBox, box_problems, draw_box, pixel_box
from tool_sets.vision.tools import TOOLS, VISION_MODEL_ENV, DetectBoundingBox, LocateObject

__all__ = ["TOOLS", "TOOL_SET", "VISION_MODEL_ENV", "BoxProblem", "DetectBoundingBox", "LocateObject",
           "NormalizedBox", "box_problems", "draw_box", "pixel_box"]

TOOL_SET = ToolSet(
    name="vision",
    description="Vision: find an object in an image and draw its bounding box (with a vision-capable model).",
    tools=TOOLS,
)
