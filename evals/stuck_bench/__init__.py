"""The stuck-detection benchmark: which detector, at which threshold, routes best for each model pair.

Each model is evaluated alone once per split through the harness (``evaluate``); a primary runs as a
``StuckScoredSelector``, which adds every detector's score for its decision to the case's row. Escalation by
``delegate`` is then exactly computable offline from the two per-case tables: at threshold t a case keeps the
primary's answer when its score is below t and takes the secondary's otherwise, and costs the primary's call
(plus any detector overhead, e.g. consistency samples) plus the secondary's call when escalated. So thresholds
are swept without running the models again. The ``guide`` strategy changes what the primary answers and needs
live runs: ``live_threshold=`` runs ``ModelCollaborationProtocol`` over the test split at one threshold.

Reported per pair and detector: accuracy, escalation rate and cost at each threshold (the cost-quality curve);
AUROC of the score for the primary's errors; APGR (RouteLLM's average performance gap recovered: the area under
``(accuracy(x) - primary) / (secondary - primary)`` over escalation rate x in [0, 1]; 0.5 for a random router);
the escalation rate needed to recover 50% and 80% of the gap; and the recommended threshold, chosen on dev and
reported on test (``RECOMMENDATION_CRITERION``).

Modules: ``bench`` (``run_stuck_bench``: the models, the files, MLflow), ``settings`` (``BenchSettings``),
``scoring`` (``StuckScoredSelector``), ``routing`` (the maths, on plain tables), ``tables`` (from per-model
results to the benchmark's tables), ``plots`` and ``report``.
"""

from evals.stuck_bench.bench import GUIDE_NOTE, run_stuck_bench
from evals.stuck_bench.plots import plot
from evals.stuck_bench.report import format_report
from evals.stuck_bench.routing import (
    RECOMMENDATION_CRITERION,
    RoutingMetrics,
    apgr,
    auroc,
    escalation_to_recover,
    oracle_escalation,
    parse_thresholds,
    perfect_router_curve,
    recommend,
    routing_curve,
    sweep_thresholds,
    threshold_candidates,
)
from evals.stuck_bench.scoring import DetectorFailed, StuckScoredSelector
from evals.stuck_bench.settings import BenchSettings, BenchSettingsError
from evals.stuck_bench.tables import BenchResult, DetectorSplit

__all__ = [
    "GUIDE_NOTE",
    "RECOMMENDATION_CRITERION",
    "BenchResult",
    "BenchSettings",
    "BenchSettingsError",
    "DetectorFailed",
    "DetectorSplit",
    "RoutingMetrics",
    "StuckScoredSelector",
    "apgr",
    "auroc",
    "escalation_to_recover",
    "format_report",
    "oracle_escalation",
    "parse_thresholds",
    "perfect_router_curve",
    "plot",
    "recommend",
    "routing_curve",
    "run_stuck_bench",
    "sweep_thresholds",
    "threshold_candidates",
]
