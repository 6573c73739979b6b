"""The configurations of a discussion (YAML, snake_case) and of a debate (JSON, camelCase), validated once: model
specs, strategies, tool entries, collaboration pairs; every problem named with its field."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from tool_selection.collaboration import CollaborationConfig
from tool_selection.conversations.errors import ConversationConfigError
from tool_selection.conversations.storage import read_config
from tool_selection.conversations.toolbox import ToolEntry
from tool_selection.lm.specs import ModelSpec
from tool_selection.strategies import parse_strategy
from tool_selection.validation import validation_problems

__all__ = ["PHASES", "DebateAgent", "DebateConfig", "DiscussionConfig", "DiscussionModel", "ToolsConfig",
           "load_debate_config", "load_discussion_config"]

PHASES = ("proposal", "critique", "refinement")
"""The phases of every debate round, in order."""


def _model_spec(value: str) -> str:
    return str(ModelSpec.parse(value))


def _strategy(value: str) -> str:
    gated, _ = parse_strategy(value)
    if gated:
        raise ValueError(f"{value!r}: a relevance gate answers 'no tool fits' instead of letting the model talk; "
                         "use the strategy without the gate+ prefix")
    return value


def _guide_by_default(collaboration: Any) -> Any:
    """Pairs in a conversation escalate by guidance unless they say otherwise (the issue's protocol)."""
    if isinstance(collaboration, dict) and isinstance(collaboration.get("pairs"), list):
        collaboration = {**collaboration, "pairs": [{"strategy": "guide", **p} if isinstance(p, dict) else p
                                                    for p in collaboration["pairs"]]}
    return collaboration


class _Speaking(BaseModel):
    """How a model is asked, shared by discussion models and debate agents."""

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=384, ge=16, le=8192, description="Longest answer per model call, in tokens.")
    strategy: str = Field(default="auto", description="How the model is asked (toolsel strategies).")
    system_prompt: str | None = Field(default=None, max_length=4000,
                                      description="Extra instructions, appended to the role's system prompt.")

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        return _strategy(value)


# ----------------------------------------------------------------------------------------------- discussions
class DiscussionModel(_Speaking):
    """One of the two models of a discussion."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(description="The model spec, e.g. local:qwen2.5-coder-0.5b.")
    role: Literal["human", "assistant"]
    max_tool_calls: int = Field(default=5, ge=1, le=100, description="Tool calls per turn, failed ones included.")

    @field_validator("type")
    @classmethod
    def _spec(cls, value: str) -> str:
        return _model_spec(value)


class ToolsConfig(BaseModel):
    """A discussion's ``tools`` section: whether the models get tools, and which."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    registry: list[ToolEntry] = Field(default_factory=list)


class DiscussionConfig(BaseModel):
    """A discussion: ``turns`` messages (the human-role model opens, then the two alternate) toward ``goal``."""

    model_config = ConfigDict(extra="forbid")

    turns: int = Field(ge=1, le=100, description="Messages in the discussion, both models' together.")
    goal: str = Field(min_length=1, max_length=4000)
    models: dict[str, DiscussionModel]
    tools: ToolsConfig = Field(default_factory=lambda: ToolsConfig(enabled=False))
    collaboration: CollaborationConfig = Field(default_factory=lambda: CollaborationConfig(enabled=False))
    context_chars: int = Field(default=6000, ge=500, le=200_000,
                               description="Most characters of earlier messages a model is shown (oldest dropped "
                                           "first; the opening is kept).")
    cache: bool = Field(default=True, description="DSPy's response cache.")

    @field_validator("collaboration", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        return _guide_by_default(value)

    @model_validator(mode="after")
    def _two_roles(self) -> DiscussionConfig:
        roles = sorted(m.role for m in self.models.values())
        if roles != ["assistant", "human"]:
            raise ValueError(f"a discussion has two models, one with role human and one with role assistant; got "
                             f"{dict((k, m.role) for k, m in self.models.items())}")
        _check_pairs(self.collaboration, [m.type for m in self.models.values()], "models")
        return self

    @property
    def opener(self) -> str:
        """The key of the model that speaks first (the human)."""
        return next(k for k, m in self.models.items() if m.role == "human")


def _check_pairs(collaboration: CollaborationConfig, specs: list[str], where: str) -> None:
    if not collaboration.enabled:
        return
    for pair in collaboration.pairs:
        if pair.primary not in specs:
            raise ValueError(f"collaboration pair {pair.primary} -> {pair.secondary}: its primary is none of the "
                             f"{where}' models ({', '.join(dict.fromkeys(specs))})")
    primaries = [p.primary for p in collaboration.pairs]
    repeated = sorted({p for p in primaries if primaries.count(p) > 1})
    if repeated:
        raise ValueError(f"collaboration: {', '.join(repeated)} is the primary of more than one pair; keep one")


# ----------------------------------------------------------------------------------------------- debates
class _Camel(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True,
                              serialize_by_alias=True)


class DebateAgent(_Camel, _Speaking):
    """One debate agent (``{"id", "name", "role", "model", "temperature", "tools", "toolCallLimit"}``)."""

    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    name: str = Field(min_length=1, max_length=100)
    role: str = Field(min_length=1, max_length=100)
    model: str
    tools: list[dict[str, Any]] = Field(default_factory=list, max_length=50,
                                        description="OpenAI function schemas; each name must match a tool.")
    tool_call_limit: int = Field(default=10, ge=1, le=100, description="Tool calls per phase, failed ones included.")

    @field_validator("model")
    @classmethod
    def _spec(cls, value: str) -> str:
        return _model_spec(value)

    @field_validator("tools")
    @classmethod
    def _named(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, schema in enumerate(value):
            if not isinstance((schema.get("function") or schema).get("name"), str):
                raise ValueError(f"tools[{index}] has no name; give an OpenAI function schema "
                                 '{"name": ..., "description": ..., "parameters": {...}}')
        return value


class DebateConfig(_Camel):
    """A debate: ``agents`` answer ``topic`` in ``rounds`` of proposal, critique and refinement."""

    topic: str = Field(min_length=1, max_length=4000)
    rounds: int = Field(default=1, ge=1, le=20)
    agents: list[DebateAgent] = Field(min_length=2, max_length=8)
    collaboration: CollaborationConfig = Field(default_factory=lambda: CollaborationConfig(enabled=False))
    quote_chars: int = Field(default=800, ge=100, le=20_000,
                             description="Most characters of another contribution quoted into a prompt.")
    cache: bool = Field(default=True, description="DSPy's response cache.")

    @field_validator("collaboration", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        return _guide_by_default(value)

    @model_validator(mode="after")
    def _unique_agents(self) -> DebateConfig:
        ids = [a.id for a in self.agents]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"agent ids must be unique; repeated: {', '.join(repeated)}")
        _check_pairs(self.collaboration, [a.model for a in self.agents], "agents")
        return self

    def fingerprint(self) -> str:
        """What makes two configs the same debate (the number of rounds and the cache aside): a short sha256."""
        data = self.model_dump(mode="json", exclude={"rounds", "cache"})
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------- loading
def load_discussion_config(source: Any) -> DiscussionConfig:
    """A validated discussion config: a YAML/JSON file, or a dict, holding ``discussion: {...}``."""
    return _validate(DiscussionConfig, read_config(source, "discussion"), "discussion", source)


def load_debate_config(source: Any) -> DebateConfig:
    """A validated debate config: a JSON/YAML file, or a dict, holding ``debate: {...}``."""
    return _validate(DebateConfig, read_config(source, "debate"), "debate", source)


def _validate(model: type[BaseModel], data: dict[str, Any], section: str, source: Any) -> Any:
    where = source if isinstance(source, str) else getattr(source, "name", f"{section} config")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConversationConfigError(f"{where}: {validation_problems(error, section + '.')}") from None
