"""memstrata: long-term memory for LLM assistants, read coarse-first.

Conversations are stored as four layers (L0 summaries, L1 key facts, L2 turn
notes, L3 raw turns); questions are answered by reading the coarse layers first
and drilling down only when needed. Start with :class:`memstrata.memory.Memory`.
"""

__version__ = "0.1.0"
