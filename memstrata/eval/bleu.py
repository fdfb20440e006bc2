"""BLEU-1 of a short answer against the gold answer, reported beside token F1.

Memory papers report BLEU-1 next to F1 on LoCoMo. Here it is computed on the
same normalised words as token F1 (:func:`memstrata.eval.qa.normalize_answer`:
lower case, no punctuation, no "a/an/the/and"), with no dependency: the
clipped unigram precision of the prediction times the brevity penalty
``exp(1 - gold_len / pred_len)`` when the prediction is shorter than the
gold answer. No smoothing is needed with unigrams only. The per-category
conventions are those of :func:`memstrata.eval.qa.score`: an adversarial
question scores 1 for an abstention and 0 otherwise, and an open-domain gold
answer keeps only its part before ";".
"""

from __future__ import annotations

import math
from collections import Counter

from memstrata.eval.qa import normalize_answer
from memstrata.synth.answer import is_abstention


def bleu1(prediction: str, gold: str) -> float:
    """Clipped unigram precision times the brevity penalty (0..1)."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    clipped = sum((Counter(pred) & Counter(ref)).values())
    precision = clipped / len(pred)
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return precision * brevity


def score_bleu1(prediction: str, gold: str, category: str, adversarial: bool = False) -> float:
    """BLEU-1 the way :func:`memstrata.eval.qa.score` treats the category."""
    if adversarial or category == "adversarial":
        return float(is_abstention(prediction))
    if category == "open-domain":
        gold = gold.split(";")[0].strip()
    return bleu1(prediction, gold)
