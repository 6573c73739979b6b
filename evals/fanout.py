"""Fan an evaluation's cases out over Ray workers (``toolsel eval --ray [ADDRESS]``; the ``ray`` extra).

Each case is one Ray task. A worker builds the selector and its LM once (``SelectorJob.prepare``: the same code
as an evaluation in one process) and keeps them for the tasks it runs after; against a served model
(``served:URL``) a worker holds no model of its own, against a local one it loads its own copy with its share of
the cores. Finished rows come back to the driver as they finish and go into the run's one results file, so a
killed run resumes where it stopped; a task whose worker dies is retried by Ray (``max_retries``), and a case
whose row is written is never sent again.
"""

from __future__ import annotations

import os
import socket
from concurrent.futures import Future
from typing import Any

from evals.suite import Case
from tool_selection.errors import ToolSelectionError
from tool_selection.lm.engine import THREADS_ENV

__all__ = ["RayCases", "connect_ray"]

RAY_EXTRA = "pip install 'tool-selection[ray]'"
_PREPARED: dict[Any, tuple] = {}  # per worker process: the job's selector and LM, built once


def connect_ray(address: str | None, *, workers: int) -> None:
    """Start a local Ray instance with ``workers`` CPUs (``address`` None or "local"), or join the cluster at
    ``address``; an address that does not answer is a clear error before any work starts."""
    try:
        import ray
    except ModuleNotFoundError:
        raise ToolSelectionError(f"--ray needs Ray: {RAY_EXTRA}") from None
    if ray.is_initialized():
        return
    if address in (None, "", "local"):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=5):
            pass
    except (OSError, ValueError) as error:
        raise ToolSelectionError(f"No Ray cluster answers at {address!r} ({error}). Give the head node's "
                                 "HOST:PORT (ray start --head prints it), or leave --ray empty for a local one.") from None
    ray.init(address=address, log_to_driver=False, configure_logging=False)


def _evaluate_case(job, case: Case, tools, threads_per_worker: int | None) -> dict[str, Any]:
    """In a Ray worker: one case's results row."""
    from evals.runner import Evaluator
    from evals.suite import Suite

    if threads_per_worker is not None:
        os.environ.setdefault(THREADS_ENV, str(threads_per_worker))
    if job not in _PREPARED:
        _PREPARED.clear()
        _PREPARED[job] = job.prepare()[:2]
    selector, lm = _PREPARED[job]
    evaluator = Evaluator(suite=Suite("shard", [case]), progress=False, tools=tools)
    return evaluator._run_case(selector, case, lm)


class RayCases:
    """Submits cases as Ray tasks; ``submit(case)`` returns a ``concurrent.futures.Future`` of its row, which is
    what ``Evaluator`` collects, in place of its thread pool."""

    def __init__(self, job, *, tools=None, workers: int, max_retries: int = 2, local_model: bool = False):
        import ray

        cpus = int(ray.cluster_resources().get("CPU", workers))
        # a local model in every worker: share the cores out, or llama.cpp's spinning threads fight
        self.threads_per_worker = max(1, cpus // workers) if local_model else None
        self.job, self.tools = job, tools
        self.remote = ray.remote(num_cpus=max(1, cpus // workers), max_retries=max_retries)(_evaluate_case)
        self.job_ref = ray.put(job)
        self.tools_ref = ray.put(tools)

    def submit(self, case: Case) -> Future:
        return self.remote.remote(self.job_ref, case, self.tools_ref, self.threads_per_worker).future()
