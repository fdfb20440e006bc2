"""What :meth:`Controller.answer` returns: the answer, where it came from, how it was found.

The models live in :mod:`memstrata.contract` (a client reads them without
loading the controller); this module keeps their old names.
"""

from __future__ import annotations

from memstrata.contract import Answer, SourceRef
from memstrata.evidence.extract import ABSTAIN_TEXT

__all__ = ["ABSTAIN_TEXT", "Answer", "SourceRef"]
