"""``detect_bounding_box``: where is an object in an image? Asked of a vision-capable model, checked, drawn.

The image is checked (inside the tool's root, a regular file, an image Pillow reads, within the size limits),
sent to the model base64-encoded in the message (``dspy.Image``, encoded when the message is made), and the model
answers whether it found the object and its box in normalized coordinates, as JSON (``LocateObject``). A box with
a coordinate outside [0, 1] or an edge not before its opposite is refused with each problem named; a valid one is
drawn on a copy saved beside the image as ``STEM.box-OBJECT.png``. Every failure (no model, not an image, an
unreadable answer, a provider error) is a structured result the calling model can act on.
"""

from __future__ import annotations

import base64
import io
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError
from PIL import Image, UnidentifiedImageError
from pydantic import Field

from tool_selection import BaseTool, register_tool
from tool_selection.lm.model_errors import MODEL_FAILURES
from tool_selection.tool import StrictArguments
from tool_selection.tool_failures import tool_failure
from tool_sets._sandbox.paths import PathRefused, open_regular, resolve_inside
from tool_sets.vision.boxes import NormalizedBox, box_problems, draw_box, pixel_box

__all__ = ["TOOLS", "VISION_MODEL_ENV", "DetectBoundingBox", "LocateObject"]

VISION_MODEL_ENV = "TOOLSEL_VISION_MODEL"
IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp",
                 "BMP": "image/bmp"}
NO_MODEL = (f"No vision-capable model is configured for detect_bounding_box: set the tool's model (e.g. "
            f"model='openai/gpt-4o-mini') or ${VISION_MODEL_ENV}. The local engine has no vision-language model: "
            "none ships its weights in a package (see docs/guide/conversations.md, Vision).")


class LocateObject(dspy.Signature):
    """Find the named object in the image. Give its bounding box in normalized coordinates: x from the left edge
    (0) to the right edge (1), y from the top edge (0) to the bottom edge (1), so x_min < x_max and y_min < y_max.
    If the object is not in the image, answer found = false and no box."""

    image: dspy.Image = dspy.InputField(desc="The image to look at.")
    object: str = dspy.InputField(desc="What to find.")
    found: bool = dspy.OutputField(desc="Whether the object is in the image.")
    box: NormalizedBox | None = dspy.OutputField(desc="The object's box as JSON, or null when it is not found.")


@register_tool
class DetectBoundingBox(BaseTool):
    NAME = "detect_bounding_box"
    description = ("Find an object in an image file and return its bounding box in normalized coordinates (0-1, "
                   "from the top left); the box is drawn on a copy of the image saved beside it, whose path is "
                   "returned.")
    category = "vision"

    model: str | None = Field(default_factory=lambda: os.environ.get(VISION_MODEL_ENV) or None,
                              description="A vision-capable model spec (hosted through LiteLLM); default "
                                          f"${VISION_MODEL_ENV}.")
    lm: Any = Field(default=None, exclude=True, repr=False,
                    description="An LM to ask instead of building one from ``model``.")
    root: Path = Field(default_factory=Path.cwd, exclude=True,
                       description="The folder images are read from and written to; nothing outside is reached.")
    max_image_bytes: int = Field(default=20 * 2**20, ge=1, description="Largest image file read.")
    max_pixels: int = Field(default=40_000_000, ge=1, description="Largest image, in pixels.")
    color: str = Field(default="red", description="The box's colour.")
    line_width: int = Field(default=3, ge=1, le=50, description="The box's line width, in pixels.")
    cache: bool = Field(default=True, description="DSPy's response cache, for an LM built from ``model``.")

    class Arguments(StrictArguments):
        image_path: str = Field(min_length=1, max_length=500,
                                description="The image file (PNG, JPEG, GIF, WebP or BMP), relative to the working "
                                            "folder, e.g. 'photos/desk.png'.")
        object: str = Field(min_length=1, max_length=200, description="What to find, e.g. 'the red circle'.")

    def execute(self, image_path: str, object: str) -> dict[str, Any]:
        try:
            path = resolve_inside(self.root.resolve(), image_path)
            image, url = self._read(path, image_path)
        except PathRefused as refused:
            return tool_failure(refused.code, refused.message, path=image_path)
        except _Refused as refused:
            return refused.failure
        lm = self._lm()
        if isinstance(lm, dict):
            return lm
        try:
            with dspy.context(lm=lm):
                answer = dspy.Predict(LocateObject)(image=dspy.Image(url), object=object)
        except AdapterParseError as error:
            return tool_failure("unreadable_answer", f"The vision model's answer could not be read as {{found, box}}: "
                                                     f"{str(error)[:300]}", raw=(error.lm_response or "")[:500])
        except MODEL_FAILURES as error:
            return tool_failure("model_error", f"The vision model failed: {type(error).__name__}: {str(error)[:300]}")
        if not answer.found or answer.box is None:
            return {"ok": True, "found": False, "object": object, "box": None, "output_path": None}
        problems = box_problems(answer.box)
        if problems:
            return tool_failure("invalid_box", "The vision model's box is invalid: " + "; ".join(map(str, problems)),
                                box=answer.box.model_dump(), problems=[p.field for p in problems])
        output = path.with_name(f"{path.stem}.box-{_slug(object)}.png")
        _save(draw_box(image, answer.box, color=self.color, width=self.line_width, label=object), output)
        left, top, right, bottom = pixel_box(answer.box, *image.size)
        return {"ok": True, "found": True, "object": object, "box": answer.box.model_dump(),
                "box_pixels": {"left": left, "top": top, "right": right, "bottom": bottom},
                "image_size": {"width": image.width, "height": image.height},
                "output_path": output.relative_to(self.root.resolve()).as_posix()}

    def _read(self, path: Path, given: str) -> tuple[Image.Image, str]:
        """The image, decoded, and its bytes as a base64 data URL (sent as they are, not re-encoded)."""
        if not path.exists():
            raise _Refused(tool_failure("not_found", f"{given!r} does not exist.", path=given))
        descriptor = open_regular(path, os.O_RDONLY, given)
        with os.fdopen(descriptor, "rb") as file:
            data = file.read(self.max_image_bytes + 1)
        if len(data) > self.max_image_bytes:
            raise _Refused(tool_failure("too_large", f"{given!r} is larger than {self.max_image_bytes:,} bytes.",
                                        path=given))
        try:
            with Image.open(io.BytesIO(data)) as probe:
                kind, (width, height) = probe.format, probe.size
                if width * height > self.max_pixels:
                    raise _Refused(tool_failure("too_large", f"{given!r} has {width * height:,} pixels, more than "
                                                             f"{self.max_pixels:,}.", path=given))
                probe.verify()
            image = Image.open(io.BytesIO(data))
            image.load()
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
            detail = "its format is not recognised" if isinstance(error, UnidentifiedImageError) else str(error)
            raise _Refused(tool_failure("not_an_image", f"{given!r} is not an image Pillow can read ({detail}).",
                                        path=given)) from None
        if kind not in IMAGE_FORMATS:
            raise _Refused(tool_failure("unsupported_format", f"{given!r} is a {kind} image; give one of "
                                                              f"{', '.join(IMAGE_FORMATS)}.", path=given))
        return image, f"data:{IMAGE_FORMATS[kind]};base64,{base64.b64encode(data).decode('ascii')}"

    def _lm(self) -> dspy.BaseLM | dict[str, Any]:
        """The LM to ask, or the failure that says why there is none."""
        if self.lm is not None:
            return self.lm
        if not self.model:
            return tool_failure("no_vision_model", NO_MODEL)
        from tool_selection.lm import ModelSpecError, get_lm
        from tool_selection.lm.specs import ModelSpec

        try:
            spec = ModelSpec.parse(self.model)
        except ModelSpecError as error:
            return tool_failure("no_vision_model", f"The vision model spec is invalid: {error}")
        if spec.is_local:
            return tool_failure("model_not_vision_capable", f"{self.model} runs on the local engine, which has no "
                                                            "vision-language model. " + NO_MODEL)
        return get_lm(spec, temperature=0.0, max_tokens=300, cache=self.cache)


class _Refused(Exception):
    def __init__(self, failure: dict[str, Any]):
        super().__init__(failure["message"])
        self.failure = failure


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "object"


def _save(image: Image.Image, path: Path) -> None:
    """Write ``image`` as PNG beside ``path`` first, then rename, so a reader never sees half a file."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            image.save(file, format="PNG")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


TOOLS = (DetectBoundingBox,)
