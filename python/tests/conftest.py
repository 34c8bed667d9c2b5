"""Shared fixtures: a fresh store per test, built with the offline hashing embedder."""

import numpy as np
import pytest

import folio

DIM = 32


@pytest.fixture
def store(tmp_path):
    with folio.Store.open(tmp_path / "kb.folio", embedder=f"hash:{DIM}") as s:
        yield s


def unit_vectors(rng, n, dim=DIM):
    """`n` random unit vectors as a float32 (n, dim) array."""
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
