"""Bounding boxes in normalized coordinates (0-1, x from the left edge, y from the top): validation, conversion to
pixels, and drawing with Pillow. Pure functions; the tool decides what to do with their results."""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image, ImageDraw
from pydantic import BaseModel, Field

__all__ = ["BoxProblem", "NormalizedBox", "box_problems", "draw_box", "pixel_box"]

LABEL_HEIGHT = 11  # Pillow's default bitmap font


class NormalizedBox(BaseModel):
    """A box as the model gives it: corners in [0, 1], left/top first. Not constrained here, so that a model's
    out-of-range answer reaches ``box_problems`` and is reported field by field."""

    x_min: float = Field(description="Left edge, 0 (left of the image) to 1 (right).")
    y_min: float = Field(description="Top edge, 0 (top of the image) to 1 (bottom).")
    x_max: float = Field(description="Right edge, greater than x_min.")
    y_max: float = Field(description="Bottom edge, greater than y_min.")


@dataclass(frozen=True)
class BoxProblem:
    field: str
    detail: str

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}"


def box_problems(box: NormalizedBox) -> list[BoxProblem]:
    """Every problem with ``box``: a coordinate that is not a finite number in [0, 1], or an edge not before its
    opposite (empty when the box is valid)."""
    problems, valid = [], set()
    for name in ("x_min", "y_min", "x_max", "y_max"):
        value = getattr(box, name)
        if math.isfinite(value) and 0.0 <= value <= 1.0:
            valid.add(name)
        else:
            problems.append(BoxProblem(name, f"{value!r} is outside [0, 1] (coordinates are fractions of the "
                                             "image's width and height)"))
    for low, high in (("x_min", "x_max"), ("y_min", "y_max")):
        if {low, high} <= valid and getattr(box, low) >= getattr(box, high):
            problems.append(BoxProblem(high, f"{getattr(box, high)!r} is not greater than {low} "
                                             f"{getattr(box, low)!r}"))
    return problems


def pixel_box(box: NormalizedBox, width: int, height: int) -> tuple[int, int, int, int]:
    """``(left, top, right, bottom)`` in pixels, inclusive, inside a ``width`` x ``height`` image."""
    left = min(width - 1, math.floor(box.x_min * width))
    top = min(height - 1, math.floor(box.y_min * height))
    right = max(left, min(width - 1, math.ceil(box.x_max * width) - 1))
    bottom = max(top, min(height - 1, math.ceil(box.y_max * height) - 1))
    return left, top, right, bottom


def draw_box(image: Image.Image, box: NormalizedBox, *, color: str = "red", width: int = 3,
             label: str | None = None) -> Image.Image:
    """A copy of ``image`` (RGB) with ``box`` outlined, and ``label`` written above it (inside it when there is no
    room above)."""
    annotated = image.convert("RGB")
    left, top, right, bottom = pixel_box(box, *annotated.size)
    canvas = ImageDraw.Draw(annotated)
    canvas.rectangle((left, top, right, bottom), outline=color, width=width)
    if label:
        line = LABEL_HEIGHT + 1
        canvas.text((left, top - line) if top >= line else (left + width + 1, top + width + 1), label, fill=color)
    return annotated
