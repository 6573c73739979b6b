"""Dense retrieval: cosine similarity between sentence embeddings of the request and of each tool's document.

Tool embeddings are cached three times: in memory with every other index; on disk as one ``.npy`` file per model
and registry content hash under the user cache directory, so a catalog is embedded once per machine; and per
document in one SQLite file per model, so a registry that shares tools with one embedded before (a larger draw of
the same catalog, a few tools changed) embeds only the documents it has not seen.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sqlite3
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from tool_selection.retrieval._base import IndexedRetriever
from tool_selection.retrieval._minilm import MiniLMEncoder

__all__ = ["DenseRetriever", "TextEncoder", "bundled_encoder", "default_cache_dir"]


class TextEncoder(Protocol):
    """Turns texts into unit-length vectors; ``model_id`` names the model in cache keys."""

    model_id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@functools.cache
def bundled_encoder() -> MiniLMEncoder:
    """The packaged all-MiniLM-L6-v2 encoder, loaded once per process."""
    return MiniLMEncoder.from_package()


def default_cache_dir() -> Path:
    """``retrieval`` in the user cache directory."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("tool-selection")) / "retrieval"


EMBEDDING_PROGRESS_FROM = 1000  # documents to embed at once from which a progress bar is shown


class DenseRetriever(IndexedRetriever):
    """Ranks tools by the cosine similarity of their document's embedding to the request's.

    ``encoder`` defaults to the packaged all-MiniLM-L6-v2 (``bundled_encoder()``); ``cache_dir`` to
    ``default_cache_dir()``; ``disk_cache=False`` neither reads nor writes embedding files.
    """

    name = "dense"

    def __init__(self, encoder: TextEncoder | None = None, *, cache_dir: str | os.PathLike | None = None,
                 disk_cache: bool = True):
        super().__init__()
        self.encoder = encoder if encoder is not None else bundled_encoder()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.disk_cache = disk_cache

    def cache_key(self) -> tuple:
        return (self.name, self.encoder.model_id)

    def embeddings_path(self, registry_hash: str) -> Path:
        """Where the tool embeddings of the registry with this content hash are cached."""
        model = re.sub(r"[^A-Za-z0-9._-]+", "_", self.encoder.model_id)
        return self.cache_dir / "embeddings" / model / f"{registry_hash}.npy"

    def _build(self, names: list[str], documents: list[str], registry_hash: str) -> np.ndarray:
        if not self.disk_cache:
            return self._embedded(documents)
        path = self.embeddings_path(registry_hash)
        cached = _load_embeddings(path, rows=len(documents))
        if cached is not None:
            return cached
        vectors = self._embedded(documents)
        _save_embeddings(path, vectors)
        return vectors

    def _embedded(self, documents: list[str]) -> np.ndarray:
        """The embeddings of ``documents``, one row each: through the per-document store with the disk cache on,
        else encoded."""
        if not self.disk_cache:
            return np.ascontiguousarray(self.encoder.encode(documents), dtype=np.float32)
        return self._embed_unseen(documents, self.embeddings_path("").with_name("documents.sqlite"))

    def _embed_unseen(self, documents: list[str], store: Path) -> np.ndarray:
        """Every document's embedding: from the per-document store where it holds one, else encoded and stored."""
        keys = [hashlib.sha256(document.encode()).hexdigest() for document in documents]
        known = _stored_vectors(store, keys)
        missing = [i for i, key in enumerate(keys) if key not in known]
        rows = dict(zip((keys[i] for i in missing), self._encode_with_progress([documents[i] for i in missing]),
                        strict=True))
        _store_vectors(store, rows)
        return np.ascontiguousarray(np.stack([known.get(key, rows.get(key)) for key in keys]), dtype=np.float32)

    def _encode_with_progress(self, documents: list[str]) -> list[np.ndarray]:
        """Embeddings of ``documents``; a thousand or more show a progress bar (minutes on a CPU)."""
        from tqdm.auto import tqdm

        chunk = 256
        with tqdm(total=len(documents), desc="embedding tools", unit="tool",
                  disable=len(documents) < EMBEDDING_PROGRESS_FROM) as progress:
            vectors: list[np.ndarray] = []
            for start in range(0, len(documents), chunk):
                batch = documents[start:start + chunk]
                vectors += list(np.asarray(self.encoder.encode(batch), dtype=np.float32))
                progress.update(len(batch))
        return vectors

    def _query_vector(self, request: str) -> np.ndarray:
        """The request's embedding, as the one row of a float32 matrix."""
        return np.asarray(self.encoder.encode([request]), dtype=np.float32)

    def _scores(self, request: str) -> np.ndarray:
        return self._index @ self._query_vector(request)[0]


def _load_embeddings(path: Path, rows: int) -> np.ndarray | None:
    """The cached matrix, or None when there is none or it is unreadable or of the wrong shape."""
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if vectors.ndim != 2 or vectors.shape[0] != rows or vectors.dtype != np.float32:
        return None
    return vectors


def _stored_vectors(store: Path, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored embeddings of the documents with these hashes (an unreadable store holds none)."""
    if not store.exists():
        return {}
    found: dict[str, np.ndarray] = {}
    try:
        with sqlite3.connect(store) as connection:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                query = f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})"
                rows = connection.execute(query, chunk)
                found.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
    except sqlite3.Error:
        return {}
    return found


def _store_vectors(store: Path, rows: dict[str, np.ndarray]) -> None:
    if not rows:
        return
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(store) as connection:
            connection.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            connection.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)",
                                   [(key, vector.tobytes()) for key, vector in rows.items()])
    except (sqlite3.Error, OSError) as error:
        warnings.warn(f"Could not keep document embeddings in {store}: {error}", RuntimeWarning, stacklevel=4)


def _save_embeddings(path: Path, vectors: np.ndarray) -> None:
    """Write atomically (a temporary file, then a rename), so that a reader never sees half a file."""
    temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as handle:
            np.save(handle, vectors, allow_pickle=False)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        warnings.warn(f"Could not cache tool embeddings at {path}: {error}", RuntimeWarning, stacklevel=3)
