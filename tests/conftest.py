"""Fixtures shared by the whole suite.

The MiniLM encoder takes a second or two to load, so every test that needs a
real encoder shares one instance (it is thread-safe and stateless once loaded).
"""

from __future__ import annotations

import pytest

from memstrata.embed.minilm import MiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()
