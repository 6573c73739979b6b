"""Model collaboration: a small primary model decides; when a stuck detector fires, a larger secondary helps.

    policy = EscalationPolicy(detector="confidence", threshold=0.6, strategy="delegate")
    protocol = ModelCollaborationProtocol("local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b",
                                          escalation=policy)
    prediction = protocol(request="Weather in Oslo?", tools=registry)
    prediction.decision, prediction.collaboration.path      # "primary", "secondary" or "guided"

Modules: ``protocol`` (``ModelCollaborationProtocol`` and what it records), ``config`` (pairs in YAML:
``load_collaboration_config`` -> ``build_protocols``), ``models`` (model names, LMs and costs, shared with the
stuck-detection benchmark).
"""

from tool_selection.collaboration.config import (
    COLLABORATION_STRATEGIES,
    CollaborationConfig,
    CollaborationConfigError,
    CollaborationStrategy,
    EscalationPolicy,
    PairConfig,
    load_collaboration_config,
)
from tool_selection.collaboration.models import CostFn, LMOptions, catalog_cost, check_cost, model_name, resolve_lm
from tool_selection.collaboration.protocol import (
    CollaborationRecord,
    ModelCollaborationProtocol,
    RoleUsage,
    WriteGuidance,
    build_protocols,
    guided_request,
)

__all__ = [
    "COLLABORATION_STRATEGIES",
    "CollaborationConfig",
    "CollaborationConfigError",
    "CollaborationRecord",
    "CollaborationStrategy",
    "CostFn",
    "EscalationPolicy",
    "LMOptions",
    "ModelCollaborationProtocol",
    "PairConfig",
    "RoleUsage",
    "WriteGuidance",
    "build_protocols",
    "catalog_cost",
    "check_cost",
    "guided_request",
    "load_collaboration_config",
    "model_name",
    "resolve_lm",
]
