"""Units of length, mass, volume and temperature, and conversion between units of one dimension.

Each unit is a linear map onto its dimension's base unit (metre, kilogram, litre, kelvin):
``base = value * factor + offset``; only temperatures have an offset. Volumes are US customary except the
imperial gallon. Factors are the exact definitions (1 in = 0.0254 m, 1 lb = 0.45359237 kg, 1 US gal =
3.785411784 L).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

__all__ = ["UNITS", "Unit", "lookup_unit", "similar_units", "units_of"]


@dataclass(frozen=True)
class Unit:
    symbol: str
    name: str
    dimension: str
    factor: float
    offset: float = 0.0
    aliases: tuple[str, ...] = ()

    def to_base(self, value: float) -> float:
        return value * self.factor + self.offset

    def from_base(self, value: float) -> float:
        return (value - self.offset) / self.factor


_US_GALLON = 3.785411784
UNITS: tuple[Unit, ...] = (
    Unit("m", "metre", "length", 1.0, aliases=("meter", "metres", "meters")),
    Unit("km", "kilometre", "length", 1000.0, aliases=("kilometer", "kilometres", "kilometers")),
    Unit("cm", "centimetre", "length", 0.01, aliases=("centimeter", "centimetres", "centimeters")),
    Unit("mm", "millimetre", "length", 0.001, aliases=("millimeter", "millimetres", "millimeters")),
    Unit("mi", "mile", "length", 1609.344, aliases=("miles",)),
    Unit("yd", "yard", "length", 0.9144, aliases=("yards",)),
    Unit("ft", "foot", "length", 0.3048, aliases=("feet",)),
    Unit("in", "inch", "length", 0.0254, aliases=("inches",)),
    Unit("nmi", "nautical mile", "length", 1852.0, aliases=("nautical miles",)),
    Unit("kg", "kilogram", "mass", 1.0, aliases=("kilograms", "kilo", "kilos")),
    Unit("g", "gram", "mass", 0.001, aliases=("grams",)),
    Unit("mg", "milligram", "mass", 1e-6, aliases=("milligrams",)),
    Unit("t", "tonne", "mass", 1000.0, aliases=("tonnes", "metric ton", "metric tons")),
    Unit("lb", "pound", "mass", 0.45359237, aliases=("lbs", "pounds")),
    Unit("oz", "ounce", "mass", 0.028349523125, aliases=("ounces",)),
    Unit("st", "stone", "mass", 6.35029318, aliases=("stones",)),
    Unit("l", "litre", "volume", 1.0, aliases=("liter", "litres", "liters")),
    Unit("ml", "millilitre", "volume", 0.001, aliases=("milliliter", "millilitres", "milliliters")),
    Unit("m3", "cubic metre", "volume", 1000.0, aliases=("cubic meter", "cubic metres", "cubic meters")),
    Unit("gal", "US gallon", "volume", _US_GALLON, aliases=("gallon", "gallons")),
    Unit("imp_gal", "imperial gallon", "volume", 4.54609, aliases=("imperial gallons",)),
    Unit("qt", "US quart", "volume", _US_GALLON / 4, aliases=("quart", "quarts")),
    Unit("pt", "US pint", "volume", _US_GALLON / 8, aliases=("pint", "pints")),
    Unit("cup", "US cup", "volume", _US_GALLON / 16, aliases=("cups",)),
    Unit("fl_oz", "US fluid ounce", "volume", _US_GALLON / 128, aliases=("fluid ounce", "fluid ounces")),
    Unit("tbsp", "tablespoon", "volume", _US_GALLON / 256, aliases=("tablespoons",)),
    Unit("tsp", "teaspoon", "volume", _US_GALLON / 768, aliases=("teaspoons",)),
    Unit("C", "degree Celsius", "temperature", 1.0, 273.15,
         aliases=("celsius", "degrees celsius", "°c", "degc")),
    Unit("F", "degree Fahrenheit", "temperature", 5 / 9, 273.15 - 32 * 5 / 9,
         aliases=("fahrenheit", "degrees fahrenheit", "°f", "degf")),
    Unit("K", "kelvin", "temperature", 1.0, aliases=("kelvins",)),
)


def _key(text: str) -> str:
    return " ".join(text.strip().lower().replace("_", " ").split())


_BY_KEY: dict[str, Unit] = {_key(spelling): unit for unit in UNITS
                            for spelling in (unit.symbol, unit.name, *unit.aliases)}


def lookup_unit(text: str) -> Unit | None:
    """The unit a symbol, name or alias stands for (case, spaces and underscores ignored); ``None`` if none."""
    return _BY_KEY.get(_key(text))


def units_of(dimension: str) -> list[str]:
    """The symbols of every unit of ``dimension``."""
    return [u.symbol for u in UNITS if u.dimension == dimension]


def similar_units(text: str) -> list[str]:
    """Symbols of the units whose spellings look like ``text`` (for suggestions), best first."""
    matches = difflib.get_close_matches(_key(text), list(_BY_KEY), n=6, cutoff=0.6)
    return list(dict.fromkeys(_BY_KEY[m].symbol for m in matches))[:3]
