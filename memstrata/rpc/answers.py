"""The controller's :class:`~memstrata.contract.Answer` on the wire and back."""

from __future__ import annotations

from memstrata.contract import Answer, RoleTokens, SourceRef, TraceSummary
from memstrata.model import Layer
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc.convert import date_from_wire, date_to_wire, step_from_wire, step_to_wire


def source_to_wire(source: SourceRef) -> pb.SourceRef:
    msg = pb.SourceRef(session_id=source.session_id,
                       session_date=date_to_wire(source.session_date), layer=int(source.layer),
                       text=source.text, message_ids=source.source_ids)
    if source.turn_index is not None:
        msg.turn_index = source.turn_index
    return msg


def source_from_wire(msg: pb.SourceRef) -> SourceRef:
    return SourceRef(session_id=msg.session_id, session_date=date_from_wire(msg.session_date),
                     layer=Layer(msg.layer),
                     turn_index=msg.turn_index if msg.HasField("turn_index") else None,
                     text=msg.text, source_ids=list(msg.message_ids))


def summary_to_wire(s: TraceSummary) -> pb.TraceSummary:
    msg = pb.TraceSummary(
        policy=s.policy, ablations=s.ablations,
        drill_depths={k: int(v) for k, v in s.drill_depths.items()},
        sessions_drilled=s.sessions_drilled, haystack_sessions=s.haystack_sessions,
        drilled_share=s.drilled_share, steps=s.steps, llm_calls=s.llm_calls,
        tool_calls=s.tool_calls, tool_errors=s.tool_errors, evidence_items=s.evidence_items,
        stop_reason=s.stop_reason or "",
        tokens=[pb.RoleTokens(role=role, calls=t.calls, tokens_in=t.tokens_in,
                              tokens_out=t.tokens_out, estimated=t.estimated)
                for role, t in s.tokens.items()],
        cost_usd=s.cost_usd, unpriced_models=s.unpriced_models, ms_total=s.ms_total,
        ms_llm=s.ms_llm, ms_memory=s.ms_memory, reflections=s.reflections, nudges=s.nudges,
        trace_id=s.trace_id or "")
    if s.deepest_layer is not None:
        msg.deepest_layer = int(s.deepest_layer)
    return msg


def summary_from_wire(msg: pb.TraceSummary) -> TraceSummary:
    return TraceSummary(
        policy=msg.policy, ablations=list(msg.ablations),
        deepest_layer=Layer(msg.deepest_layer) if msg.HasField("deepest_layer") else None,
        drill_depths={k: Layer(v) for k, v in msg.drill_depths.items()},
        sessions_drilled=msg.sessions_drilled, haystack_sessions=msg.haystack_sessions,
        drilled_share=msg.drilled_share, steps=msg.steps, llm_calls=msg.llm_calls,
        tool_calls=msg.tool_calls, tool_errors=msg.tool_errors,
        evidence_items=msg.evidence_items, reflections=msg.reflections, nudges=msg.nudges,
        stop_reason=msg.stop_reason or None,
        tokens={t.role: RoleTokens(calls=t.calls, tokens_in=t.tokens_in,
                                   tokens_out=t.tokens_out, estimated=t.estimated)
                for t in msg.tokens},
        cost_usd=msg.cost_usd, unpriced_models=list(msg.unpriced_models),
        ms_total=msg.ms_total, ms_llm=msg.ms_llm, ms_memory=msg.ms_memory,
        trace_id=msg.trace_id or None)


def answer_to_wire(a: Answer, *, budget_fallback: bool = False) -> pb.AnswerReply:
    return pb.AnswerReply(
        question=a.question, asked_on=date_to_wire(a.asked_on), answer=a.answer,
        abstained=a.abstained, mode=a.mode, sources=[source_to_wire(s) for s in a.sources],
        draft=a.draft or "", notes=a.notes or "", steps=[step_to_wire(s) for s in a.steps],
        summary=summary_to_wire(a.summary), budget_fallback=budget_fallback)


def answer_from_wire(msg: pb.AnswerReply) -> Answer:
    steps = [step_from_wire(s) for s in msg.steps]
    # An answer given offline because the LLM failed opens with an "llm-fallback" step.
    fallback = next((str(s.arguments.get("fallback")) for s in steps
                     if s.tool == "llm-fallback" and s.arguments.get("fallback")), None)
    return Answer(
        question=msg.question, asked_on=date_from_wire(msg.asked_on), answer=msg.answer,
        abstained=msg.abstained, mode=msg.mode, fallback=fallback,
        sources=[source_from_wire(s) for s in msg.sources], draft=msg.draft or None,
        notes=msg.notes or None, steps=steps,
        summary=summary_from_wire(msg.summary))
