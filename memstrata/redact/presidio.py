"""Microsoft Presidio as a detector (the ``presidio`` extra), for what rules cannot see.

Presidio's analyzer finds names, places and many national ids with a spaCy
model. Its spaCy engine downloads a missing model when it loads, and nothing
here may download at run time, so :func:`presidio_problem` checks first that
the package and the named model are installed, and :class:`PresidioDetector`
refuses to start otherwise, saying which is missing and how to install it.
The analyzer is built on the first text, not at start-up: a process that
only reads never loads the model.

Presidio's entity types map to this package's kinds: ``EMAIL_ADDRESS`` ->
``email``, ``PHONE_NUMBER`` -> ``phone``, ``CREDIT_CARD`` -> ``card``,
``IBAN_CODE`` -> ``iban``, ``IP_ADDRESS`` -> ``ip``; any other type is its
own name in lower case (``PERSON`` -> ``person``).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstrata.redact.types import Finding

__all__ = ["PresidioDetector", "PresidioUnavailable", "presidio_problem"]

#: Presidio entity type -> kind, where a rule detector already names the kind.
_KIND_OF = {"EMAIL_ADDRESS": "email", "PHONE_NUMBER": "phone", "CREDIT_CARD": "card",
            "IBAN_CODE": "iban", "IP_ADDRESS": "ip"}
#: What Presidio looks for by default here: the rules cover the rest without a model.
DEFAULT_ENTITIES = ("PERSON", "LOCATION", "US_SSN", "US_PASSPORT", "US_DRIVER_LICENSE",
                    "UK_NHS", "MEDICAL_LICENSE", "CRYPTO")


class PresidioUnavailable(RuntimeError):
    """Presidio, or the spaCy model it needs, is not installed (the message says which)."""


def kind_of(entity_type: str) -> str:
    return _KIND_OF.get(entity_type, entity_type.lower())


def presidio_problem(model: str) -> str | None:
    """Why the Presidio detector cannot run here, or None when it can (nothing is loaded)."""
    if importlib.util.find_spec("presidio_analyzer") is None:
        return ("presidio-analyzer is not installed: pip install 'memstrata[presidio]', "
                "then install a spaCy model")
    if importlib.util.find_spec("spacy") is None:
        return "spaCy is not installed (presidio-analyzer needs it)"
    import spacy.util

    if not (spacy.util.is_package(model) or Path(model).exists()):
        return (f"the spaCy model {model!r} is not installed, and it is never downloaded at "
                f"run time: install its package first (MEMSTRATA_REDACT_PRESIDIO_MODEL names it)")
    return None


class PresidioDetector:
    """Presidio's analyzer behind the :class:`~memstrata.redact.types.Detector` interface.

    ``analyzer`` is any object with Presidio's ``analyze(text=, language=, entities=,
    score_threshold=)`` returning results with ``entity_type``, ``start``, ``end``;
    None builds Presidio's own (on the first text) from ``model``.
    """

    name = "presidio"

    def __init__(self, *, model: str = "en_core_web_lg", language: str = "en",
                 entities: Sequence[str] = DEFAULT_ENTITIES, min_score: float = 0.5,
                 analyzer: Any = None) -> None:
        if analyzer is None:
            problem = presidio_problem(model)
            if problem is not None:
                raise PresidioUnavailable(f"MEMSTRATA_REDACT_PRESIDIO: {problem}")
        self.model = model
        self.language = language
        self.entities = list(entities)
        self.min_score = min_score
        self._analyzer = analyzer
        self._lock = threading.Lock()

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(kind_of(e) for e in self.entities)

    def _engine(self) -> Any:
        with self._lock:
            if self._analyzer is None:
                from presidio_analyzer import AnalyzerEngine
                from presidio_analyzer.nlp_engine import NlpEngineProvider

                problem = presidio_problem(self.model)  # checked again: never download
                if problem is not None:
                    raise PresidioUnavailable(f"MEMSTRATA_REDACT_PRESIDIO: {problem}")
                nlp = NlpEngineProvider(nlp_configuration={
                    "nlp_engine_name": "spacy",
                    "models": [{"lang_code": self.language, "model_name": self.model}],
                }).create_engine()
                self._analyzer = AnalyzerEngine(nlp_engine=nlp,
                                                supported_languages=[self.language])
            return self._analyzer

    def find(self, text: str, kinds: frozenset[str]) -> list[Finding]:
        wanted = [e for e in self.entities if kind_of(e) in kinds]
        if not wanted or not text.strip():
            return []
        results = self._engine().analyze(text=text, language=self.language, entities=wanted,
                                         score_threshold=self.min_score)
        out = []
        for r in results:
            start, end = int(r.start), int(r.end)
            if 0 <= start < end <= len(text):
                kind = kind_of(str(r.entity_type))
                out.append(Finding(kind, start, end, text[start:end].casefold()))
        return out
