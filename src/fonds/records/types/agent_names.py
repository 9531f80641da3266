"""Agent names as ArchivesSpace computes them: each name type's sort name
(`backend/app/model/mixins/sort_name_processor.rb`), the choice of the authorized and display
names and the merging of duplicate names (`mixins/agent_manager.rb`), and the hash that makes
an agent unique ("Agent must be unique")."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import orjson

SORT_NAME_LIMIT = 255
STANDARDIZED_TYPE_LABELS = {"not_before": "Not Before", "not_after": "Not After"}


def _year(value: str | None) -> str | None:
    return value.split("-")[0] if value else None


def _standardized(value: str | None, kind: str | None) -> str | None:
    year = _year(value)
    if year and kind and kind != "standard":
        return f"{STANDARDIZED_TYPE_LABELS.get(kind, kind)} {year}"
    return year


def date_string(date: dict) -> str:
    """A structured date as a sort name shows it: its expression, else its standardized years."""
    if date.get("date_type_structured") == "single":
        single = date.get("structured_date_single") or {}
        return single.get("date_expression") or _standardized(single.get("date_standardized"), single.get("date_standardized_type")) or ""
    ranged = date.get("structured_date_range") or {}
    begin, end = ranged.get("begin_date_expression"), ranged.get("end_date_expression")
    if begin and end:
        return f"{begin}-{end}"
    if begin:
        return begin
    begin = _standardized(ranged.get("begin_date_standardized"), ranged.get("begin_date_standardized_type"))
    end = _standardized(ranged.get("end_date_standardized"), ranged.get("end_date_standardized_type"))
    if begin and end:
        return f"{begin}-{end}"
    return begin or ""


def _cut(text: str) -> str:
    return text[:SORT_NAME_LIMIT]


def person_sort_name(name: dict, existence: str | None) -> str:
    order, primary, rest = name.get("name_order"), name.get("primary_name"), name.get("rest_of_name")
    if order == "inverted":
        result = (primary or "") + (f", {rest}" if rest else "")
    elif order == "direct":
        result = (rest or "") + (f" {primary}" if primary else "")
    else:
        result = primary or ""
    for key in ("prefix", "suffix", "title", "number"):
        if name.get(key):
            result += f", {name[key]}"
    if name.get("fuller_form"):
        result += f" ({name['fuller_form']})"
    if name.get("dates"):
        result += f", {name['dates']}"
    if name.get("qualifier"):
        result += f" ({name['qualifier']})"
    if existence and not name.get("dates"):
        result += f" ({existence})"
    return _cut(result.lstrip())


def corporate_sort_name(name: dict, existence: str | None) -> str:
    result = name.get("primary_name") or ""
    for key in ("subordinate_name_1", "subordinate_name_2"):
        if name.get(key):
            result += f". {name[key]}"
    if name.get("number"):
        result += f", {name['number']}"
    for key in ("qualifier", "dates", "location"):
        if name.get(key):
            result += f" ({name[key]})"
    return _cut(result)


def family_sort_name(name: dict, existence: str | None) -> str:
    result = name.get("family_name") or ""
    if name.get("prefix"):
        result += f", {name['prefix']}"
    for key in ("qualifier", "dates", "location"):
        if name.get(key):
            result += f" ({name[key]})"
    return _cut(result)


def software_sort_name(name: dict, existence: str | None) -> str:
    result = f"{name['manufacturer']} " if name.get("manufacturer") else ""
    result += name.get("software_name") or ""
    if name.get("version"):
        result += f" {name['version']}"
    if name.get("qualifier"):
        result += f" ({name['qualifier']})"
    if name.get("dates"):
        result += f", {name['dates']}"
    if existence and not name.get("dates"):
        result += f" ({existence})"
    return _cut(result)


@dataclass(frozen=True)
class NameRules:
    """How one agent type's names are sorted and compared."""

    sort_name: Callable[[dict, str | None], str]
    # The fields two names must share to be the same name (the model's hash fields).
    hash_fields: tuple[str, ...]


PERSON = NameRules(person_sort_name, ("primary_name", "title", "name_order", "prefix", "rest_of_name", "suffix", "fuller_form", "number"))
CORPORATE_ENTITY = NameRules(corporate_sort_name, ("primary_name", "subordinate_name_1", "subordinate_name_2", "number"))
FAMILY = NameRules(family_sort_name, ("family_name", "prefix"))
SOFTWARE = NameRules(software_sort_name, ("software_name", "version", "manufacturer"))
# Shared by every name type (abstract_name's part of the hash).
COMMON_HASH_FIELDS = ("dates", "qualifier", "source", "rules")


def name_key(rules: NameRules, name: dict) -> str:
    use_dates = [[d.get("date_type_structured"), d.get("date_label")] for d in name.get("use_dates", [])]
    return orjson.dumps([[name.get(f) for f in (*rules.hash_fields, *COMMON_HASH_FIELDS)], use_dates]).decode()


def settle_names(rules: NameRules, names: list[dict]) -> list[dict]:
    """ArchivesSpace's order of operations: the first name becomes authorized when none is, the
    authorized one becomes the display name when none is, and duplicates are merged keeping the
    authorized and display names (then the input order)."""
    if not names:
        return names
    if not any(n.get("authorized") for n in names):
        names[0]["authorized"] = True
    _ensure_display(names)
    ranked = sorted(names, key=lambda n: (bool(n.get("authorized")), bool(n.get("is_display_name"))), reverse=True)
    kept, seen = [], set()
    for name in ranked:
        key = name_key(rules, name)
        if key not in seen:
            seen.add(key)
            kept.append(name)
    order = [name_key(rules, n) for n in names]
    kept.sort(key=lambda n: order.index(name_key(rules, n)))
    _ensure_display(kept)
    for name in kept:
        name["authorized"] = bool(name.get("authorized"))
        name["is_display_name"] = bool(name.get("is_display_name"))
    return kept


def _ensure_display(names: list[dict]) -> None:
    if not any(n.get("is_display_name") for n in names):
        next(n for n in names if n.get("authorized"))["is_display_name"] = True


def fill_sort_names(rules: NameRules, names: list[dict], dates_of_existence: list[dict]) -> None:
    """Generate each name's sort name unless the client turned that off; the display name of a
    person or software agent shows the first date of existence when it has no dates itself."""
    existence = date_string(dates_of_existence[0]) if dates_of_existence else None
    for name in names:
        name.setdefault("sort_name_auto_generate", True)
        if name["sort_name_auto_generate"]:
            name["sort_name"] = rules.sort_name(name, existence if name.get("is_display_name") else None)


def agent_hash(rules: NameRules, doc: dict) -> str:
    """What makes two agents of one type the same (AgentManager.calculate_hash): their authorized
    names, dates of existence, contacts, external documents and notes."""
    fields = []
    for date in doc.get("dates_of_existence", []):
        fields.append(orjson.dumps([date.get("date_type_structured"), date.get("date_label")]).decode())
    contact_keys = ("name", "salutation", "address_1", "address_2", "address_3", "city", "region", "country", "post_code", "email")
    for contact in doc.get("agent_contacts", []):
        fields.append(orjson.dumps([contact.get(k) for k in (*contact_keys, "email_signature")]).decode())
    for document in doc.get("external_documents", []):
        fields.append(orjson.dumps([document.get("title"), document.get("location")]).decode())
    for note in doc.get("notes", []):
        fields.append(
            orjson.dumps({k: v for k, v in note.items() if k not in ("publish", "persistent_id")}, option=orjson.OPT_SORT_KEYS).decode()
        )
    fields += sorted(name_key(rules, n) for n in doc.get("names", []) if n.get("authorized"))
    return hashlib.sha1("-".join(sorted(fields)).encode()).hexdigest()
