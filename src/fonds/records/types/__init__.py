"""The record layer's type declarations, one module per area, each with a `TYPES` tuple of
`RecordType`s whose hooks live beside them. A new area module is registered by adding it to
`AREAS`; `fonds.model` adds auth's users and groups and builds the complete registry."""

from fonds.records.types import agents, archival, authorities, containers, digital, events, locations, repositories

# Registry order is route and table order; the repository comes first (it is created first).
AREAS = (repositories, archival, authorities, locations, containers, digital, agents, events)
RECORD_TYPES = tuple(record_type for area in AREAS for record_type in area.TYPES)
