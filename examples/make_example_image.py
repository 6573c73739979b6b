"""Draws examples/shapes.png, the vision tool's example image (run once; the PNG is committed):
a 240 x 160 white canvas with a red circle, a blue square and a green triangle at known places."""

from pathlib import Path

from PIL import Image, ImageDraw

SHAPES = {  # normalized boxes (x_min, y_min, x_max, y_max), what a correct answer returns
    "red circle": (0.05, 0.15, 0.35, 0.60),
    "blue square": (0.45, 0.45, 0.70, 0.825),
    "green triangle": (0.75, 0.10, 0.95, 0.40),
}


def main() -> None:
    width, height = 240, 160
    image = Image.new("RGB", (width, height), "white")
    canvas = ImageDraw.Draw(image)
    pixels = {name: (x0 * width, y0 * height, x1 * width - 1, y1 * height - 1)
              for name, (x0, y0, x1, y1) in SHAPES.items()}
    canvas.ellipse(pixels["red circle"], fill=(220, 30, 30))
    canvas.rectangle(pixels["blue square"], fill=(30, 60, 220))
    left, top, right, bottom = pixels["green triangle"]
    canvas.polygon([((left + right) / 2, top), (right, bottom), (left, bottom)], fill=(30, 160, 60))
    image.save(Path(__file__).with_name("shapes.png"), optimize=True)


if __name__ == "__main__":
    main()
