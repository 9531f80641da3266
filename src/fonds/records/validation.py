"""Turning a client's JSON into a clean record: normalise (ArchivesSpace's input rules), then
validate against the type's JSON Schema, reporting errors keyed by slash paths such as
`dates/0/begin` with ArchivesSpace's wording."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

from fonds.errors import FieldErrors, Invalid
from fonds.records.defaults import object_fills
from fonds.records.schemas import ENVELOPE_PROPERTIES, SchemaSet
from fonds.records.value_lists import ListCache

MISSING = "Property is required but was missing"
# Deeper than any record's subrecords nest (notes within notes reach about ten); the walks
# below recurse once per level, so a limit keeps them far from Python's recursion limit.
MAX_DEPTH = 64
NUL = "\x00"
NUL_ESCAPE = b"\\u0000"
# Where the compiled validators place the schemas (their `$id`s are bare names): never fetched.
SCHEMA_BASE = "https://fonds.invalid/schemas/"
ENUM_WARNING = "x-enum-warning"
_DROP = object()
_UNKNOWN = object()
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_JSON_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object", type(None): "null"}


def _path(base: str, key) -> str:
    return f"{base}/{key}" if base else str(key)


def _lacks(doc: dict, field: str) -> bool:
    """Whether `doc` has no value for `field`: absent, empty (None, "" or {}), or an empty list."""
    value = doc.get(field)
    return value is None or value == "" or value == {} or value == []


def check_structure(doc, json: bytes | None = None) -> None:
    """Refuse, before any recursive walk, a document nested deeper than `MAX_DEPTH` or holding a
    NUL character (PostgreSQL cannot store one; refused alike on every database). Level by level,
    with no path built: a third of the time of the walk that words the error, which runs only for
    a document refused. `json`: what it was read from, where a NUL can only be written
    `\\u0000`: without one there, no string is looked at."""
    if json is not None and not may_hold_nul(json):
        sound = _within(doc, 0)
    else:
        strings: list[str] = []
        sound = _within(doc, 0, strings) and NUL not in "".join(strings)
    if not sound:
        _refuse_structure(doc)


def may_hold_nul(json: bytes) -> bool:
    """Whether records read from `json` may hold a NUL character: JSON can only write one
    `\\u0000` (a control character is escaped in a string). Without one, their depth is all
    `check_structure` would look at, and normalising them checks it (`Normaliser`)."""
    return NUL_ESCAPE in json


def _within(value, depth: int, strings: list[str] | None = None) -> bool:
    """Whether nothing in `value`, found at `depth`, lies deeper than `MAX_DEPTH`. `strings`:
    given every key and string met (until something lies too deep)."""
    level = [value]
    for _ in range(MAX_DEPTH - depth + 1):
        deeper = []
        for node in level:
            kind = node.__class__
            if kind is dict:
                if strings is not None:
                    strings.extend(node)
                deeper.extend(node.values())
            elif kind is list:
                deeper.extend(node)
            elif kind is str and strings is not None:
                strings.append(node)
        if not deeper:
            return True
        level = deeper
    return False


def _depth(path: str) -> int:
    """How deep the value at a normalised record's `path` lies (the record itself: 0)."""
    return path.count("/") + 1 if path else 0


# The shortest path of a value at MAX_DEPTH (each level a name or index and a slash): the
# normaliser counts a path's levels only from this length.
_DEEP_PATH = 2 * MAX_DEPTH - 1


class _TooDeep(Exception):
    """Something in the record lies deeper than `MAX_DEPTH`: `_refuse_structure` words where."""


def _refuse_structure(doc) -> None:
    stack = [(doc, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Invalid({path: [f"Nested more than {MAX_DEPTH} levels deep"]})
        if isinstance(node, str):
            if NUL in node:
                raise Invalid({path: ["Must not contain a NUL character"]})
        elif isinstance(node, dict):
            for key, value in node.items():
                if NUL in key:
                    raise Invalid({_path(path, key.replace(NUL, "\\u0000")): ["Must not contain a NUL character"]})
                stack.append((value, _path(path, key), depth + 1))
        elif isinstance(node, list):
            stack.extend((value, _path(path, index), depth + 1) for index, value in enumerate(node))


@dataclass
class Normaliser:
    """Drops empty values, read-only and unknown properties (unknown ones are reported as
    warnings), and fills in `jsonmodel_type` of nested single-type objects. `replace_refs`: the
    URI each ref to one of its keys is given instead (a batch import's temporary URIs). `refs`:
    a list given the record's refs as `find_refs` finds them in the normalised record (in the
    order of the record's keys rather than the schema's), found in the same walk. `fills`: a
    list given each subrecord with the schema defaults it may lack (`defaults.object_fills`),
    which `Defaults.fill` would find walking the record again once it is validated.

    A record nested deeper than `MAX_DEPTH` is refused as `check_structure` refuses it: the depth
    of what it walks is read off its paths, and what it keeps as given or drops is measured, so
    a batch import's records need no walk of their own before it (7 % of their validation's
    instructions)."""

    schemas: SchemaSet
    # `_Plan` of each object schema met, and `_shape` of each definition, by its id.
    plans: dict[int, _Plan] = dataclass_field(default_factory=dict, init=False, repr=False)
    shapes: dict[int, tuple] = dataclass_field(default_factory=dict, init=False, repr=False)

    def record(
        self,
        schema: dict,
        doc: dict,
        replace_refs: dict[str, str] | None = None,
        refs: list[tuple[str, str]] | None = None,
        fills: list[tuple[list, dict]] | None = None,
    ) -> tuple[dict, FieldErrors]:
        warnings: FieldErrors = {}
        try:
            cleaned = self._object(schema, doc, "", warnings, replace_refs, refs, fills)
        except _TooDeep:
            _refuse_structure(doc)
            raise Invalid({"": [f"Nested more than {MAX_DEPTH} levels deep"]}) from None
        if fills and fills[-1][1] is cleaned:
            fills.pop()  # the record's own are the caller's (`Defaults.fill_own`)
        return ({} if cleaned is _DROP else cleaned), warnings

    def _object(
        self, schema: dict, doc: dict, path: str, warnings: FieldErrors, replace_refs: dict | None, refs: list | None, fills: list | None
    ):
        if len(path) >= _DEEP_PATH:
            _refuse_past_limit(doc, path)
        plan = self._plan(schema)
        kept = plan.kept
        # A ref object is one ref: what it holds is not looked into (`find_refs`).
        inner_refs = None if plan.is_ref else refs
        string_refs = plan.string_refs if inner_refs is not None else ()
        out = {}
        for key, raw in doc.items():
            kind = raw.__class__
            # Most values are non-empty strings: kept, or dropped, with no further look.
            if kind is str and raw:
                definition = kept.get(key, _UNKNOWN)
                if definition is _UNKNOWN:
                    warnings[_path(path, key)] = ["Unknown property, ignored"]
                elif definition is not None:
                    out[key] = raw
                    if key in string_refs:
                        inner_refs.append((_path(path, key), raw))
                continue
            if raw is None or raw == "" or (kind is dict and not raw):  # empty (None, "" or {}): most values pass here
                continue
            definition = kept.get(key, _UNKNOWN)
            if definition is None or definition is _UNKNOWN:
                # Dropped, but refused as deep as any other value (as `check_structure` would),
                # one level below `path` (its key may hold a "/", which `_depth` would count).
                if kind is dict or kind is list:
                    _refuse_deeper(raw, _depth(path) + 1)
                # An empty list holds nothing to lose (an export's `classifications: []`).
                if definition is _UNKNOWN and raw != []:
                    warnings[_path(path, key)] = ["Unknown property, ignored"]
                continue
            if kind is not dict and kind is not list:
                out[key] = raw  # a scalar is kept as given (no path to build, no schema to follow)
                continue
            value = self._value(
                definition,
                raw,
                f"{path}/{key}" if path else key,
                warnings,
                replace_refs,
                inner_refs if key in plan.may_hold_refs else None,
                fills,
            )
            if value is not _DROP:
                out[key] = value
        if not out:
            return _DROP
        if plan.const and "jsonmodel_type" not in out:
            out["jsonmodel_type"] = plan.const
        if plan.is_ref:
            ref = out.get("ref")
            if ref.__class__ is str:
                if replace_refs and ref in replace_refs:
                    ref = out["ref"] = replace_refs[ref]
                if refs is not None:
                    refs.append((path, ref))
        if plan.fills and fills is not None:
            fills.append((plan.fills, out))
        return out

    def _plan(self, schema: dict) -> _Plan:
        found = self.plans.get(id(schema))
        if found is None:
            found = self.plans[id(schema)] = _Plan.of(self.schemas, schema)
        return found

    def _value(
        self, definition: dict, raw, path: str, warnings: FieldErrors, replace_refs: dict | None, refs: list | None, fills: list | None
    ):
        shape = self.shapes.get(id(definition))
        if shape is None:
            shape = self.shapes[id(definition)] = _shape(self.schemas, definition)
        branches, resolved, items, string_ref = shape
        if branches is not None:
            if not isinstance(raw, dict):
                return _measured(raw, path)
            kind = raw.get("jsonmodel_type")
            branch = branches.get(kind) if kind is None or kind.__class__ is str else None
            if branch is not None:
                return self._object(branch, raw, path, warnings, replace_refs, refs, fills)
            return _measured(raw, path)
        if resolved is not None and isinstance(raw, dict):
            return self._object(resolved, raw, path, warnings, replace_refs, refs, fills)
        if items is not None and isinstance(raw, list):
            if len(path) >= _DEEP_PATH:
                _refuse_past_limit(raw, path)
            kept = []
            for item in raw:
                if item is None or item == "" or item == {}:  # empty
                    continue
                value = self._value(items, item, f"{path}/{len(kept)}", warnings, replace_refs, refs, fills)
                if value is not _DROP:
                    kept.append(value)
            return kept
        if string_ref and refs is not None and raw.__class__ is str:
            refs.append((path, raw))
        return _measured(raw, path)


def _refuse_past_limit(container, path: str) -> None:
    """`container` (an object or array the normaliser walks, at a `path` of at least `_DEEP_PATH`
    characters): what it holds lies one level below it, so it may hold nothing at MAX_DEPTH."""
    if container and _depth(path) >= MAX_DEPTH:
        raise _TooDeep()


def _measured(raw, path: str):
    """A value its schema does not describe, kept for the validator to judge (and refuse, most
    often): not walked, so its depth is checked here."""
    if raw.__class__ is dict or raw.__class__ is list:
        _refuse_deeper(raw, _depth(path))
    return raw


def _refuse_deeper(container, depth: int) -> None:
    """`container`, found at `depth` and not walked by the normaliser, may hold nothing past MAX_DEPTH."""
    if not _within(container, depth):
        raise _TooDeep()


def _shape(schemas: SchemaSet, definition: dict) -> tuple:
    """How `Normaliser._value` treats a value of `definition`, worked out once per definition:
    (a polymorphic one's branches by their `jsonmodel_type`, else None; the object schema it
    resolves to, if any; its items' definition, if an array; whether a string value is a ref)."""
    if "oneOf" in definition:
        branches: dict = {}
        for option in definition["oneOf"]:  # the first that names a type takes it (`SchemaSet.branch_for`)
            target = schemas.deref(option)
            branches.setdefault(target.get("properties", {}).get("jsonmodel_type", {}).get("const"), target)
        return branches, None, None, False
    resolved = schemas.deref(definition)
    return (
        None,
        resolved if "properties" in resolved else None,
        resolved.get("items") if "items" in resolved else None,
        "x-ref" in resolved and not resolved.get("readOnly"),
    )


@dataclass(slots=True)
class _Plan:
    """What normalising an object of one schema needs of it, worked out once per schema."""

    # Each property's definition, or None for a read-only one (dropped without a warning).
    kept: dict[str, dict | None]
    # The `jsonmodel_type` its objects are given, if it names one.
    const: str | None
    # Whether the object is a ref (`x-ref`; its `ref` is replaced, as `replace_refs` says).
    is_ref: bool
    # Properties whose string value is a ref, and those whose value may hold refs at any depth
    # (`_ref_properties`: not the envelope's, not dates or notes).
    string_refs: frozenset[str]
    may_hold_refs: frozenset[str]
    # What its objects are given for the properties they lack (`defaults.object_fills`).
    fills: list

    @classmethod
    def of(cls, schemas: SchemaSet, schema: dict) -> _Plan:
        properties = schema.get("properties", {})
        kept = {key: None if definition.get("readOnly") else definition for key, definition in properties.items()}
        holding = {key for key, _ in _ref_properties(schemas, schema)}
        string_refs = set()
        for key in holding:
            definition = schemas.deref(properties[key]) if "oneOf" not in properties[key] else {}
            if "x-ref" in definition and "properties" not in definition and not definition.get("readOnly"):
                string_refs.add(key)
        return cls(
            kept,
            properties.get("jsonmodel_type", {}).get("const"),
            "x-ref" in schema and not schema.get("readOnly"),
            frozenset(string_refs),
            frozenset(holding),
            object_fills(schema),
        )


def _check_iso_date(value) -> bool:
    if not isinstance(value, str):
        return True
    if not _ISO_DATE.match(value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _message(error: ValidationError) -> str:
    kind, expected, instance = error.validator, error.validator_value, error.instance
    if kind == "maxLength":
        return f"Must be {expected} characters or fewer"
    if kind == "minLength":
        return f"Must be at least {expected} characters"
    if kind == "minItems":
        return f"At least {expected} item(s) is required"
    if kind == "maxItems":
        return f"At most {expected} item(s) are allowed (you provided {len(instance)})"
    if kind == "type":
        wanted = expected if isinstance(expected, str) else " or ".join(expected)
        return f"Must be a {wanted} (you provided a {_JSON_TYPE_NAMES.get(type(instance), 'value')})"
    if kind == "enum":
        return f"Invalid value '{instance}'.  Must be one of: {', '.join(map(str, expected))}"
    if kind == "const":
        return f"Must be '{expected}' (you provided '{instance}')"
    if kind == "pattern":
        return f"Value '{instance}' did not match regular expression: {expected}"
    if kind == "format":
        return "Not a valid date (expected YYYY-MM-DD)"
    return error.message


def fast_validators(schemas: SchemaSet, registry, value_lists: ListCache) -> CompiledOnFirstUse:
    """The same schemas compiled by jsonschema-rs, ~50 times faster than `jsonschema` on a valid
    record: a record it passes has no error and no warning, so the worded errors of `jsonschema`
    are computed only for records it refuses. Its checks are at least as strict as the worded
    ones (`x-enum` refuses a value outside an editable list too, which is then a warning).

    Fonds' keywords become the standard ones the library checks natively (`native_checks`): a
    keyword of our own costs a call back into Python at every value it checks, ~12 µs a record
    of a bulk load, a fifth of its validation. So a type is compiled with the value lists of its
    time and again once they change."""

    def retrieve(uri: str) -> dict:
        return native_checks(schemas[uri.rsplit("/", 1)[-1]], value_lists.snapshot, registry.uri_pattern)

    def compile(name: str):
        return jsonschema_rs.Draft202012Validator(
            native_checks(schemas[name], value_lists.snapshot, registry.uri_pattern),
            base_uri=f"{SCHEMA_BASE}{name}",
            retriever=retrieve,
            validate_formats=True,
            formats={"date": _check_iso_date},
        )

    return CompiledOnFirstUse(compile, version=lambda: value_lists.snapshot.generation)


def native_checks(schema, lists, uri_pattern: Callable[[list[str]], str]):
    """A copy of `schema` with `x-enum` as `enum` (the values the list holds in `lists`; a list it
    lacks checks nothing, as the worded validator) and `x-ref` as a `pattern` matching the URIs of
    the types it allows, applied to the value if a string, else to its `ref`."""
    if isinstance(schema, list):
        return [native_checks(item, lists, uri_pattern) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "x-enum":
            found = lists.get(value)
            if found is not None:
                out["enum"] = sorted(found.values)
        elif key != "x-ref":
            out[key] = native_checks(value, lists, uri_pattern)
    if "x-ref" in schema:
        pattern = uri_pattern(schema["x-ref"])
        out["allOf"] = [*out.get("allOf", ()), {"pattern": pattern, "properties": {"ref": {"pattern": pattern}}}]
    return out


class CompiledOnFirstUse:
    """Validators by type name, each compiled when first asked for (and again once `version()`
    has moved on) and dropped once unused for `IDLE_SECONDS` (`drop_unused`): a compiled schema
    holds every schema it refers to expanded in place (an agent's ~6 MB, all types' ~37 MB of
    native memory, value lists included), and compiling one takes 5-20 ms. So the types being written are held, and a
    bulk load's dozen types do not stay in memory for good after it. Two threads compiling the
    same type at once is harmless."""

    IDLE_SECONDS = 60.0

    def __init__(self, compile: Callable[[str], object], version: Callable[[], object] = lambda: None):
        self._compile, self._version = compile, version
        self._compiled: dict[str, tuple[object, object]] = {}
        self._used: dict[str, float] = {}

    def __getitem__(self, name: str):
        version = self._version()
        found = self._compiled.get(name)
        if found is None or found[0] != version:
            found = self._compiled[name] = (version, self._compile(name))
        self._used[name] = time.monotonic()
        return found[1]

    def drop_unused(self, idle_seconds: float = IDLE_SECONDS) -> list[str]:
        """Drop the validators not asked for in the last `idle_seconds`; returns their types."""
        cutoff = time.monotonic() - idle_seconds
        idle = [name for name, used in list(self._used.items()) if used <= cutoff]
        for name in idle:
            self._used.pop(name, None)
            self._compiled.pop(name, None)
        return idle


class RecordValidator:
    """Validates normalised records of every type against their schemas."""

    def __init__(self, schemas: SchemaSet, registry, value_lists: ListCache):
        self.schemas = schemas
        uri_type = registry.uri_type
        self.normaliser = Normaliser(schemas)
        self.value_lists = value_lists

        def x_enum(validator, enum_name, instance, schema):
            # The lists as `errors` refreshed them (a value outside an editable list is a warning).
            found = value_lists.snapshot.get(enum_name)
            if not isinstance(instance, str) or found is None or instance in found.values:
                return
            if found.editable:
                yield ValidationError(f"Value '{instance}' is not in the editable list {enum_name}", validator=ENUM_WARNING)
            else:
                yield ValidationError(
                    f"Invalid value '{instance}'.  Must be one of: {', '.join(found.ordered)}", validator="x-enum-message"
                )

        def x_ref(validator, allowed, instance, schema):
            uri = instance.get("ref") if isinstance(instance, dict) else instance
            if not isinstance(uri, str):
                return
            if uri_type(uri) not in allowed:
                kinds = " or ".join(allowed)
                error = ValidationError(
                    f"Must be a URI of a {kinds} record (malformed or invalid uri? check if referenced object exists.)",
                    validator="x-ref-message",
                )
                if isinstance(instance, dict):
                    error.path.append("ref")
                yield error

        checker = FormatChecker(formats=())
        checker.checks("date")(_check_iso_date)
        cls = validators.extend(Draft202012Validator, {"x-enum": x_enum, "x-ref": x_ref})
        self._validators = {
            name: cls(schema, registry=schemas.registry, format_checker=checker) for name, schema in schemas.schemas.items()
        }
        self._fast = fast_validators(schemas, registry, value_lists)

    def drop_unused(self, idle_seconds: float = CompiledOnFirstUse.IDLE_SECONDS) -> list[str]:
        """Give back the compiled schemas of the types not written lately (`CompiledOnFirstUse`)."""
        return self._fast.drop_unused(idle_seconds)

    def errors(self, name: str, doc: dict, soft: FieldErrors | None = None, *, refresh: bool = True) -> FieldErrors:
        """Errors by path; what is only a warning unless validation is strict goes into `soft`.
        `refresh=False`: the caller refreshed the value lists once for a whole batch."""
        found: FieldErrors = {}
        if refresh:
            self.value_lists.refresh()
        if self._fast[name].is_valid(doc):
            return found  # nothing to report: the compiled check agrees with the worded one below
        for error in self._validators[name].iter_errors(doc):
            self._collect(error, "", found, {} if soft is None else soft)
        return found

    def _collect(self, error: ValidationError, base: str, found: FieldErrors, soft: FieldErrors) -> None:
        path = base
        for part in error.path:
            path = _path(path, part)
        if error.validator == ENUM_WARNING:
            soft.setdefault(path, []).append(error.message)
            return
        if error.validator == "required":
            missing = re.match(r"^'(.+)' is a required property$", error.message)
            found.setdefault(_path(path, missing.group(1) if missing else "?"), []).append(MISSING)
            return
        if error.validator == "oneOf":
            self._collect_one_of(error, path, found, soft)
            return
        message = error.message if error.validator in ("x-enum-message", "x-ref-message") else _message(error)
        found.setdefault(path, []).append(message)

    def _collect_one_of(self, error: ValidationError, path: str, found: FieldErrors, soft: FieldErrors) -> None:
        options = error.validator_value
        kind = error.instance.get("jsonmodel_type") if isinstance(error.instance, dict) else None
        names = self.schemas.branch_names(options)
        if kind not in names:
            found.setdefault(_path(path, "jsonmodel_type"), []).append(
                f"Can't unambiguously match this item: jsonmodel_type must be one of: {', '.join(names)}"
            )
            return
        index = names.index(kind)
        for sub in error.context or ():
            if sub.schema_path and sub.schema_path[0] == index:
                self._collect(sub, path, found, soft)

    def prepare(
        self,
        name: str,
        doc: dict,
        *,
        aspace_required: Sequence[str],
        one_of_groups,
        strict: bool,
        refresh: bool = True,
        replace_refs: dict[str, str] | None = None,
        refs: list[tuple[str, str]] | None = None,
        fills: list[tuple[list, dict]] | None = None,
    ) -> tuple[dict, FieldErrors]:
        """Normalise and validate a client's record; raise `Invalid` or return (record, warnings).
        `refs`, `fills`: given the record's refs and its subrecords' defaults (`Normaliser`)."""
        cleaned, warnings = self.normaliser.record(self.schemas[name], doc, replace_refs, refs, fills)
        soft: FieldErrors = {}
        errors = self.errors(name, cleaned, soft, refresh=refresh)
        for field in aspace_required:
            if _lacks(cleaned, field):
                soft.setdefault(field, []).append("Property was missing")
        for group in one_of_groups:
            for field in group.fields:
                if not _lacks(cleaned, field):
                    break
            else:
                for field, message in group.messages():
                    errors.setdefault(field, []).append(message)
        if strict:
            for field, messages in soft.items():
                errors.setdefault(field, []).extend(m.replace("Property was missing", MISSING) for m in messages)
        else:
            for field, messages in soft.items():
                warnings.setdefault(field, []).extend(messages)
        if errors:
            raise Invalid(errors, warnings)
        return cleaned, warnings


ENVELOPE_FIELDS = frozenset(ENVELOPE_PROPERTIES)


def find_refs(schemas: SchemaSet, schema: dict, doc, path: str = "") -> list[tuple[str, str]]:
    """Every (path, uri) of an `x-ref` in a normalised record; the path of a ref object is its own."""
    found: list[tuple[str, str]] = []
    _collect_refs(schemas, schema, doc, path, found)
    return found


def _collect_refs(schemas: SchemaSet, schema: dict, doc, path: str, found: list[tuple[str, str]]) -> None:
    if "oneOf" in schema:
        schema = (schemas.branch_for(schema["oneOf"], doc.get("jsonmodel_type")) if isinstance(doc, dict) else None) or {}
    schema = schemas.deref(schema)
    if "x-ref" in schema and not schema.get("readOnly"):
        uri = doc.get("ref") if isinstance(doc, dict) else doc
        if isinstance(uri, str):
            found.append((path, uri))
        return
    if isinstance(doc, dict):
        for key, definition in _ref_properties(schemas, schema):
            if key in doc:
                _collect_refs(schemas, definition, doc[key], _path(path, key), found)
    elif isinstance(doc, list) and "items" in schema:
        for index, item in enumerate(doc):
            _collect_refs(schemas, schema["items"], item, _path(path, index), found)


def _ref_properties(schemas: SchemaSet, schema: dict) -> list[tuple[str, dict]]:
    """The properties of an object schema whose values can hold a ref at any depth (dates, extents
    and notes cannot: `find_refs` skips them), in schema order. Worked out once per schema over
    the whole schema graph: a record's walk visits only these, not every property it declares."""
    known = schemas.ref_properties
    if id(schema) not in known:
        known[id(schema)] = [
            (key, definition)
            for key, definition in schema.get("properties", {}).items()
            if key not in ENVELOPE_PROPERTIES and not definition.get("readOnly") and _reaches_ref(schemas, definition, set())
        ]
    return known[id(schema)]


def _reaches_ref(schemas: SchemaSet, schema: dict, seen: set[int]) -> bool:
    if id(schema) in seen:
        return False  # the rest of this cycle is searched by the caller that entered it
    seen.add(id(schema))
    schema = schemas.deref(schema)
    if "x-ref" in schema and not schema.get("readOnly"):
        return True
    children = [*schema.get("oneOf", ()), *schema.get("properties", {}).values()]
    if isinstance(schema.get("items"), dict):
        children.append(schema["items"])
    return any(_reaches_ref(schemas, child, seen) for child in children)
