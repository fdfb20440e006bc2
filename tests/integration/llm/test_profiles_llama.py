"""The LLM profile role against a REAL llama-server serving Gemma 3 270M.

Gemma 270M rarely writes the whole JSON a profile read asks for within a
small cap; the test checks robustness, never quality: the session is read by
the model, or by the rules and marked and counted, and either way every
profile bullet names turns of the session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.llm.openai_compat import ChatClient
from memstrata.llm.types import FAILURE_REASONS
from memstrata.llm.usage import UsageMeter
from memstrata.profiles.book import ProfileBook
from memstrata.profiles.llm_extract import LLMProfileExtractor
from memstrata.store.factory import open_doc_store
from tests.support.llama_server import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample_turns.jsonl"


def test_a_profile_read_by_gemma_is_kept_or_falls_back_marked_and_counted(
        llama: LlamaServer, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, llm_backend="openai", llm_base_url=llama.base_url,
                        llm_model_builder=llama.alias, llm_max_tokens_builder=96,
                        llm_timeout_s=15.0, llm_max_retries=0)
    meter = UsageMeter()
    book = ProfileBook(open_doc_store(settings),
                       LLMProfileExtractor(ChatClient(settings, meter)))
    session = next(iter(read_file(SAMPLE).sessions))
    try:
        for write in book.plan_sessions([(session.meta, session.turns)]):
            write.apply(book.docs)
        read = book.reads(session.scope)[session.session_id]
        booked = meter.snapshot().get("builder")
        if read.get("fallback") not in ("timeout", "connection", "unavailable"):
            assert booked is not None and booked.calls >= 1  # Gemma answered, and it was booked
        if read["via"] == "rules":
            assert read["fallback"] in FAILURE_REASONS
            assert meter.fallbacks() == {("builder", read["fallback"]): 1}
        else:
            assert read["via"] == "llm" and not meter.fallbacks()
        turns = {t.index for t in session.turns}
        for view in book.views(session.scope, everything=True):
            for bullet in (b for section in view["sections"].values() for b in section):
                assert bullet["sources"], bullet
                assert all(s["s"] == session.session_id and s["t"] in turns
                           for s in bullet["sources"]), bullet
        print(f"profile read: {read}; views: {len(book.views(session.scope))}")
    finally:
        book.docs.close()
