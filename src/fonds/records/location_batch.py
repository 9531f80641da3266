"""ArchivesSpace's location batches: `POST /locations/batch` makes one location per combination
of coordinate ranges from a template (Location.create_for_batch; `dry_run` only lists their
titles), `POST /locations/batch_update` sets the same fields on many locations. Each is one
transaction: all the locations are written, or none."""

from __future__ import annotations

import itertools

import orjson

from fonds.errors import BadRequest, Invalid, NotFound, nested_under
from fonds.records.service import Actor, RecordService, parse_body
from fonds.records.types.locations import location_title
from fonds.storage import records as store

RANGES = ("coordinate_1_range", "coordinate_2_range", "coordinate_3_range")
# AppConfig[:max_location_range]: values taken from one range.
MAX_RANGE = 1000
# More locations than any shelving plan needs; a typo in a range must not write millions of rows.
MAX_BATCH = 10_000


def _succ(value: str) -> str:
    """Ruby's String#succ for the strings a range uses: the rightmost letters and digits count
    up with carry (`a9` -> `b0`, `Az` -> `Ba`, `zz` -> `aaa`)."""
    chars = list(value)
    positions = [i for i, c in enumerate(chars) if c.isascii() and c.isalnum()]
    if not positions:
        return value[:-1] + chr(ord(value[-1]) + 1) if value else ""
    for i in reversed(positions):
        c = chars[i]
        if c not in "zZ9":
            chars[i] = chr(ord(c) + 1)
            return "".join(chars)
        chars[i] = {"z": "a", "Z": "A", "9": "0"}[c]
    first = positions[0]
    carry = {"a": "a", "A": "A", "0": "1"}[chars[first]]
    return "".join(chars[:first] + [carry] + chars[first:])


def indicators(start: str, end: str, limit: int = MAX_RANGE) -> list[str]:
    """The values of Ruby's `(start..end)` on strings (String#upto), at most `limit`."""
    if start.isascii() and end.isascii() and start.isdigit() and end.isdigit():
        # Digit strings count as integers, padded to the width of `start`.
        first, last = int(start), int(end)
        return [str(i).zfill(len(start)) for i in range(first, min(last, first + limit - 1) + 1)]
    if len(start) == 1 and len(end) == 1:
        return [chr(c) for c in range(ord(start), min(ord(end), ord(start) + limit - 1) + 1)]
    if start > end:
        return []
    found, current = [], start
    while len(found) < limit:
        found.append(current)
        if current == end:
            break
        current = _succ(current)
        if len(current) > len(end):
            break
    return found


def _range_values(batch: dict) -> list[tuple[str, list[str]]]:
    """(label, indicators) of each range given; the batch was validated against its schema."""
    found = []
    for name in RANGES:
        spec = batch.get(name)
        if spec is not None:
            prefix, suffix = spec.get("prefix", ""), spec.get("suffix", "")
            found.append((spec["label"], [f"{prefix}{value}{suffix}" for value in indicators(spec["start"], spec["end"])]))
    return found


def generate(batch: dict) -> list[dict]:
    """The location records a batch describes, coordinate 1 varying slowest."""
    ranges = _range_values(batch)
    total = 1
    for _, values in ranges:
        total *= len(values)
    if total > MAX_BATCH:
        raise BadRequest({RANGES[0]: [f"The ranges give {total} locations; at most {MAX_BATCH} are made at once"]})
    template = {k: v for k, v in batch.items() if k not in (*RANGES, "locations", "jsonmodel_type")}
    records = []
    for combination in itertools.product(*(values for _, values in ranges)):
        record = dict(template, jsonmodel_type="location")
        for n, ((label, _), value) in enumerate(zip(ranges, combination), start=1):
            record[f"coordinate_{n}_label"], record[f"coordinate_{n}_indicator"] = label, value
        records.append(record)
    return records


def _validated(service: RecordService, schema: str, body: bytes) -> dict:
    """The body checked against its schema (location_batch.json, location_batch_update.json):
    400 naming the field, unknown properties dropped."""
    doc, _ = service.validator.prepare(
        schema, parse_body(body), aspace_required=(), one_of_groups=(), strict=service.settings.strict_validation
    )
    return doc


def create_batch(service: RecordService, body: bytes, *, dry_run: bool, actor: Actor) -> list[str]:
    """The new locations' URIs, or with `dry_run` the titles they would have."""
    location = service.registry["location"]
    prepared = []
    for n, record in enumerate(generate(_validated(service, "location_batch", body))):
        try:
            prepared.append(service.prepare_doc(location, record, creating=True)[:2])
        except Invalid as error:
            raise nested_under(error, f"locations/{n}") from None
    if dry_run:
        return [location_title(doc) for doc, _ in prepared]
    with service.db.write() as conn:
        return [service.create_in(conn, location, doc, warnings, repo_id=None, actor=actor)["uri"] for doc, warnings in prepared]


def update_batch(service: RecordService, body: bytes, *, actor: Actor) -> list[dict]:
    """Set the body's location fields on each location of `record_uris` (Location.batch_update)."""
    location = service.registry["location"]
    batch = _validated(service, "location_batch_update", body)
    ids = [service.registry.parse_uri(uri).record_id for uri in batch["record_uris"]]
    fields = {k: v for k, v in batch.items() if k not in ("record_uris", "jsonmodel_type")}
    results = []
    with service.db.write() as conn:
        for n, record_id in enumerate(ids):
            row = store.fetch(conn, conn.info["fonds_tables"][location.name], record_id, for_update=True)
            if row is None:
                raise NotFound(location.not_found())
            try:
                doc, warnings, _ = service.prepare_doc(location, {**orjson.loads(row.json), **fields}, creating=False)
            except Invalid as error:
                raise nested_under(error, f"record_uris/{n}") from None
            results.append(service.update_in(conn, location, record_id, doc, warnings, row.lock_version, repo_id=None, actor=actor))
    return results
