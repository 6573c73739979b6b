"""The values a request writes, read by what they mean: numbers (3,000; 7%; 1.267 billion; 5m) and dates (April 5,
2022; 2022-04-05; 04/05/2022), so that a call holding one in another spelling still counts as holding it.

``native-strict-cover`` asks two questions of a request and its calls: does the request write a value no call holds
yet (``strict_calls.uncovered``), and does a call the model was asked to add write only values the request holds
(``strict_calls._grounded``)? A small model writes "April 5, 2022" as ``2022-04-05`` and "1.341 billion" as
``1341000000``; read as spelled, the first is a value still unused and the second a value made up. The same
reading, with numbers in words and loose spellings (``number_words``, ``loosely_written``), tells the default which
optional arguments hold a value the request writes (``tool_selection.optional_arguments``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable

__all__ = ["DATE", "NUMBER_WORDS", "REQUEST_NAME", "REQUEST_NUMBER", "coordinated", "date_of", "digit_values",
           "loosely_written", "meanings", "number_of", "number_words", "same_meaning", "written_values"]

REQUEST_NUMBER = re.compile(  # 40, 5.6, -3, 3,000, 1e-9, 7%, 1.2 billion, 5m, 20k; not 3x, m/s^2 or 5pm; "5,10" is two
    r"(?<![\w.^-])(?:(?<!,)|(?<=\d,)(?!\d{3}(?!\d)))-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"(?:%|\s(?:thousand|million|billion|trillion)\b|(?:k|m|km|cm|mm|s|ms|h|hr|kg|g|mg|lb|lbs|ft|mi|ml|l)\b)?"
    r"(?![\w^]|,\d{3}(?!\d))", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\d.])(-\s?)?(\d+(?:\.\d+)?)(?![\d.]*\d)")  # any digits: "5x^2 - 7x" writes 5 and -7
REQUEST_NAME = re.compile(  # capitalised, not a sentence's start; after a space or "(": "socks (P3006)"
    r"(?:(?<=[a-z,;:] )|(?<=[a-z,;:] \())(?!I\b)[A-Z][\w.'-]*(?: [A-Z0-9][\w.'-]*)*")
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SUFFIX_SCALES = {"k": (1e3,), "m": (1.0, 1e6)}  # 20k is 20,000; 5m is 5 metres or 5 million
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAME = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DAY = r"[0-3]?\d(?:st|nd|rd|th)?"
DATE = re.compile(  # the forms BFCL's answers and small models write; a date without its year is not read
    rf"\b(?:(?P<month>{_MONTH_NAME})\s*(?P<day>{_DAY}),?\s*(?P<year>\d{{4}})"
    rf"|(?P<day2>{_DAY})\s+(?P<month2>{_MONTH_NAME}),?\s*(?P<year2>\d{{4}})"
    r"|(?P<iso_year>\d{4})[-/.](?P<iso_month>[01]?\d)[-/.](?P<iso_day>[0-3]?\d)"
    r"|(?P<us_month>[01]?\d)/(?P<us_day>[0-3]?\d)/(?P<us_year>\d{4}))\b", re.IGNORECASE)

_TOKEN = re.compile(r"[^\W_][\w'-]*(?:\.\d+)?|[^\w\s]")  # a word (3.5 and rock'n'roll whole) or one punctuation mark
_JOINERS = frozenset({"and", "or"})
_NOT_AN_ITEM = frozenset(  # words that open a clause or a phrase, not a listed item ("in Paris and then ...")
    "a an the to for in of on at by as from with then also what how which who can could would should will please "
    "i me my we our you your it its they their this that these those each both all other another is are was were be "
    "do does did get find give tell provide calculate using use".split())
_WIDEST_ITEM = 4  # words; a longer argument value is not looked for among a request's lists

Meaning = float | dt.date

NUMBER_WORDS = {word: float(value) for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())} | {
    "thirty": 30.0, "forty": 40.0, "fifty": 50.0, "sixty": 60.0, "seventy": 70.0, "eighty": 80.0, "ninety": 90.0,
    "hundred": 100.0, "thousand": 1000.0, "dozen": 12.0, "once": 1.0, "twice": 2.0, "thrice": 3.0, "single": 1.0,
    "couple": 2.0, "pair": 2.0}
"""Numbers a request writes as words ("three days", "a dozen eggs"); ordinals ("the first circle") are not read."""
_GLUED_UNIT = re.compile(r"\d([A-Za-z]+)")  # "5cm" writes cm
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")
_ALNUM = re.compile(r"[^\W_]+")  # words and numbers, as ``parsing.words`` splits them


def number_of(text: str) -> tuple[float, ...]:
    """What a number written as ``text`` may mean (``REQUEST_NUMBER``'s forms): 7% is 7 or 0.07, 1.2 billion is
    1.2e9, 5m is 5 or 5e6, 2 kg is 2; empty if ``text`` is not such a number."""
    match = re.fullmatch(r"(-?[\d,]+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s?([a-zA-Z%]*)", text.strip())
    if match is None:
        return ()
    try:
        number = float(match.group(1).replace(",", ""))
    except ValueError:
        return ()
    suffix = match.group(2).lower()
    if suffix == "%":
        return number, number / 100
    if suffix in _SCALES:
        return (number * _SCALES[suffix],)
    return tuple(number * scale for scale in _SUFFIX_SCALES.get(suffix, (1.0,)))


def date_of(match: re.Match) -> dt.date | None:
    """The date a ``DATE`` match writes, or None if it names no real day (2022-02-30)."""
    groups = {key: value for key, value in match.groupdict().items() if value}
    month_name = groups.get("month") or groups.get("month2")
    if month_name:
        month = _MONTHS.index(month_name[:3].lower()) + 1
        year = groups.get("year") or groups["year2"]
        day = re.match(r"\d+", groups.get("day") or groups["day2"]).group()
    elif "iso_year" in groups:
        year, month, day = groups["iso_year"], groups["iso_month"], groups["iso_day"]
    else:
        year, month, day = groups["us_year"], groups["us_month"], groups["us_day"]
    try:
        return dt.date(int(year), int(month), int(day))
    except ValueError:
        return None


def meanings(value: str) -> tuple[Meaning, ...]:
    """What one value (an argument's, or one the request writes) means as a whole: a date, a number, or nothing."""
    text = value.strip()
    date = DATE.fullmatch(text)
    if date is not None and (day := date_of(date)) is not None:
        return (day,)
    return number_of(text)


def written_values(request: str) -> list[tuple[str, tuple[Meaning, ...]]]:
    """The dates, numbers and capitalised names ``request`` writes, in order of kind then place, each with what it
    means (a name means only its words). A number or name inside a date is the date's, not its own."""
    dates = [(match.span(), match.group(), day) for match in DATE.finditer(request)
             if (day := date_of(match)) is not None]
    taken = [span for span, _, _ in dates]
    found: list[tuple[str, tuple[Meaning, ...]]] = [(text, (day,)) for _, text, day in dates]
    for pattern in (REQUEST_NUMBER, REQUEST_NAME):
        for match in pattern.finditer(request):
            if not any(start < match.end() and match.start() < end for start, end in taken):
                found.append((match.group(), number_of(match.group()) if pattern is REQUEST_NUMBER else ()))
    return found


def digit_values(request: str) -> list[float]:
    """Every number ``request`` writes in digits, glued to letters or not, and with the minus sign before it (a space
    between them allowed) as well as without: "5x^2 - 7x + 3" writes 5, 2, 7 and -7, 3; "the 18th century", 18. Not
    what a request asks to be used (``written_values`` reads those), but what a value may be taken from."""
    values = []
    for sign, digits in _DIGITS.findall(request):
        values += [float(digits), -float(digits)] if sign else [float(digits)]
    return values


def number_words(request: str) -> list[float]:
    """The numbers ``request`` writes as words (``NUMBER_WORDS``): "next three days" writes 3."""
    return [NUMBER_WORDS[word] for word in re.findall(r"[a-z]+", request.lower()) if word in NUMBER_WORDS]


def loosely_written(value: str, request: str) -> bool:
    """Whether ``request`` writes ``value`` in a form a reading of its words and values misses: a unit glued to a
    number ("5cm" writes cm), a short abbreviation of one of its words (up to three letters, in order, from the
    word's first: mi for "miles", cm for "centimeters"), the initials of capitalised words it writes in a row (UK for
    "United Kingdom"), or, for a value of several words, one of them longer than three letters ("square meters"
    after "15 meters")."""
    text = " ".join(_ALNUM.findall(value.lower()))
    spoken = _ALNUM.findall(request.lower())
    if text in {unit.lower() for unit in _GLUED_UNIT.findall(request)}:
        return True
    if re.fullmatch(r"[a-z]{1,3}", text) and any(
            word[0] == text[0] and len(word) > len(text) and _in_order(text, word) for word in spoken):
        return True
    if re.fullmatch(r"[A-Z]{2,5}", value) and value in "".join(word[0] for word in _CAPITALISED.findall(request)):
        return True
    return len(text.split()) > 1 and any(len(word) > 3 and word in spoken for word in text.split())


def _in_order(letters: str, word: str) -> bool:
    rest = iter(word)
    return all(letter in rest for letter in letters)


def coordinated(request: str, values: Iterable[str]) -> list[str]:
    """The items ``request`` lists beside one of ``values`` ("X, Y and Z", "X or Y"), as written, in order: each of
    the value's kind (a number, a capitalised name, a word) and, but for a name (its capitalised words), as many
    words as the value, so that "copper and aluminum" lists "aluminum" beside "copper", "2018 and 2020" lists 2020
    beside 2018 and "the UEFA Champions League and La Liga respectively" lists "La Liga"; a value is found by its
    words (case and punctuation aside)."""
    raw = _TOKEN.findall(request)
    tokens = [token.lower() for token in raw]
    found: list[str] = []
    for value in dict.fromkeys(" ".join(_TOKEN.findall(value.lower())) for value in values):
        width = len(value.split())
        if not 0 < width <= _WIDEST_ITEM:
            continue
        for start in range(len(tokens) - width + 1):
            if tokens[start:start + width] == value.split():
                found += _listed_beside(raw, tokens, start, width)
    return list(dict.fromkeys(found))


def _listed_beside(raw: list[str], tokens: list[str], start: int, width: int) -> list[str]:
    """The items listed after, then before, the ``width`` tokens at ``start``."""
    found = []
    for step in (1, -1):
        edge = start + width if step == 1 else start
        while (gap := _joiner_width(tokens, edge, step)) and (
                span := _item_span(raw, tokens, edge + gap if step == 1 else edge - gap - 1, step, width,
                                   like=raw[start])):
            found.append(" ".join(raw[span[0]:span[1]]))
            edge = span[1] if step == 1 else span[0]
    return found


def _item_span(raw: list[str], tokens: list[str], near: int, step: int, width: int, *,
               like: str) -> tuple[int, int] | None:
    """The span of the item that starts (``step`` 1) or ends (-1) at token ``near``, if it is one like ``like``."""
    if _kind(like) == "name":  # capitalised words and numbers ("Maroon 5"), not a sentence's first word
        edge = near
        while (0 <= edge < len(raw) and abs(edge - near) < _WIDEST_ITEM and (raw[edge][0].isupper()
               or raw[edge][0].isdigit()) and not (edge == 0 or raw[edge - 1] in ".?!")):
            edge += step
        first, end = (near, edge) if step == 1 else (edge + 1, near + 1)
        while first < end and raw[first][0].isdigit():
            first += 1
    else:
        first, end = (near, near + width) if step == 1 else (near - width + 1, near + 1)
    item = tokens[first:end] if 0 <= first < end <= len(tokens) else []
    if (len(item) == (end - first) and item and all(token[0].isalnum() for token in item)
            and item[0] not in _NOT_AN_ITEM | _JOINERS and _kind(raw[first]) == _kind(like)):
        return first, end
    return None


def _joiner_width(tokens: list[str], edge: int, step: int) -> int:
    """How many tokens from ``edge`` in direction ``step`` join two listed items: ",", "and", ", and", "or"."""
    ahead = tokens[edge:edge + 2] if step == 1 else tokens[max(edge - 2, 0):edge][::-1]
    if ahead[:1] == [","]:
        return 2 if ahead[1:2] and ahead[1] in _JOINERS else 1
    if ahead[:1] and ahead[0] in _JOINERS:
        return 2 if step == -1 and ahead[1:2] == [","] else 1
    return 0


def _kind(token: str) -> str:
    return "number" if re.fullmatch(r"-?[\d.,]+", token) else "name" if token[:1].isupper() else "word"


def same_meaning(wanted: Iterable[Meaning], held: Iterable[Meaning]) -> bool:
    """Whether any of ``wanted`` is one of ``held``: equal dates, or numbers equal to nine significant digits."""
    held = list(held)
    for want in wanted:
        for have in held:
            if isinstance(want, float) and isinstance(have, float):
                if math.isclose(want, have, rel_tol=1e-9, abs_tol=1e-12):
                    return True
            elif isinstance(want, dt.date) and isinstance(have, dt.date) and want == have:
                return True
    return False
