"""``memstrata eval ...``: evaluation commands (retrieval here; QA in :mod:`eval_qa`)."""

from __future__ import annotations

import typer

eval_app = typer.Typer(
    name="eval",
    help="Measure retrieval and answers on LoCoMo or LongMemEval files.",
    no_args_is_help=True,
)
