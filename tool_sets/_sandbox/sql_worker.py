"""Sandboxed SELECTs run in worker processes, so that the time limit holds for any statement.

``SqlSandbox`` stops a query from a progress handler, which SQLite calls between virtual-machine steps; one step
that calls a function (``GLOB`` or ``instr`` on 100 KB values) runs for as long as that function takes, seconds
or minutes. So each query runs in a worker process, and a worker that has not answered at ``timeout_s`` plus
``GRACE`` of it is killed: the caller gets ``timeout`` on time whatever the statement does. The worker also sets
an alarm when it gets a query, which ends it (``SIGALRM``) at ``timeout_s`` plus ``ALARM_GRACE`` of it, even
when the caller is too starved to kill it in time. The progress handler still answers ordinary timeouts first,
which keeps the worker alive.

Workers are started once and reused (a pool, one query per worker at a time), so a query costs a round trip on
a socket rather than an interpreter start. At most ``SLOTS`` queries of a process run at once; the others queue
for at most ``QUEUE_WAIT`` times their time limit, then are refused as ``busy``, and start a spare worker that
boots while they wait. A query's time limit counts from when its worker gets it, never from when it was queued,
and the wait is reported apart (``QueryResult.queued_s``).
A worker imports only the standard library and ``sql.py``; it gets a minimal environment, and it ends when its
socket closes (this process exiting) or when it is killed.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tool_sets._sandbox.sql import (
    MAX_RESULT_BYTES,
    MAX_VALUE_BYTES,
    QueryRefused,
    QueryResult,
    SqlSandbox,
    connect,
    open_read_only,
)

__all__ = ["ALARM_GRACE", "GRACE", "QUEUE_WAIT", "SLOTS", "SqlSource", "open_image", "run_query", "serve",
           "wait_details"]


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


GRACE = 0.03  # a silent worker is killed at timeout_s * (1 + GRACE) after its query was sent
ALARM_GRACE = 0.05  # a worker ends itself at timeout_s * (1 + ALARM_GRACE) after it got its query
SLOTS = min(16, max(4, _usable_cpus()))  # queries of one process running at once; more wait for a slot
QUEUE_WAIT = 2.0  # a query waits for a slot at most QUEUE_WAIT * timeout_s, then is refused as busy
_START_TIMEOUT_S = 60.0  # a worker that is not ready by then is broken, not slow
_LONGEST_ALARM_S = 1e7  # setitimer() refuses larger (and infinite) times
_MOST_IMAGES_PER_WORKER = 4
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding this copy of tool_sets
_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); from tool_sets._sandbox.sql_worker import serve; "
         "serve(int(sys.argv[2]))")


@dataclass(frozen=True)
class SqlSource:
    """A database the workers query: a SQLite file, opened read-only for each query, or an in-memory image
    (``sqlite3.Connection.serialize()``), sent to a worker once and kept there."""

    path: str | None = None
    image: bytes | None = field(default=None, repr=False)
    image_key: str | None = None

    @classmethod
    def file(cls, path: str | Path) -> SqlSource:
        return cls(path=str(Path(path).resolve()))

    @classmethod
    def image_of(cls, db: sqlite3.Connection) -> SqlSource:
        image = db.serialize()
        return cls(image=image, image_key=hashlib.sha256(image).hexdigest())


def open_image(image: bytes, *, max_value_bytes: int = MAX_VALUE_BYTES) -> SqlSandbox:
    """A locked-down in-memory database holding ``image``: what a worker queries for an image source."""
    db = connect()
    db.deserialize(image)
    return db.lock_down(max_value_bytes=max_value_bytes)


def run_query(source: SqlSource, sql: str, *, timeout_s: float, max_rows: int,
              max_result_bytes: int = MAX_RESULT_BYTES, max_value_bytes: int = MAX_VALUE_BYTES,
              max_wait_s: float | None = None) -> QueryResult:
    """``SqlSandbox.select`` of ``sql`` on ``source`` in a worker; raises ``QueryRefused``. The query waits for a
    free slot at most ``max_wait_s`` (default ``QUEUE_WAIT * timeout_s``; then ``busy``), then for a worker to be
    ready; its ``timeout_s`` (plus ``GRACE``) counts from when the worker gets it. The result, and a refusal, say
    how long it waited and ran (``queued_s``, ``run_s``, ``queued``)."""
    request = {"path": source.path, "image_key": source.image_key, "sql": sql, "timeout_s": timeout_s,
               "max_rows": max_rows, "max_result_bytes": max_result_bytes, "max_value_bytes": max_value_bytes}
    called = time.monotonic()
    with _POOL.slot(QUEUE_WAIT * timeout_s if max_wait_s is None else max_wait_s, called) as queued:
        worker = _POOL.take()
        sent = time.monotonic()
        answer, ended = _ask(worker, request, source.image, timeout_s)
    timing = {"queued": queued, "queued_s": sent - called, "run_s": ended - sent}
    if "refused" in answer:
        raise QueryRefused(answer["refused"], answer["message"], answer["suggestions"], **timing)
    return QueryResult(answer["columns"], answer["rows"], answer["truncated"], **timing)


def wait_details(outcome: QueryResult | QueryRefused) -> dict[str, float]:
    """What a tool's result says of a query's times: ``queued_s`` when it was asked while other queries were
    running, ``run_s`` when it timed out. Nothing else, so that a query run alone answers the same every time."""
    details = {}
    if outcome.queued:
        details["queued_s"] = round(outcome.queued_s, 3)
    if isinstance(outcome, QueryRefused) and outcome.code == "timeout":
        details["run_s"] = round(outcome.run_s, 3)
    return details


def _ask(worker: _Worker, request: dict[str, Any], image: bytes | None,
         timeout_s: float) -> tuple[dict[str, Any], float]:
    """``worker``'s answer (a refusal as ``{"refused": code, ...}``) and when the query stopped running. The worker
    goes back to the pool; one that gave no answer in time is killed and replaced."""
    try:
        answer = worker.ask(request, image, wait_s=timeout_s * (1 + GRACE))
    except (OSError, EOFError, ValueError):  # it died: at its own alarm, killed from outside, or out of memory
        ended = time.monotonic()
        try:
            status = worker.process.wait(timeout=1)
        except subprocess.TimeoutExpired:  # alive, yet its answer was garbled
            status = None
        _POOL.replace(worker)
        if status == -signal.SIGALRM:
            return _timeout(timeout_s), ended
        return _refused("sql_error", f"The database worker ended while running the query (exit status {status}); "
                                     "run it again, or a simpler query."), ended
    if answer is None:
        worker.process.kill()  # the query stops here; reaping the worker may take longer on a busy machine
        ended = time.monotonic()
        _POOL.replace(worker)
        return _timeout(timeout_s), ended
    ended = time.monotonic()
    _POOL.give_back(worker)
    return answer, ended


def _timeout(timeout_s: float) -> dict[str, Any]:
    return _refused("timeout", f"The query ran longer than {timeout_s:g} s and was stopped.")


def _refused(code: str, message: str) -> dict[str, Any]:
    return {"refused": code, "message": message, "suggestions": []}


class _Worker:
    """One worker process and the socket to it."""

    def __init__(self) -> None:
        if not sys.executable:
            raise RuntimeError("SQL queries run in a worker started with sys.executable, which is unknown in this "
                               "embedded interpreter; run the toolkit with a regular Python")
        ours, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, str(_PACKAGE_ROOT), str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        self.channel = Connection(ours.detach())
        self._ready = False

    def is_ready(self) -> bool:
        """Whether it has booted (it says so once, first thing), without waiting."""
        if not self._ready and self.channel.poll(0):
            try:
                self.channel.recv_bytes()
            except (EOFError, OSError):
                raise RuntimeError(f"an SQL worker ended as it started (exit status {self.process.wait()}); its "
                                   f"error is on stderr ({sys.executable}, {_PACKAGE_ROOT})") from None
            self._ready = True
        return self._ready

    def wait_until_ready(self) -> None:
        if not self._ready and not self.channel.poll(_START_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"an SQL worker did not start within {_START_TIMEOUT_S:g} s ({sys.executable}); "
                               "run the interpreter by hand to see why")
        self.is_ready()

    def ask(self, request: dict[str, Any], image: bytes | None, wait_s: float) -> dict[str, Any] | None:
        """The worker's answer, or None when it gave none within ``wait_s``."""
        deadline = time.monotonic() + wait_s
        self.channel.send_bytes(json.dumps(request).encode())
        answer = self._answer(deadline)
        if answer is not None and answer.get("need_image"):
            self.channel.send_bytes(image or b"")
            answer = self._answer(deadline)
        return answer

    def _answer(self, deadline: float) -> dict[str, Any] | None:
        if not self.channel.poll(max(0.0, deadline - time.monotonic())):
            return None
        return json.loads(self.channel.recv_bytes())

    def kill(self) -> None:
        self.channel.close()
        self.process.kill()
        self.process.wait()

    def close(self) -> None:
        """End an idle worker: it exits when its socket closes."""
        self.channel.close()
        try:
            self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Pool:
    """The workers of this process: at most ``slots`` queries run at once, each in a worker of its own, and the
    idle workers wait for the next queries. A forked child starts its own."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._turns = threading.Condition(threading.Lock())
        self._asked, self._running = 0, 0  # queries asking for a slot or holding one; holding one
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._inherited: list[_Worker] = []  # a parent's, kept referenced and untouched after a fork

    @contextmanager
    def slot(self, wait_s: float, called: float) -> Iterator[bool]:
        """Hold a slot for the ``with`` block; yields whether other queries were running when it was asked for
        (at ``called``). Raises ``QueryRefused`` (``busy``) when no slot is free within ``wait_s``."""
        with self._turns:
            crowded = self._asked > 0
            self._asked += 1
            waiting = self._asked - self._running if self._running >= self.slots else 0
        if waiting:
            self._start_spare(waiting)
        with self._turns:
            if not self._turns.wait_for(lambda: self._running < self.slots, min(wait_s, threading.TIMEOUT_MAX)):
                self._asked -= 1
                raise QueryRefused("busy", f"busy: {self.slots} queries are already running; try again in a "
                                           "moment.", queued=True, queued_s=time.monotonic() - called)
            self._running += 1
        try:
            yield crowded
        finally:
            with self._turns:
                self._asked, self._running = self._asked - 1, self._running - 1
                self._turns.notify()

    def take(self) -> _Worker:
        """An idle worker, a booted one first; the wait for one to boot is part of a query's wait, not its time."""
        with self._lock:
            booted = [worker for worker in self._idle if worker.is_ready()]
            worker = (booted or self._idle or [None])[-1]
            if worker is not None:
                self._idle.remove(worker)
        worker = worker or _Worker()
        worker.wait_until_ready()
        return worker

    def _start_spare(self, waiting: int) -> None:
        """Start a worker for a query that must wait for a slot, so that it boots during the wait, unless the idle
        workers are enough for the ``waiting`` queries."""
        with self._lock:
            if len(self._idle) >= min(waiting, self.slots):
                return
        self.give_back(_Worker())

    def give_back(self, worker: _Worker) -> None:
        with self._lock:
            if len(self._idle) < self.slots:
                self._idle.append(worker)
                return
        worker.kill()  # idle, so nothing is lost; closing would wait for a booting one to notice

    def replace(self, worker: _Worker) -> None:
        """Kill ``worker`` and, unless enough workers are idle, start another now, so that the next query need
        not wait for it to boot."""
        worker.kill()
        with self._lock:
            if len(self._idle) >= self.slots:
                return
        self.give_back(_Worker())

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()

    def forget_after_fork(self) -> None:
        self._turns = threading.Condition(threading.Lock())  # slots held by the parent's threads are not ours
        self._asked, self._running = 0, 0
        self._lock = threading.Lock()
        self._inherited += self._idle
        self._idle = []


_POOL = _Pool(SLOTS)
atexit.register(_POOL.close_all)
os.register_at_fork(after_in_child=_POOL.forget_after_fork)


# ------------------------------------------------------------------------------------------ the worker
def serve(channel_fd: int) -> None:
    """The worker's loop: answer requests on ``channel_fd`` until it closes."""
    channel = Connection(channel_fd)
    images: OrderedDict[tuple[str, int], SqlSandbox] = OrderedDict()  # (image key, max_value_bytes) -> database
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the alarm ends this process, whatever its parent ignored
    try:
        channel.send_bytes(b'{"ready": true}')
        while True:
            request = json.loads(channel.recv_bytes())
            signal.setitimer(signal.ITIMER_REAL, min(request["timeout_s"] * (1 + ALARM_GRACE), _LONGEST_ALARM_S))
            answer = _answer(request, channel, images)
            signal.setitimer(signal.ITIMER_REAL, 0)
            channel.send_bytes(json.dumps(answer).encode())
    except (EOFError, ConnectionError):  # the other end closed (or reset, when "ready" was never read): done
        return


def _answer(request: dict[str, Any], channel: Connection,
            images: OrderedDict[tuple[str, int], SqlSandbox]) -> dict[str, Any]:
    limits = {name: request[name] for name in ("timeout_s", "max_rows", "max_result_bytes")}
    try:
        if request["path"] is not None:
            db = open_read_only(request["path"], max_value_bytes=request["max_value_bytes"])
            try:
                result = db.select(request["sql"], **limits)
            finally:
                db.close()
        else:
            result = _image(request, channel, images).select(request["sql"], **limits)
    except QueryRefused as refusal:
        return {"refused": refusal.code, "message": refusal.message, "suggestions": refusal.suggestions}
    except sqlite3.Error as error:  # the file itself: missing, locked or not a database
        return {"refused": "sql_error", "message": f"The database could not be read: {error}.", "suggestions": []}
    return {"columns": result.columns, "rows": result.rows, "truncated": result.truncated}


def _image(request: dict[str, Any], channel: Connection,
           images: OrderedDict[tuple[str, int], SqlSandbox]) -> SqlSandbox:
    """The locked-down in-memory database of the request's image, asking for the image when it is not here."""
    key = (request["image_key"], request["max_value_bytes"])
    if key not in images:
        channel.send_bytes(b'{"need_image": true}')
        images[key] = open_image(channel.recv_bytes(), max_value_bytes=request["max_value_bytes"])
        if len(images) > _MOST_IMAGES_PER_WORKER:
            images.popitem(last=False)[1].close()
    images.move_to_end(key)
    return images[key]
