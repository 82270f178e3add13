"""The knowledge graph of the SCK K-score (seed 002 §2.1): read, joined, queried.

Layout (`--kg`): Parquet files (CSV or JSON Lines also read) of statements with
three string columns `subject, predicate, object`, in Wikidata's style:

    Q76        P39                 Q11696
    Q76        rdfs:label          Barack Obama
    Q76        skos:altLabel       Obama
    Q76        schema:description  44th president of the United States
    P39        rdfs:label          position held

Entities are the ids that have an `rdfs:label` (one is kept: the smallest; the
others count as aliases); `skos:altLabel` gives aliases and
`schema:description` the description (the ER-score's text, §2.1.2; an entity
without one is described by its label). Every other predicate is an edge; its
object is an entity where the object id has a label, and a literal otherwise.

`BuildKnowledgeGraph` turns statements into one `EntityRecord` per entity (its
names, description, outgoing edges with their objects' labels, and the
predicates that point at it), keyed by id for the jobs to join by entity key;
the gazetteer of names (transforms/sck/entity_linking.py) and the predicate labels,
which linking and verbalising need whole, are singletons.

Which triples a sentence is judged against (§2.1.3) follows the seed's SPARQL
query: the statements `wd:s ?p wd:o` that directly link two entities the
sentence refers to. `conflicting_claims` lists what would contradict the graph
(README: the three-way decision).
"""
import collections
from typing import Dict, Iterable, Iterator, List, NamedTuple, Sequence, Union

import apache_beam as beam

from autoais.schemas import DeadLetter, EntityRecord, KgEdge, KgStatement
from autoais.transforms.io.fields import clean_text_fields, json_record, rejected
from autoais.transforms.io.inputs import check_input_file
from autoais.transforms.io.input_records import read_columns, records
from autoais.transforms.sck.entity_linking import Gazetteer, linkable_name, name_key

LABEL = "rdfs:label"
ALIAS = "skos:altLabel"
DESCRIPTION = "schema:description"
NAME_PREDICATES = (LABEL, ALIAS, DESCRIPTION)
KG_COLUMNS = ("subject", "predicate", "object")


def check_kg_file(path: str) -> None:
  """InputError if a knowledge-graph file cannot be read or lacks a column."""
  check_input_file(path)
  read_columns(path, KG_COLUMNS).require(KG_COLUMNS)


def read_kg_statements(path: str) -> Iterator[Union[KgStatement, DeadLetter]]:
  for item in records(path, KG_COLUMNS):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    values = clean_text_fields(fields, KG_COLUMNS, KG_COLUMNS, path, line)
    if isinstance(values, DeadLetter):
      yield values
      continue
    empty = next((name for name in KG_COLUMNS if not values[name].strip()), None)
    if empty is not None:
      yield rejected(path, line, "empty_field", "the field is empty",
                     json_record(fields), empty)
      continue
    yield KgStatement(values["subject"].strip(), values["predicate"].strip(),
                      values["object"].strip(), path, line)


# ----------------------------------------------------------------------------
# Building entity records in the pipeline.


def _route_statement(statement: KgStatement):
  subject, predicate, obj = statement.subject, statement.predicate, statement.object
  if predicate == LABEL:
    yield beam.pvalue.TaggedOutput("labels", (subject, obj))
  elif predicate in (ALIAS, DESCRIPTION):
    yield beam.pvalue.TaggedOutput("names", (subject, (predicate, obj)))
  else:
    yield (subject, predicate, obj)


def _label_edges(grouped):
  """(object id, {labels, pointing}) -> the edges that point at it, labelled,
  keyed by their subject; and the object's incoming predicates."""
  object_id, groups = grouped
  labels = sorted(groups["labels"])
  label = labels[0] if labels else None
  predicates = set()
  for subject, predicate in groups["pointing"]:
    predicates.add(predicate)
    yield subject, ("out", KgEdge(predicate, object_id, label))
  for predicate in sorted(predicates):
    yield object_id, ("in", predicate)


def _entity_record(grouped):
  entity_id, groups = grouped
  labels = sorted(set(groups["labels"]))
  if not labels:
    return
  aliases, descriptions = set(labels[1:]), []
  for predicate, text in groups["names"]:
    if predicate == ALIAS:
      aliases.add(text)
    else:
      descriptions.append(text)
  aliases.discard(labels[0])
  out_edges, in_predicates = set(), set()
  for kind, value in groups["facts"]:
    if kind == "out":
      out_edges.add(value)
    else:
      in_predicates.add(value)
  yield entity_id, EntityRecord(
      entity_id, labels[0], sorted(aliases), min(descriptions) if descriptions else None,
      sorted(out_edges, key=lambda edge: (edge.predicate, edge.object)),
      sorted(in_predicates))


def _names_of(keyed_record):
  _, record = keyed_record
  for name in [record.label] + list(record.aliases):
    key = name_key(name)
    if linkable_name(key):
      yield key, record.id


class _BuildGazetteer(beam.CombineFn):
  """(normalised name, id) pairs -> one Gazetteer."""

  def create_accumulator(self):
    return collections.defaultdict(set)

  def add_input(self, accumulator, name_and_id):
    accumulator[name_and_id[0]].add(name_and_id[1])
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = collections.defaultdict(set)
    for accumulator in accumulators:
      for key, ids in accumulator.items():
        merged[key].update(ids)
    return merged

  def extract_output(self, accumulator):
    return Gazetteer({key: tuple(sorted(ids)) for key, ids in sorted(accumulator.items())})


def _predicate_label(grouped):
  predicate, groups = grouped
  if groups["used"]:
    labels = sorted(groups["labels"])
    yield predicate, labels[0] if labels else predicate


class BuildKnowledgeGraph(beam.PTransform):
  """PCollection[KgStatement] -> {"entities": PCollection[(id, EntityRecord)],
  "gazetteer": singleton Gazetteer, "predicate_labels": singleton {id: label},
  "stats": singleton counts}."""

  def expand(self, statements):
    routed = statements | "RouteStatements" >> beam.FlatMap(
        _route_statement).with_outputs("labels", "names", main="edges")
    labels, names, edges = routed.labels, routed.names, routed.edges
    labelled_edges = (
        {"labels": labels,
         "pointing": edges | "KeyEdgesByObject" >> beam.Map(lambda e: (e[2], (e[0], e[1])))}
        | "GroupEdgesByObject" >> beam.CoGroupByKey()
        | "LabelEdgeObjects" >> beam.FlatMap(_label_edges))
    entities = (
        {"labels": labels, "names": names, "facts": labelled_edges}
        | "GroupStatementsByEntity" >> beam.CoGroupByKey()
        | "MakeEntityRecords" >> beam.FlatMap(_entity_record))
    gazetteer = (entities
                 | "ListEntityNames" >> beam.FlatMap(_names_of)
                 | "BuildGazetteer" >> beam.CombineGlobally(_BuildGazetteer()))
    predicate_labels = (
        {"used": (edges
                  | "ListPredicates" >> beam.Map(lambda e: e[1])
                  | "DistinctPredicates" >> beam.Distinct()
                  | "MarkPredicates" >> beam.Map(lambda p: (p, True))),
         "labels": labels}
        | "GroupPredicateLabels" >> beam.CoGroupByKey()
        | "LabelPredicates" >> beam.FlatMap(_predicate_label)
        | "CollectPredicateLabels" >> beam.combiners.ToDict())
    counts = (
        (entities | "CountEntities" >> beam.combiners.Count.Globally()
         | "NameEntityCount" >> beam.Map(lambda n: {"entities": n}),
         edges | "CountEdges" >> beam.combiners.Count.Globally()
         | "NameEdgeCount" >> beam.Map(lambda n: {"edges": n}))
        | "CollectGraphCounts" >> beam.Flatten()
        | "MergeGraphCounts" >> beam.CombineGlobally(_MergeDicts()))
    return {"entities": entities, "gazetteer": gazetteer,
            "predicate_labels": predicate_labels, "stats": counts}


class _MergeDicts(beam.CombineFn):

  def create_accumulator(self):
    return {}

  def add_input(self, accumulator, value):
    accumulator.update(value)
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = {}
    for accumulator in accumulators:
      merged.update(accumulator)
    return merged

  def extract_output(self, accumulator):
    return dict(sorted(accumulator.items()))


# ----------------------------------------------------------------------------
# Queries over the records of the entities an answer refers to.


class Triple(NamedTuple):
  subject: str
  predicate: str
  object: str


def relevant_triples(entity_ids: Iterable[str],
                     records: Dict[str, EntityRecord]) -> List[Triple]:
  """The seed's SPARQL query (§2.1.3): statements `s p o` with both s and o among
  the entities (s != o), in (s, p, o) order."""
  ids = set(entity_ids)
  triples = []
  for subject in sorted(ids):
    record = records.get(subject)
    if record is None:
      continue
    for edge in record.out_edges:
      if edge.object in ids and edge.object != subject:
        triples.append(Triple(subject, edge.predicate, edge.object))
  return triples


class Conflict(NamedTuple):
  """A claim `asserted` that the graph would contradict: it gives the subject
  other values (`graph_values`) for the predicate."""
  asserted: Triple
  graph_values: List[Triple]


def conflicting_claims(entity_ids: Iterable[str],
                       records: Dict[str, EntityRecord]) -> List[Conflict]:
  """For entities s and o of a sentence: each predicate p that s has in the graph
  and that points at o somewhere in the graph (o is a value p takes), where the
  graph does not hold `s p o`. A sentence that asserts `s p o` then contradicts
  the graph's `s p o2` (README: the three-way decision)."""
  ids = sorted(set(entity_ids))
  conflicts = []
  for subject in ids:
    record = records.get(subject)
    if record is None:
      continue
    values = collections.defaultdict(list)
    for edge in record.out_edges:
      values[edge.predicate].append(edge.object)
    for obj in ids:
      target = records.get(obj)
      if obj == subject or target is None:
        continue
      for predicate in target.in_predicates:
        if predicate in values and obj not in values[predicate]:
          conflicts.append(Conflict(
              Triple(subject, predicate, obj),
              [Triple(subject, predicate, value) for value in values[predicate]]))
  return conflicts


def triple_labels(triple: Triple, records: Dict[str, EntityRecord],
                  predicate_labels: Dict[str, str]) -> List[str]:
  """(subject, predicate, object) as names, as the seed's Table 1 shows them."""
  subject = records[triple.subject].label if triple.subject in records else triple.subject
  if triple.object in records:
    obj = records[triple.object].label
  else:
    obj = triple.object
    record = records.get(triple.subject)
    for edge in record.out_edges if record else ():
      if edge.predicate == triple.predicate and edge.object == triple.object:
        obj = edge.object_label or edge.object
        break
  return [subject, predicate_labels.get(triple.predicate, triple.predicate), obj]


def verbalise(triples: Sequence[Triple], records: Dict[str, EntityRecord],
              predicate_labels: Dict[str, str]) -> str:
  """Triples as the NLI premise: "Barack Obama position held President of the
  United States." for each, joined by spaces."""
  return " ".join(" ".join(triple_labels(triple, records, predicate_labels)) + "."
                  for triple in triples)
