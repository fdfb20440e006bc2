"""PII redaction before storage: detectors, the per-tenant policy and the redaction step.

The write path of :class:`~memstrata.memory.Memory` (batch ingest, append, the
stream worker) and the query service's Ingest both pass each message through one
:class:`Redactor`; docs/lifecycle-redaction.md says what is guaranteed where.
Modules: :mod:`.types` (the detector interface), :mod:`.rules` (patterns and
checksums, no model), :mod:`.presidio` (the optional Presidio adapter),
:mod:`.policy` (off / mask / drop per tenant), :mod:`.settings`
(``MEMSTRATA_REDACT_*``), :mod:`.redactor`, :mod:`.factory` and :mod:`.metrics`
(Prometheus, for the services).
"""

from memstrata.redact.policy import Mode, Policy, PolicyFileError, PolicySource, Rule
from memstrata.redact.redactor import RedactionCounts, Redactor
from memstrata.redact.rules import RuleDetector, iban_ok, luhn_ok
from memstrata.redact.types import RULE_KINDS, Detector, Finding

__all__ = ["RULE_KINDS", "Detector", "Finding", "Mode", "Policy", "PolicyFileError",
           "PolicySource", "RedactionCounts", "Redactor", "Rule", "RuleDetector", "iban_ok",
           "luhn_ok"]
