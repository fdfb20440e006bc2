"""What answering works with, below both the controller and the synthesis steps.

The controller (which reads memory) and :mod:`memstrata.synth` (which organizes
notes and answers) share these pieces, so neither imports the other's:

- :mod:`~memstrata.evidence.lexical`: the one word vocabulary (stop words,
  stemmer, numbers and durations) every rule matches with;
- :mod:`~memstrata.evidence.cues`: what a question asks for;
- :mod:`~memstrata.evidence.lines`: read views split into evidence lines;
- :mod:`~memstrata.evidence.relevance`: how well a line answers, and when there is enough;
- :mod:`~memstrata.evidence.extract`: short answer spans cut from a line;
- :mod:`~memstrata.evidence.inference`: yes/no-shaped questions that offer two alternatives;
- :mod:`~memstrata.evidence.trace` and :mod:`~memstrata.evidence.llm_calls`:
  the record of every step, and LLM calls booked on it.
"""
