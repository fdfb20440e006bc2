"""The progressive disclosure controller (APDMem §3.2): answer from coarse memory first.

``Controller(reader).answer(scope, question, asked_on)`` searches the L0 index,
reads key facts (L1), turn notes (L2) and raw turns (L3) only as far as the
question needs, organizes the evidence into notes and answers, with a trace
of every step and what it cost. It sees memory only through
:class:`~memstrata.roles.MemoryReader`.
"""

from memstrata.controller.config import ABLATIONS, ControllerSettings, load_controller_settings
from memstrata.contract import Answer, SourceRef
from memstrata.controller.run import Controller

__all__ = ["ABLATIONS", "Answer", "Controller", "ControllerSettings", "SourceRef",
           "load_controller_settings"]
