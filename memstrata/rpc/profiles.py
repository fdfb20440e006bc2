"""Profile records to wire messages and back, exactly (``GetProfile``, ``ListEntities``).

The server and the client both go through these, so a profile read over gRPC
equals the local memory's (empty text on the wire is None in a record, as the
records themselves keep it).
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.profile_records import EntityProfile, EntitySummary, ProfileBullet, ProfileSource
from memstrata.rpc import memory_pb2 as pb

__all__ = ["entities_from_wire", "entity_profiles_from_wire", "entities_to_wire", "profiles_from_wire", "profiles_to_wire"]


def _bullet_to_wire(b: ProfileBullet) -> pb.ProfileBullet:
    return pb.ProfileBullet(
        slot=b.slot, value=b.value, since=b.since or "", until=b.until or "", op=b.op or "",
        sources=[pb.ProfileSource(session_id=s.session_id, turn=s.turn,
                                  message_ids=s.message_ids) for s in b.sources],
        history=[_bullet_to_wire(h) for h in b.history])


def _bullet_from_wire(b: pb.ProfileBullet) -> ProfileBullet:
    return ProfileBullet(
        slot=b.slot, value=b.value, since=b.since or None, until=b.until or None,
        op=b.op or None,
        sources=[ProfileSource(session_id=s.session_id, turn=s.turn,
                               message_ids=list(s.message_ids)) for s in b.sources],
        history=[_bullet_from_wire(h) for h in b.history])


def _summary_to_wire(e: EntitySummary) -> pb.EntitySummary:
    return pb.EntitySummary(entity_id=e.entity_id, kind=e.kind or "", name=e.name,
                            relations=e.relations, aliases=e.aliases, names=e.names)


def _summary_from_wire(e: pb.EntitySummary | pb.EntityProfile) -> EntitySummary:
    return EntitySummary(entity_id=e.entity_id, kind=e.kind or None, name=e.name,
                         relations=list(e.relations), aliases=list(e.aliases),
                         names=dict(e.names))


def _profile_to_wire(p: EntityProfile) -> pb.EntityProfile:
    return pb.EntityProfile(
        entity_id=p.entity_id, kind=p.kind or "", name=p.name, relations=p.relations,
        aliases=p.aliases, gender=p.gender or "", species=p.species or "",
        sections=[pb.ProfileSection(name=k, bullets=[_bullet_to_wire(b) for b in v])
                  for k, v in p.sections.items()],
        ops=p.ops, names=p.names)


def _profile_from_wire(p: pb.EntityProfile) -> EntityProfile:
    return EntityProfile(
        **_summary_from_wire(p).model_dump(exclude={"names"}), gender=p.gender or None,
        species=p.species or None,
        sections={s.name: [_bullet_from_wire(b) for b in s.bullets] for s in p.sections},
        ops=dict(p.ops), names=dict(p.names))


def profiles_to_wire(profiles: Sequence[EntityProfile]) -> pb.GetProfileReply:
    return pb.GetProfileReply(profiles=[_profile_to_wire(p) for p in profiles])


def profiles_from_wire(reply: pb.GetProfileReply) -> list[EntityProfile]:
    return [_profile_from_wire(p) for p in reply.profiles]


def entities_to_wire(entities: Sequence[EntitySummary],
                     profiles: Sequence[EntityProfile] = ()) -> pb.ListEntitiesReply:
    return pb.ListEntitiesReply(entities=[_summary_to_wire(e) for e in entities],
                                profiles=[_profile_to_wire(p) for p in profiles])


def entities_from_wire(reply: pb.ListEntitiesReply) -> list[EntitySummary]:
    return [_summary_from_wire(e) for e in reply.entities]


def entity_profiles_from_wire(reply: pb.ListEntitiesReply) -> list[EntityProfile]:
    return [_profile_from_wire(p) for p in reply.profiles]
