"""Compiled selectors on disk: the DSPy program state plus a manifest of what it was compiled against.

    selector-dir/
      program.json    DSPy state (instructions, demonstrations)
      manifest.json   tools (names and schema hashes), model, DSPy version, optimizer, scores, creation time,
                      the sha256 of the program state, the fingerprint of relevance.json, and the tool
                      descriptions the selector shows in place of the tools' own, with the sha256 of the
                      originals they replace (``tool_selection.descriptions``)
      relevance.json  the relevance model the selector applies after each selection, when it has one (its
                      signals, coefficients, threshold, and the suites and splits it was fitted and tuned on)

A compiled program is data, and loading treats it as untrusted: DSPy's own loader sets every key of a
predictor's state as an attribute of the predictor (a ``config`` with an ``api_base`` would send the user's API
key elsewhere), so the state is first checked against what a selector's state may hold (``state_problems``):
per predictor of the selector, its demonstrations (the signature's fields), its instructions and field
prefixes and descriptions, and nothing that configures a language model. Loading also refuses a program.json
whose hash differs from the manifest's, and, naming what changed, tools that differ from the running registry
(or rewritten descriptions whose originals do) unless the caller passes ``allow_tool_changes=True``.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.saving import get_dependency_versions
from pydantic import BaseModel, Field, SerializeAsAny, TypeAdapter, ValidationError, model_validator

from tool_selection.descriptions import DescriptionOverrides
from tool_selection.errors import ToolsChangedError, ToolSelectionError
from tool_selection.registry import ToolRegistry
from tool_selection.spec import SelectorSpec
from tool_selection.strategies import STRUCTURED_STRATEGY
from tool_selection.strategies.base import demo_without
from tool_selection.strict_json import loads_strict

__all__ = [
    "Manifest",
    "ProgramStateError",
    "ToolsChangedError",
    "check_program_state",
    "load_compiled",
    "load_program_state",
    "program_sha256",
    "save_compiled",
    "state_problems",
    "tool_fingerprint",
]

logger = logging.getLogger(__name__)

PROGRAM_FILE = "program.json"
MANIFEST_FILE = "manifest.json"
RELEVANCE_FILE = "relevance.json"
# What DSPy 3.4's Predict.dump_state writes; "fields" (decision-output settings) only ever empty for a selector.
PREDICTOR_KEYS = ("traces", "train", "demos", "signature", "lm", "fields")
DEMO_FLAGS = ("augmented",)  # set by DSPy on bootstrapped demonstrations
DEPENDENCY_KEYS = tuple(get_dependency_versions())  # what DSPy records under metadata.dependency_versions
MAX_FILE_BYTES = 16 << 20  # a program with a hundred demonstrations is a few hundred kilobytes


class ProgramStateError(ToolSelectionError):
    """A program state holds something a selector's state may not, or was changed after it was saved."""


class Manifest(BaseModel):
    tool_set: str | None = Field(description="Tool set name, or None when tools came per case (e.g. BFCL).")
    tools: dict[str, str] = Field(default_factory=dict, description="Tool name -> schema hash.")
    model: str
    strategy: str | None = Field(default=None, description="The selector's strategy; None: json-cot (saved before "
                                                            "strategies were named).")
    dspy_version: str = dspy.__version__
    optimizer: str = "none"
    optimizer_args: dict[str, Any] = Field(default_factory=dict)
    teacher: str | None = None
    suite: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    created_at: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    program_sha256: str | None = Field(default=None, description="sha256 of program.json's state (set on save).")
    relevance: str | None = Field(default=None, description="Fingerprint of relevance.json, the relevance model "
                                                            "saved with the program (set on save); None: none.")
    selector: SerializeAsAny[SelectorSpec] | None = Field(default=None, description="What the selector does (its spec, a subclass's fields too); None in "
                                                                    "manifests saved before specs.")
    descriptions: dict[str, str] = Field(default_factory=dict, description="Tool name -> the description the "
                                         "selector shows in place of the tool's own (toolsel optimize --target "
                                         "descriptions).")
    original_descriptions_sha256: str | None = Field(default=None, description="sha256 of the original name -> "
                                                     "description mapping the descriptions were written for.")
    cost: dict[str, float] = Field(default_factory=dict, description="What compiling took: compile_seconds, "
                                   "model_calls (DSPy cache hits included), candidates (where the optimizer "
                                   "scores candidates).")

    def selector_spec(self) -> SelectorSpec:
        """The spec the selector was saved with; for an older manifest, the one its tool set and strategy make."""
        if self.selector is not None:
            return self.selector
        return SelectorSpec.build(tools=self.tool_set, strategy=self.strategy or STRUCTURED_STRATEGY)

    @model_validator(mode="after")
    def _tool_set_lists_its_tools(self) -> Manifest:
        if self.tool_set is not None and not self.tools:
            raise ValueError(f"the manifest names the tool set {self.tool_set!r} but lists none of its tools; "
                             "record them with tools=tool_fingerprint(registry)")
        return self

    @model_validator(mode="after")
    def _descriptions_name_their_originals(self) -> Manifest:
        if self.descriptions and self.original_descriptions_sha256 is None:
            raise ValueError("the manifest holds rewritten descriptions but not the sha256 of the originals they "
                             "replace (original_descriptions_sha256)")
        return self


def tool_fingerprint(registry: ToolRegistry) -> dict[str, str]:
    return {tool.NAME: tool.schema_hash() for tool in registry}


def program_sha256(state: Any) -> str:
    """The hash of a program state, over its canonical JSON (independent of the file's layout)."""
    canonical = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def state_problems(program: dspy.Module, state: Any) -> list[str]:
    """Every way ``state`` departs from what ``program``'s own state may hold (empty when it conforms)."""
    if not isinstance(state, dict):
        return [f"the state must be a JSON object, got {type(state).__name__}"]
    predictors = dict(program.named_predictors())
    problems = [f"unknown predictor {name!r} (this selector's: {', '.join(predictors)})"
                for name in state if name not in predictors and name != "metadata"]
    problems += [f"predictor {name!r} is missing" for name in predictors if name not in state]
    problems += _metadata_problems(state.get("metadata"))
    for name, predictor in predictors.items():
        if name in state:
            problems += [f"{name}.{p}" for p in _predictor_problems(predictor, state[name])]
    return problems


def _metadata_problems(metadata: Any) -> list[str]:
    versions = metadata.get("dependency_versions") if isinstance(metadata, dict) else None
    if not isinstance(versions, dict) or set(metadata) != {"dependency_versions"}:
        return ["metadata must hold only dependency_versions, as DSPy writes it"]
    return [f"metadata.dependency_versions.{key}: expected one of {', '.join(DEPENDENCY_KEYS)} with a string value"
            for key, value in versions.items() if key not in DEPENDENCY_KEYS or not isinstance(value, str)]


def _predictor_problems(predictor: dspy.Predict, state: Any) -> list[str]:
    if not isinstance(state, dict):
        return [f"must be an object, got {type(state).__name__}"]
    problems = []
    for key in state:
        if key == "config":
            problems.append("config: not part of a selector's state (it would configure the predictor's model "
                            "calls, e.g. an api_base that receives the API key)")
        elif key not in PREDICTOR_KEYS:
            problems.append(f"{key}: not part of a selector's state (allowed: {', '.join(PREDICTOR_KEYS)})")
    for key in ("signature", "lm"):
        if key not in state:
            problems.append(f"{key} is missing")
    if state.get("lm") is not None:
        problems.append("lm: must be null; a compiled selector runs with the model it is given, never its own")
    for key in ("traces", "train"):
        if state.get(key, []) != []:
            problems.append(f"{key}: must be an empty list")
    if state.get("fields", {}) != {}:
        problems.append("fields: must be empty (a selector has no decision-output settings)")
    fields = predictor.signature.fields
    field_names = list(fields)
    problems += _signature_problems(state.get("signature"), len(field_names))
    demos = state.get("demos", [])
    if not isinstance(demos, list):
        return [*problems, "demos: must be a list"]
    for index, demo in enumerate(demos):
        if not isinstance(demo, dict):
            problems.append(f"demos[{index}]: must be an object")
            continue
        for key, value in demo.items():
            if key in DEMO_FLAGS:
                if not isinstance(value, bool):
                    problems.append(f"demos[{index}].{key}: must be true or false")
            elif key not in field_names:
                problems.append(f"demos[{index}].{key}: not a field of the signature ({', '.join(field_names)})")
            else:
                problem = _value_problem(fields[key].annotation, value)
                if problem:
                    problems.append(f"demos[{index}].{key}: {problem}")
    return problems


@functools.lru_cache(maxsize=64)
def _adapter(annotation: Any) -> TypeAdapter:
    return TypeAdapter(annotation)


def _value_problem(annotation: Any, value: Any) -> str | None:
    """Why ``value`` cannot be a demonstration's value of a field typed ``annotation`` (the prompt is built from
    it), or None. A field a demonstration leaves empty (``null``, as bootstrapping can) is fine."""
    if value is None:
        return None
    try:
        _adapter(annotation).validate_python(value)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where + ': ' if where else ''}{first['msg']}"
    return None


def _signature_problems(signature: Any, field_count: int) -> list[str]:
    if not isinstance(signature, dict) or set(signature) != {"instructions", "fields"}:
        return ["signature: must hold exactly instructions and fields"]
    problems = [] if isinstance(signature["instructions"], str) else ["signature.instructions: must be a string"]
    fields = signature["fields"]
    if not isinstance(fields, list) or len(fields) != field_count:
        return [*problems, f"signature.fields: must list the signature's {field_count} fields"]
    for index, field in enumerate(fields):
        if not (isinstance(field, dict) and set(field) == {"prefix", "description"}
                and all(isinstance(v, str) for v in field.values())):
            problems.append(f"signature.fields[{index}]: must hold exactly a prefix and a description, both strings")
    return problems


def check_program_state(program: dspy.Module, state: Any, source: str | Path) -> None:
    """Raise ``ProgramStateError`` naming every key of ``state`` a selector's state may not hold."""
    problems = state_problems(program, state)
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise ProgramStateError(f"{source} is not a valid state for this selector ({len(problems)} problem(s)):\n"
                                f"{listing}\nRefusing to load it: only load compiled selectors from people you trust.")


def _read_json(path: Path) -> Any:
    """The JSON of a program or manifest file, read strictly (``strict_json``); anything else is a clear error."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise ToolSelectionError(f"{path} is missing.") from None
    except IsADirectoryError:
        raise ToolSelectionError(f"{path} is a directory, not a JSON file.") from None
    except OSError as error:
        raise ToolSelectionError(f"{path} cannot be read: {error.strerror}.") from None
    if len(text) > MAX_FILE_BYTES:
        raise ToolSelectionError(f"{path} is {len(text):,} bytes, over the {MAX_FILE_BYTES:,} bytes a compiled "
                                 "selector's file may hold.")
    try:
        return loads_strict(text.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ToolSelectionError(f"{path} is not valid JSON: not UTF-8 ({error.reason} at byte "
                                 f"{error.start}).") from None
    except ValueError as error:  # malformed JSON, NaN, a number out of range, duplicate keys, lone surrogates
        raise ToolSelectionError(f"{path} is not valid JSON: {error}") from None


def _apply_state(program: dspy.Module, state: dict[str, Any]) -> None:
    """Load a checked state, as DSPy's ``Module.load`` does once it has read the file."""
    current = get_dependency_versions()
    for key, version in state["metadata"]["dependency_versions"].items():
        if current[key] != version:
            logger.warning("The program was saved with %s==%s, but this is %s==%s.", key, version, key, current[key])
    program.load_state({name: value for name, value in state.items() if name != "metadata"})


def load_program_state(program: dspy.Module, path: str | Path) -> dspy.Module:
    """Load a bare DSPy state file (no manifest) into ``program`` after ``check_program_state``."""
    path = Path(path)
    state = _read_json(path)
    check_program_state(program, state, path)
    _apply_state(program, state)
    return program


def keep_signature_fields(program: dspy.Module) -> None:
    """Trim every demonstration to its predictor's signature fields and DSPy's flags. A bootstrapped trace can
    carry what a strategy read beyond them (the native strategy's prose as ``reasoning``), which a selector's
    saved state may not hold."""
    for _, predictor in program.named_predictors():
        allowed = {*predictor.signature.fields, *DEMO_FLAGS}
        predictor.demos = [demo_without(demo, [key for key in demo.keys() if key not in allowed])
                           for demo in predictor.demos]


def save_compiled(program: dspy.Module, directory: str | Path, manifest: Manifest) -> Path:
    """Write ``program``'s state (demonstrations trimmed to their signatures, in place) and ``manifest`` (which
    gets the state's hash) to ``directory``."""
    directory = Path(directory)
    registry = getattr(program, "tools", None)
    if isinstance(registry, ToolRegistry) and len(registry) and not manifest.tools:
        raise ToolSelectionError(f"The manifest for {directory} lists no tools, but the program has "
                                 f"{len(registry)}; record them with tools=tool_fingerprint(registry).")
    directory.mkdir(parents=True, exist_ok=True)
    keep_signature_fields(program)
    program.save(str(directory / PROGRAM_FILE))
    state = _read_json(directory / PROGRAM_FILE)
    check_program_state(program, state, directory / PROGRAM_FILE)
    manifest.program_sha256 = program_sha256(state)
    overrides = getattr(program, "described", None)
    manifest.descriptions = dict(overrides.descriptions) if overrides is not None else {}
    manifest.original_descriptions_sha256 = overrides.original_sha256 if overrides is not None else None
    model = getattr(getattr(program, "relevance", None), "model", None)
    manifest.relevance = model.fingerprint if model is not None else None
    if model is not None:
        model.save(directory / RELEVANCE_FILE)
    else:
        (directory / RELEVANCE_FILE).unlink(missing_ok=True)
    (directory / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return directory


def read_manifest(directory: str | Path) -> Manifest:
    path = Path(directory) / MANIFEST_FILE
    if not path.exists():
        raise ToolSelectionError(f"{directory} is not a compiled selector: {MANIFEST_FILE} is missing.")
    try:
        return Manifest.model_validate(_read_json(path))
    except ValidationError as error:
        raise ToolSelectionError(f"{path} is not a valid manifest: {error}") from None


def check_tools(manifest: Manifest, registry: ToolRegistry) -> list[str]:
    """What changed between the manifest's tools and ``registry``: one line per added/removed/altered tool."""
    current = tool_fingerprint(registry)
    changes = [f"removed: {n}" for n in sorted(set(manifest.tools) - set(current))]
    changes += [f"added: {n}" for n in sorted(set(current) - set(manifest.tools))]
    changes += [f"schema changed: {n}" for n in sorted(set(current) & set(manifest.tools))
                if current[n] != manifest.tools[n]]
    return changes


def load_compiled(program: dspy.Module, directory: str | Path, registry: ToolRegistry | None,
                  *, allow_tool_changes: bool = False) -> Manifest:
    """Load state into ``program`` after checking the tools, the state's hash and its contents; returns the
    manifest."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if registry is not None:
        changes = check_tools(manifest, registry)
        if changes and not allow_tool_changes:
            compiled_for = f"({manifest.tool_set})" if manifest.tools else "(no tools: it was compiled per case)"
            raise ToolsChangedError(
                f"The tools differ from those {directory} was compiled for {compiled_for}: "
                + "; ".join(changes)
                + ". Re-optimize for the current tools, or load with allow_tool_changes=True "
                "(--allow-tool-changes) to use it anyway."
            )
    state = _read_json(directory / PROGRAM_FILE)
    if manifest.program_sha256 is None:
        raise ProgramStateError(f"{directory / MANIFEST_FILE} records no program_sha256 (it predates program "
                                "hashes, or was edited); compile the selector again to load it.")
    if program_sha256(state) != manifest.program_sha256:
        raise ProgramStateError(f"{directory / PROGRAM_FILE} does not match the program_sha256 in {MANIFEST_FILE}: "
                                "it changed after it was saved. Refusing to load it.")
    check_program_state(program, state, directory / PROGRAM_FILE)
    relevance = _load_relevance(directory, manifest)
    overrides = _description_overrides(directory, manifest, registry, allow_tool_changes)
    _apply_state(program, state)
    program.described = overrides
    if relevance is not None:
        from tool_selection.relevance import RelevanceStage

        program.relevance = RelevanceStage(relevance)
    return manifest


def _description_overrides(directory: Path, manifest: Manifest, registry: ToolRegistry | None,
                           allow_tool_changes: bool) -> DescriptionOverrides | None:
    """The rewritten descriptions the manifest holds, checked against ``registry``'s own when it is known (else
    against each catalog the selector is given), or None."""
    if manifest.original_descriptions_sha256 is None:
        return None
    overrides = DescriptionOverrides(dict(manifest.descriptions), manifest.original_descriptions_sha256,
                                     allow_changes=allow_tool_changes, source=str(directory))
    if registry is not None:
        overrides.check(registry)
    return overrides


def _load_relevance(directory: Path, manifest: Manifest) -> Any:
    """The relevance model saved with the program, checked against the manifest's fingerprint, or None."""
    from tool_selection.relevance import RelevanceModel

    path = directory / RELEVANCE_FILE
    if manifest.relevance is None:
        if path.exists():
            raise ProgramStateError(f"{path} is not named in {MANIFEST_FILE} (it was added after the selector was "
                                    "saved): remove it, or save the selector again with its relevance model.")
        return None
    if not path.is_file():
        raise ProgramStateError(f"{MANIFEST_FILE} names a relevance model ({manifest.relevance}) but {path} is "
                                "missing: copy the whole selector directory.")
    model = RelevanceModel.load(path)
    if model.fingerprint != manifest.relevance:
        raise ProgramStateError(f"{path} does not match the relevance fingerprint in {MANIFEST_FILE}: it changed "
                                "after it was saved. Refusing to load it.")
    return model
