"""A seeded, realistic archive: repositories' subjects, agents, top containers, accessions,
resources and deep trees of archival objects, as records that refer to each other by
temporary URIs (ArchivesSpace's batch-import convention: `/repositories/2/resources/import_7`).

The same seed and scale always give the same archive. Records come out in dependency order
(everything a record refers to comes before it), resource by resource, so loading can stream."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

SCALES = {"tiny": 300, "small": 10_000, "medium": 100_000, "large": 1_000_000}
BIG_TREE_SHARE = 0.10  # the large archive's 100,000-component resource, proportionally smaller below it
SHARES = {"subject": 0.02, "agent": 0.02, "top_container": 0.05, "accession": 0.15}
COMPONENTS_PER_RESOURCE = 150
# Components with instances are filed box after box, each resource in boxes of its own, as
# archives file them (a box shared at random across the repository's collections would be rare).
FOLDERS_PER_BOX = 20

WORDS = (
    "letters diaries photographs minutes ledgers maps sermons deeds surveys sketches recordings pamphlets "
    "correspondence accounts journals drawings scrapbooks receipts telegrams postcards contracts petitions "
    "harbour railway mill parish guild orchard foundry lighthouse seminary quarry brewery tannery chapel "
    "estate county township river valley harbour island garrison market school hospital asylum mission"
).split()
NAMES = "Abbott Baines Carver Dunmore Ellery Fairweather Gage Hollis Ingram Jessop Kettering Lowther Marsh Norcross Oakes Pell".split()
GIVEN = "Ada Bertram Clara Desmond Edith Felix Grace Horace Iris Jasper Leonora Miles Nora Otto Philippa".split()
LEVELS = ("series", "subseries", "file", "file", "item")


@dataclass
class Plan:
    """How many records of each kind one repository gets."""

    subjects: int
    agents: int
    top_containers: int
    accessions: int
    resources: int
    big_tree: int  # components of the one big resource (0: none)
    components: int  # components of all other resources together


def plan(total: int, *, agents: bool, big_tree: int = 0) -> Plan:
    """`total` records for one repository, `big_tree` of them in one resource."""
    count = {kind: max(2, int(total * share)) for kind, share in SHARES.items()}
    if not agents:
        count["agent"] = 0
    rest = max(0, total - sum(count.values()) - big_tree)
    resources = max(1, rest // (COMPONENTS_PER_RESOURCE + 1))
    return Plan(count["subject"], count["agent"], count["top_container"], count["accession"], resources, big_tree, rest - resources)


def tree_shape(rng: random.Random, size: int, deep_chain: int = 8) -> list[tuple[int | None, int]]:
    """(parent index or None, depth) for `size` components: breadth-first with varied fan-out,
    plus one branch `deep_chain` levels deep."""
    chain = min(deep_chain, max(0, size - 1))
    broad = size - chain
    fanout = max(3, round(broad**0.25) * 2)
    nodes: list[tuple[int | None, int]] = [(None, 0) for _ in range(min(broad, max(1, broad // (fanout**3) or 1)))]
    parent = 0
    while len(nodes) < broad:
        for _ in range(rng.randint(2, fanout)):
            if len(nodes) == broad:
                break
            nodes.append((parent, nodes[parent][1] + 1))
        parent += 1
    above = 0 if nodes else None
    for _ in range(chain):
        nodes.append((above, (nodes[above][1] + 1) if above is not None else 0))
        above = len(nodes) - 1
    return nodes


class Archive:
    """Generates one repository's records (the repository itself is created before, by URI)."""

    def __init__(self, seed: int, repo_id: int, plan: Plan, *, global_prefix: str):
        self.rng = random.Random(seed)
        self.repo = f"/repositories/{repo_id}"
        self.plan = plan
        self.prefix = global_prefix  # keeps global records (subjects, agents) of two repositories apart
        self.subjects: list[str] = []
        self.agents: list[str] = []
        self.containers: list[str] = []
        self.boxes_used = 0

    def words(self, n: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def dates(self) -> list[dict]:
        begin = self.rng.randint(1780, 1990)
        return [
            {
                "jsonmodel_type": "date",
                "date_type": "inclusive",
                "label": "creation",
                "begin": str(begin),
                "end": str(begin + self.rng.randint(0, 40)),
            }
        ]

    def extents(self) -> list[dict]:
        return [{"jsonmodel_type": "extent", "portion": "whole", "number": str(self.rng.randint(1, 90)), "extent_type": "linear_feet"}]

    def units(self) -> Iterator[list[dict]]:
        """Lists of records, each referring only to records of earlier lists or of itself:
        subjects, agents, top containers, accessions, then each resource with its tree."""
        for unit in (self._subjects(), self._agents(), self._containers(), self._accessions()):
            records = list(unit)
            if records:
                yield records
        sizes = [self.plan.big_tree] if self.plan.big_tree else []
        if self.plan.resources:
            each, extra = divmod(self.plan.components, self.plan.resources)
            sizes += [each + (1 if i < extra else 0) for i in range(self.plan.resources)]
        for number, size in enumerate(sizes, 1):
            yield list(self._resource(number, size))

    def _subjects(self) -> Iterator[dict]:
        for n in range(1, self.plan.subjects + 1):
            uri = f"/subjects/import_{self.prefix}{n}"
            self.subjects.append(uri)
            # The prefix too: subjects are global, and two repositories' archives draw their words alike.
            term = f"{self.words(2).title()} {self.prefix}{n}"
            yield {
                "jsonmodel_type": "subject",
                "uri": uri,
                "title": term,
                "source": "local",
                "terms": [{"jsonmodel_type": "term", "term": term, "term_type": "topical", "vocabulary": "/vocabularies/1"}],
                "vocabulary": "/vocabularies/1",
            }

    def _agents(self) -> Iterator[dict]:
        for n in range(1, self.plan.agents + 1):
            uri = f"/agents/people/import_{self.prefix}{n}"
            self.agents.append(uri)
            # Agents are global and must be unique: the repository's prefix keeps two repositories' apart.
            primary = f"{self.rng.choice(NAMES)}{n}{self.prefix.rstrip('_')}"
            name = {"jsonmodel_type": "name_person", "primary_name": primary, "rest_of_name": self.rng.choice(GIVEN)}
            name.update(name_order="inverted", source="local", sort_name_auto_generate=True)
            yield {"jsonmodel_type": "agent_person", "uri": uri, "names": [name]}

    def _containers(self) -> Iterator[dict]:
        for n in range(1, self.plan.top_containers + 1):
            uri = f"{self.repo}/top_containers/import_{n}"
            self.containers.append(uri)
            yield {"jsonmodel_type": "top_container", "uri": uri, "indicator": str(n), "type": "box", "barcode": f"39{self.prefix}{n:09d}"}

    def _accessions(self) -> Iterator[dict]:
        for n in range(1, self.plan.accessions + 1):
            yield {
                "jsonmodel_type": "accession",
                "uri": f"{self.repo}/accessions/import_{n}",
                "title": f"{self.words(3).capitalize()} of the {self.rng.choice(NAMES)} family",
                "id_0": str(1950 + n % 70),
                "id_1": f"{n:06d}",
                "accession_date": f"{1950 + n % 70}-{1 + n % 12:02d}-{1 + n % 28:02d}",
                "content_description": self.words(12).capitalize() + ".",
                "extents": self.extents(),
                "dates": self.dates(),
                **self._links(),
            }

    def _links(self) -> dict:
        links = {}
        if self.subjects:
            links["subjects"] = [{"ref": uri} for uri in self.rng.sample(self.subjects, min(2, len(self.subjects)))]
        if self.agents:
            links["linked_agents"] = [{"ref": self.rng.choice(self.agents), "role": "creator"}]
        return links

    def _next_box(self) -> str | None:
        """The next unused top container (the pool's first again once all are used)."""
        if not self.containers:
            return None
        self.boxes_used += 1
        return self.containers[(self.boxes_used - 1) % len(self.containers)]

    def _instance(self, box: str) -> list[dict]:
        sub = {"jsonmodel_type": "sub_container", "top_container": {"ref": box}}
        sub.update(type_2="folder", indicator_2=str(self.rng.randint(1, 40)))
        return [{"jsonmodel_type": "instance", "instance_type": "mixed_materials", "sub_container": sub}]

    def _resource(self, number: int, size: int) -> Iterator[dict]:
        resource = f"{self.repo}/resources/import_{number}"
        yield {
            "jsonmodel_type": "resource",
            "uri": resource,
            "title": f"{self.rng.choice(NAMES)} {self.words(2)} collection"
            + (" (the big one)" if size == self.plan.big_tree and number == 1 else ""),
            "id_0": f"MS-{number:05d}",
            "level": "collection",
            "extents": self.extents(),
            "dates": self.dates(),
            "publish": True,
            "notes": [
                {
                    "jsonmodel_type": "note_multipart",
                    "type": "scopecontent",
                    "subnotes": [{"jsonmodel_type": "note_text", "content": self.words(30).capitalize() + "."}],
                }
            ],
            **self._links(),
        }
        filed, box = 0, None
        for index, (parent, depth) in enumerate(tree_shape(self.rng, size)):
            record = {
                "jsonmodel_type": "archival_object",
                "uri": f"{self.repo}/archival_objects/import_{number}_{index}",
                "title": f"{self.words(2).capitalize()}, {self.rng.choice(NAMES)}",
                "level": LEVELS[min(depth, len(LEVELS) - 1)],
                "component_id": f"{number}.{index}",
                "resource": {"ref": resource},
                "dates": self.dates(),
                "publish": True,
            }
            if parent is not None:
                record["parent"] = {"ref": f"{self.repo}/archival_objects/import_{number}_{parent}"}
            if self.rng.random() < 0.3:
                if filed % FOLDERS_PER_BOX == 0:
                    box = self._next_box()
                filed += 1
                if box is not None:
                    record["instances"] = self._instance(box)
            if self.rng.random() < 0.2:
                record.update(self._links())
            yield record
