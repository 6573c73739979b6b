"""The vision tool set: coordinate validation, pixel mapping and drawing (pure), and detect_bounding_box over a scripted
vision model: the image sent base64-encoded in the message, the box validated, drawn and saved beside the image,
and every failure (no model, a local model, not an image, outside the root, an invalid box, an unreadable answer)
a structured result. No small vision-language model ships in a package, so no test runs a real one."""

import base64
import json
import math
import shutil
from pathlib import Path

import jsonschema
import pytest
from dspy.utils.dummies import DummyLM
from PIL import Image

from tests.tool_sets.test_calculator import assert_failure
from tool_selection.tool import BaseTool
from tool_sets.vision import (
    TOOL_SET,
    VISION_MODEL_ENV,
    DetectBoundingBox,
    NormalizedBox,
    box_problems,
    draw_box,
    pixel_box,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "shapes.png"
CIRCLE = {"x_min": 0.05, "y_min": 0.15, "x_max": 0.35, "y_max": 0.60}  # where make_example_image.py drew it


def box(**values) -> NormalizedBox:
    return NormalizedBox(**{**CIRCLE, **values})


@pytest.fixture
def folder(tmp_path) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "shapes.png")
    return tmp_path


def detect(folder: Path, answer, object="red circle", image_path="shapes.png", **config):
    """Run the tool with a scripted model that answers ``answer`` ({found, box} fields, or raw text)."""
    lm = DummyLM([answer] if isinstance(answer, dict) else [{"found": answer}])
    result = DetectBoundingBox(lm=lm, root=folder, **config).validate_and_execute(image_path=image_path,
                                                                                  object=object)
    assert json.loads(json.dumps(result)) == result
    return result, lm


# ------------------------------------------------------------------------------------------ the set
def test_the_tool_set_and_its_schema():
    assert TOOL_SET.names() == ["detect_bounding_box"] and {t.category for t in TOOL_SET} == {"vision"}
    schema = DetectBoundingBox.input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["image_path", "object"] and schema["additionalProperties"] is False
    assert all("maxLength" in p for p in schema["properties"].values())
    assert issubclass(DetectBoundingBox, BaseTool)


def test_the_example_image_is_small_and_where_the_script_says():
    assert EXAMPLE.stat().st_size < 5_000
    with Image.open(EXAMPLE) as image:
        assert image.size == (240, 160)
        assert image.getpixel((48, 60))[0] > 200  # inside the red circle


# ------------------------------------------------------------------------------------------ coordinates
def test_a_valid_box_has_no_problems():
    assert box_problems(box()) == []
    assert box_problems(NormalizedBox(x_min=0, y_min=0, x_max=1, y_max=1)) == []


@pytest.mark.parametrize("values, fields", [
    ({"x_min": -0.1}, ["x_min"]),
    ({"y_max": 1.5}, ["y_max"]),
    ({"x_min": math.nan}, ["x_min"]),
    ({"x_max": math.inf, "y_min": -2}, ["y_min", "x_max"]),
    ({"x_min": 0.5, "x_max": 0.5}, ["x_max"]),
    ({"y_min": 0.7, "y_max": 0.2}, ["y_max"]),
    ({"x_min": 0.9, "x_max": 0.1, "y_min": 0.9, "y_max": 0.1}, ["x_max", "y_max"]),
    ({"x_max": 1.4, "y_max": 0.1}, ["x_max", "y_max"]),  # out of range, and an ordering problem on the other axis
])
def test_every_coordinate_problem_is_named(values, fields):
    problems = box_problems(box(**values))
    assert [p.field for p in problems] == fields
    assert all(("outside [0, 1]" in p.detail) or ("not greater than" in p.detail) for p in problems)


@pytest.mark.parametrize("values, size, expected", [
    (CIRCLE, (240, 160), (12, 24, 83, 95)),
    ({"x_min": 0, "y_min": 0, "x_max": 1, "y_max": 1}, (10, 20), (0, 0, 9, 19)),
    ({"x_min": 0.5, "y_min": 0.5, "x_max": 0.5001, "y_max": 0.5001}, (10, 10), (5, 5, 5, 5)),
])
def test_pixel_boxes_stay_inside_the_image(values, size, expected):
    assert pixel_box(NormalizedBox(**values), *size) == expected


def test_the_box_is_drawn_on_a_copy_and_nowhere_else():
    image = Image.new("RGB", (100, 50), "white")
    drawn = draw_box(image, NormalizedBox(x_min=0.2, y_min=0.2, x_max=0.6, y_max=0.8), color="red", width=2)
    assert image.getpixel((20, 10)) == (255, 255, 255)  # the original is untouched
    left, top, right, bottom = 20, 10, 59, 39
    for point in [(left, 25), (left + 1, 25), (right, 25), (40, top), (40, bottom), (right - 1, bottom - 1)]:
        assert drawn.getpixel(point) == (255, 0, 0), point
    for point in [(40, 25), (left - 1, 25), (right + 1, 25), (40, top - 1), (40, bottom + 1), (left + 2, 25)]:
        assert drawn.getpixel(point) == (255, 255, 255), point


# ------------------------------------------------------------------------------------------ the tool
def test_a_found_object_is_validated_drawn_and_saved_beside_the_image(folder):
    result, lm = detect(folder, {"found": True, "box": CIRCLE})
    assert result["ok"] and result["found"] and result["box"] == CIRCLE
    assert result["box_pixels"] == {"left": 12, "top": 24, "right": 83, "bottom": 95}
    assert result["image_size"] == {"width": 240, "height": 160}
    assert result["output_path"] == "shapes.box-red-circle.png"
    with Image.open(folder / result["output_path"]) as annotated:
        assert annotated.size == (240, 160) and annotated.getpixel((12, 30)) == (255, 0, 0)
    with Image.open(folder / "shapes.png") as original:
        assert original.getpixel((12, 30)) == (255, 255, 255)  # the input is not changed


def test_the_image_goes_to_the_model_base64_encoded_in_the_message(folder):
    _, lm = detect(folder, {"found": True, "box": CIRCLE})
    user = lm.history[-1]["messages"][-1]["content"]
    (image_part,) = [part for part in user if part["type"] == "image_url"]
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == (folder / "shapes.png").read_bytes()
    assert any("red circle" in part.get("text", "") for part in user)


def test_an_object_not_found_is_no_failure_and_draws_nothing(folder):
    result, _ = detect(folder, {"found": False, "box": None}, object="purple star")
    assert result == {"ok": True, "found": False, "object": "purple star", "box": None, "output_path": None}
    assert sorted(p.name for p in folder.iterdir()) == ["shapes.png"]


def test_an_invalid_box_from_the_model_is_refused_naming_the_coordinates(folder):
    result, _ = detect(folder, {"found": True, "box": {**CIRCLE, "x_max": 1.4, "y_max": 0.1}})
    assert_failure(result, "invalid_box")
    assert result["problems"] == ["x_max", "y_max"] and "x_max: 1.4 is outside [0, 1]" in result["message"]
    assert sorted(p.name for p in folder.iterdir()) == ["shapes.png"]


def test_an_unreadable_answer_is_a_failure(folder):
    lm = DummyLM([{"found": "maybe", "box": "somewhere on the left"}])
    result = DetectBoundingBox(lm=lm, root=folder).validate_and_execute(image_path="shapes.png", object="x")
    assert_failure(result, "unreadable_answer")


@pytest.mark.parametrize("model, error", [
    (None, "no_vision_model"), ("local:qwen2.5-coder-0.5b", "model_not_vision_capable"), ("bad spec", "no_vision_model"),
])
def test_without_a_vision_model_the_failure_says_how_to_configure_one(folder, monkeypatch, model, error):
    monkeypatch.delenv(VISION_MODEL_ENV, raising=False)
    result = DetectBoundingBox(model=model, root=folder).validate_and_execute(image_path="shapes.png", object="x")
    assert_failure(result, error)
    if error == "no_vision_model" and model is None:
        assert VISION_MODEL_ENV in result["message"] and "openai/gpt-4o-mini" in result["message"]


def test_the_model_defaults_to_the_environment(monkeypatch):
    monkeypatch.setenv(VISION_MODEL_ENV, "openai/gpt-4o-mini")
    assert DetectBoundingBox().model == "openai/gpt-4o-mini"


@pytest.mark.parametrize("setup, image_path, error", [
    (lambda f: None, "missing.png", "not_found"),
    (lambda f: (f / "notes.png").write_text("not an image"), "notes.png", "not_an_image"),
    (lambda f: (f / "sub").mkdir(), "sub", "is_a_directory"),
    (lambda f: None, "../shapes.png", "outside_root"),
    (lambda f: None, "/etc/passwd", "absolute_path"),
    (lambda f: Image.new("RGB", (4, 4)).save(f / "tiny.tiff"), "tiny.tiff", "unsupported_format"),
])
def test_bad_image_paths_are_failures(folder, setup, image_path, error):
    setup(folder)
    result, lm = detect(folder, {"found": True, "box": CIRCLE}, image_path=image_path)
    assert_failure(result, error)
    assert lm.history == []  # the model was not asked


def test_size_limits(folder):
    result, _ = detect(folder, {"found": True, "box": CIRCLE}, max_image_bytes=100)
    assert_failure(result, "too_large")
    result, _ = detect(folder, {"found": True, "box": CIRCLE}, max_pixels=1000)
    assert_failure(result, "too_large")
    assert "38,400 pixels" in result["message"]
