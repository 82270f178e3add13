"""SCK answer quality (seed 002; SPEC 5.9): the Knowledge, Structure and Content
scores of an answer and their intent-weighted sum, with the evidence of each.

    SCK = alpha S + beta C + gamma K          (Eq. 5; weights by intent, Table 3)
    K   = a VE + b ER + c KG-AttrScore        (Eq. 3; a = b = c = 1/3, §2.1.4)
    VE  = |text entities in the KG| / |text entities|                  (Eq. 1)
    ER  = mean over the answer's verifiable entities of
          (Jaccard(question, description) + max(0, cosine(e_q, e_desc))) / 2
    KG-AttrScore = mean over the answer's sentences of f in {1, 0, -1}  (§2.1.3)
    C   = |E ∩ E_total| / |E_total|  (E_total: the reference answer's entities,
          or the question's where no reference is given; Eq. 4)
    S   = mean of the intent's Table 2 feature scores (transforms/sck/intent.py)

Choices where the seed is open (README: SCK answer quality):

* ER (Eq. 2) sums Jaccard + cosine over the entities, which grows with their
  number and reaches 2 per entity; the mean of the halved sum keeps ER, and so
  K, in [0, 1] like the seed's Table 4 values. Jaccard is over the content words
  (function words left out); a negative cosine counts as 0.
* A score whose denominator is empty (no text entity, no verifiable entity, no
  expected entity) is undefined (None), and the weighted sums of Eq. 3 and
  Eq. 5 are taken over the defined terms, their weights renormalised.
* The three-way decision f of a sentence, with a scorer (`--scorer`) that says
  whether a premise entails a hypothesis:
    - contradictory (-1) if the sentence entails a claim `s p o` that the graph
      contradicts: s and o are entities of the sentence, the graph gives s other
      values for p, and o is a value p takes elsewhere in the graph
      (knowledge_graph.conflicting_claims; the seed assumes the graph covers
      what the answer says, §4). Premise: the sentence; hypothesis: the claim.
    - attributable (1) otherwise, if the relevant triples (those linking two of
      the sentence's entities, the seed's SPARQL query) entail the sentence.
      Premise: the triples verbalised; hypothesis: the sentence.
    - extrapolatory (0) otherwise: the graph cannot settle the sentence, whether
      it has triples about its entities (not entailing it) or none (Table 1's
      "NA").
  The rationale is the triples used. With string-match, a premise must contain
  the normalised hypothesis word for word, which triples rarely do: use an NLI
  scorer (t5) for real decisions.
"""
import json
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.models.embeddings import cosine, text_example
from autoais.schemas import AttributionScore, EntityRecord, SckInput, SckRow
from autoais.transforms.sck.entity_linking import (Gazetteer, LinkedSentence, Mention,
                                           content_words, distinct_mentions, link_answer,
                                           link_text, sentence_entities)
from autoais.transforms.sck.intent import INTENT_WEIGHTS, classify_intent, structure_score
from autoais.transforms.sck.knowledge_graph import (Conflict, Triple, conflicting_claims,
                                            relevant_triples, triple_labels, verbalise)
from autoais.transforms.io.spilled_groups import (SpilledCoGroupByKey, SpillKeyedRuns,
                                                  merge_tagged_groups)
from autoais.transforms.scoring.attribution import ScoreAttribution, first_failure, scoring_failed
from autoais.transforms.scoring.examples import claim_example

K_WEIGHTS = (1 / 3, 1 / 3, 1 / 3)  # VE, ER, KG-AttrScore: "alpha = beta = gamma ≈ 0.3"
ATTRIBUTABLE, EXTRAPOLATORY, CONTRADICTORY = 1, 0, -1
DECISION_NAMES = {ATTRIBUTABLE: "attributable", EXTRAPOLATORY: "extrapolatory",
                  CONTRADICTORY: "contradictory"}
SUPPORT = -1  # the example index of a sentence's support check
QUESTION = "question"


def weighted_mean(terms: Sequence[Tuple[float, Optional[float]]]) -> Optional[float]:
  """sum(w v) / sum(w) over the terms whose value is defined (None: none is)."""
  defined = [(weight, value) for weight, value in terms if value is not None]
  total = sum(weight for weight, _ in defined)
  if not defined or total <= 0:
    return None
  return sum(weight * value for weight, value in defined) / total


def sck_score(intent: str, s: float, c: Optional[float],
              k: Optional[float]) -> Optional[float]:
  """Eq. 5 with the intent's Table 3 weights."""
  alpha, beta, gamma = INTENT_WEIGHTS[intent]
  return weighted_mean([(alpha, s), (beta, c), (gamma, k)])


def k_score(ve: Optional[float], er: Optional[float], kg_attr: Optional[float],
            weights: Sequence[float] = K_WEIGHTS) -> Optional[float]:
  """Eq. 3."""
  return weighted_mean(list(zip(weights, (ve, er, kg_attr))))


def jaccard(a: frozenset, b: frozenset) -> float:
  union = a | b
  return len(a & b) / len(union) if union else 0.0


def entity_relevance(question: str, description: str,
                     question_vector: Sequence[float],
                     description_vector: Sequence[float]) -> Tuple[float, float, float]:
  """(Jaccard, cosine, relevance) of one entity to the question (Eq. 2)."""
  similarity = jaccard(content_words(question), content_words(description))
  cos = cosine(question_vector, description_vector)
  return similarity, cos, (similarity + max(0.0, cos)) / 2


def ratio(found: float, total: int) -> Optional[float]:
  return found / total if total else None


# ----------------------------------------------------------------------------
# Linking and preparing one answer.


class LinkedAnswer(NamedTuple):
  row: SckInput
  intent: str
  intent_source: str  # "given" / "rules"
  intent_evidence: dict
  question_mentions: List[Mention]
  sentences: List[LinkedSentence]
  reference_mentions: Optional[List[Mention]]  # None: no reference answer


def link_answer_row(row: SckInput, gazetteer: Gazetteer) -> LinkedAnswer:
  if row.intent is not None:
    intent, source, evidence = row.intent, "given", {"given": row.intent}
  else:
    decision = classify_intent(row.question)
    intent, source = decision.intent, "rules"
    evidence = {"scores": decision.scores,
                "fired": [{"intent": i, "feature": f, "matched": m}
                          for i, f, m in decision.fired]}
  question_mentions = link_text(row.question, gazetteer)
  reference = (None if row.reference_answer is None
               else link_text(row.reference_answer, gazetteer))
  return LinkedAnswer(row, intent, source, evidence, question_mentions,
                      link_answer(row.answer, question_mentions, gazetteer), reference)


def answer_entity_ids(linked: LinkedAnswer) -> List[str]:
  """The verifiable entities of the answer: those its sentences name."""
  ids = set()
  for sentence in linked.sentences:
    for mention in sentence.mentions:
      ids.update(mention.ids)
  return sorted(ids)


def needed_entity_ids(linked: LinkedAnswer) -> List[str]:
  """Every entity whose record the answer's scores read."""
  ids = set(answer_entity_ids(linked))
  for sentence in linked.sentences:
    ids.update(sentence.topic)
  for mention in linked.question_mentions + (linked.reference_mentions or []):
    ids.update(mention.ids)
  return sorted(ids)


def row_key(row: SckInput) -> Tuple[str, int]:
  return row.source_file, row.source_line


def attribution_examples(linked: LinkedAnswer, records: Dict[str, EntityRecord],
                         predicate_labels: Dict[str, str]):
  """((sentence, SUPPORT or conflict index), AttributionExample) of an answer."""
  for index, sentence in enumerate(linked.sentences):
    ids = sentence_entities(sentence)
    triples = relevant_triples(ids, records)
    if triples:
      yield (index, SUPPORT), claim_example(
          verbalise(triples, records, predicate_labels), sentence.text)
    for number, conflict in enumerate(conflicting_claims(ids, records)):
      yield (index, number), claim_example(
          sentence.text, verbalise([conflict.asserted], records, predicate_labels))


def description_of(record: EntityRecord) -> str:
  """The text an entity is compared with the question by: its description, or
  its label where it has none."""
  return record.description or record.label


def embedding_texts(linked: LinkedAnswer, records: Dict[str, EntityRecord]):
  """(role, text) pairs to embed: the question, and each verifiable entity's
  description (role: the entity id)."""
  yield QUESTION, linked.row.question
  for entity_id in answer_entity_ids(linked):
    if entity_id in records:
      yield entity_id, description_of(records[entity_id])


# ----------------------------------------------------------------------------
# The scores of one answer, with their evidence.


def _entity_json(ids: Sequence[str], records: Dict[str, EntityRecord]) -> List[dict]:
  return [{"id": entity_id,
           "label": records[entity_id].label if entity_id in records else None}
          for entity_id in ids]


def _labels(triples: Sequence[Triple], records, predicate_labels) -> List[List[str]]:
  return [triple_labels(t, records, predicate_labels) for t in triples]


def _quoted(triple_names: Sequence[str]) -> str:
  return "(" + ", ".join(f"'{name}'" for name in triple_names) + ")"


def sentence_decision(triples: List[Triple], support: Optional[AttributionScore],
                      conflicts: List[Tuple[Conflict, Optional[AttributionScore]]],
                      records, predicate_labels) -> Tuple[int, str]:
  """(f, rationale) of a sentence (module docstring)."""
  asserted = [conflict for conflict, score in conflicts
              if score is not None and score.attributable]
  if asserted:
    parts = []
    for conflict in asserted:
      graph = ", ".join(_quoted(names) for names in
                        _labels(conflict.graph_values, records, predicate_labels))
      claim = _quoted(triple_labels(conflict.asserted, records, predicate_labels))
      parts.append(f"The sentence asserts {claim}, but the knowledge graph gives "
                   f"{graph}.")
    return CONTRADICTORY, " ".join(parts)
  named = ", ".join(_quoted(names) for names in _labels(triples, records,
                                                        predicate_labels))
  if triples and support is not None and support.attributable:
    return ATTRIBUTABLE, f"The triples {named} support the sentence."
  if triples:
    return EXTRAPOLATORY, (f"The triples {named} are about the sentence's entities "
                           "but do not settle it.")
  return EXTRAPOLATORY, "NA: no knowledge-graph statement links the sentence's entities."


def _score_value(score: Optional[AttributionScore]) -> Optional[float]:
  return None if score is None else score.nli_score


def _dumps(value) -> str:
  return json.dumps(value, ensure_ascii=False, sort_keys=True)


def answer_row(linked: LinkedAnswer, records: Dict[str, EntityRecord],
               predicate_labels: Dict[str, str],
               scores: Dict[Tuple[int, int], AttributionScore],
               vectors: Dict[str, Sequence[float]], scorer: str,
               k_weights: Sequence[float] = K_WEIGHTS) -> SckRow:
  """The scored answer, from its links, its entities' records, the scorer's
  answers to attribution_examples and the vectors of embedding_texts."""
  row = linked.row
  # Structure (§2.2).
  s, s_features = structure_score(row.answer, linked.intent)

  # Knowledge: VE (§2.1.1) over the answer's text entities.
  linked_entities = distinct_mentions(m for sentence in linked.sentences
                                      for m in sentence.mentions)
  unlinked = list(dict.fromkeys(name for sentence in linked.sentences
                                for name in sentence.unlinked))
  ve = ratio(len(linked_entities), len(linked_entities) + len(unlinked))
  text_entities = {
      "linked": [{"ids": list(ids), "labels": [records[i].label if i in records
                                                else None for i in ids]}
                 for ids in linked_entities],
      "unlinked": unlinked}

  # ER (§2.1.2) over the verifiable entities.
  er_entities = []
  question_vector = vectors.get(QUESTION)
  for entity_id in answer_entity_ids(linked):
    record = records.get(entity_id)
    if record is None or question_vector is None or entity_id not in vectors:
      continue
    similarity, cos, relevance = entity_relevance(
        row.question, description_of(record), question_vector, vectors[entity_id])
    er_entities.append({"id": entity_id, "label": record.label,
                        "description": description_of(record), "jaccard": similarity,
                        "cosine": cos, "relevance": relevance})
  er = ratio(sum(e["relevance"] for e in er_entities), len(er_entities))

  # KG-AttrScore (§2.1.3) per sentence.
  sentences, decisions = [], []
  for index, sentence in enumerate(linked.sentences):
    ids = sentence_entities(sentence)
    triples = relevant_triples(ids, records)
    conflicts = [(conflict, scores.get((index, number)))
                 for number, conflict in enumerate(conflicting_claims(ids, records))]
    support = scores.get((index, SUPPORT)) if triples else None
    decision, rationale = sentence_decision(triples, support, conflicts, records,
                                            predicate_labels)
    decisions.append(decision)
    sentences.append({
        "index": index,
        "text": sentence.text,
        "mentions": [{"surface": m.surface, "ids": list(m.ids)}
                     for m in sentence.mentions],
        "topic": ({"pronoun": sentence.pronoun, "ids": list(sentence.topic)}
                  if sentence.topic else None),
        "entities": _entity_json(ids, records),
        "triples": _labels(triples, records, predicate_labels),
        "triple_ids": [list(t) for t in triples],
        "nli_score": _score_value(support),
        "conflicts": [{"asserted": triple_labels(c.asserted, records, predicate_labels),
                       "graph": _labels(c.graph_values, records, predicate_labels),
                       "nli_score": _score_value(score)} for c, score in conflicts],
        "decision": DECISION_NAMES[decision],
        "f": decision,
        "rationale": rationale,
    })
  kg_attr = ratio(sum(decisions), len(decisions))
  k = k_score(ve, er, kg_attr, k_weights)

  # Content (§2.3).
  if linked.reference_mentions is not None:
    basis, expected = "reference", distinct_mentions(linked.reference_mentions)
  else:
    basis, expected = "question", distinct_mentions(linked.question_mentions)
  answer_ids = set(answer_entity_ids(linked))
  found = [any(i in answer_ids for i in ids) for ids in expected]
  c = ratio(sum(found), len(expected))
  if not expected:
    basis = "none"
  c_entities = [{"ids": list(ids), "labels": [records[i].label if i in records else None
                                              for i in ids], "found": hit}
                for ids, hit in zip(expected, found)]

  weights = INTENT_WEIGHTS[linked.intent]
  return SckRow(
      row.system_name, row.question, row.answer, row.reference_answer, linked.intent,
      linked.intent_source, _dumps(linked.intent_evidence),
      sck_score(linked.intent, s, c, k), s, c, k, *weights, _dumps(s_features),
      basis, _dumps(c_entities), ve, er, kg_attr, _dumps(text_entities),
      _dumps(er_entities), len(decisions), decisions.count(ATTRIBUTABLE),
      decisions.count(EXTRAPOLATORY), decisions.count(CONTRADICTORY),
      _dumps(sentences), scorer, row.source_file, row.source_line)


# ----------------------------------------------------------------------------
# The pipeline.


class _LinkAnswersFn(beam.DoFn):

  def process(self, row: SckInput, gazetteer: Gazetteer):
    yield row_key(row), link_answer_row(row, gazetteer)


def _entity_requests(keyed_linked):
  key, linked = keyed_linked
  for entity_id in needed_entity_ids(linked):
    yield entity_id, key


# The inputs of the join of entities with the answers that need them, in the
# order a key's values come out: its record first, then the answers' keys.
_ENTITY_JOIN_TAGS = ("record", "rows")


class _SendRecordsToRowsFn(beam.DoFn):
  """A shard of the entity join -> (answer key, record) for every answer that
  needs an entity the graph holds. An entity's askers are streamed from the
  runs behind its record, never listed: an entity that every answer names has
  as many of them as the run has answers."""

  def process(self, shard_runs):
    _, runs = shard_runs
    for _, tagged in merge_tagged_groups(runs):
      record = None
      for tag, value in tagged:
        if tag == 0:
          record = value if record is None else record  # the first, as before
        elif record is None:
          break  # an entity the graph does not hold: no record to send
        else:
          yield value, record


def _context(grouped):
  key, groups = grouped
  (linked,) = groups["linked"]
  records = {record.id: record for record in groups["records"]}
  return key, (linked, records)


class _ExamplesFn(beam.DoFn):

  def process(self, keyed_context, predicate_labels):
    key, (linked, records) = keyed_context
    for index, example in attribution_examples(linked, records, predicate_labels):
      yield (key, index), example


class _EmbeddingTextsFn(beam.DoFn):

  def process(self, keyed_context):
    key, (linked, records) = keyed_context
    for role, text in embedding_texts(linked, records):
      yield (key, role), text_example(text)


class _AnswerRowFn(beam.DoFn):
  """An answer's context, scores and vectors -> its SckRow; an answer one of
  whose sentence judgements could not be scored -> its dead letter (its
  KG-AttrScore, and so K and SCK, would be over the other sentences only)."""

  def __init__(self, scorer: str, k_weights: Sequence[float]):
    self._scorer = scorer
    self._k_weights = tuple(k_weights)

  def process(self, grouped, predicate_labels):
    _, groups = grouped
    (context,) = groups["context"]
    linked, records = context
    failure = first_failure(failure for _, failure in groups["failed"])
    if failure is not None:
      row = linked.row
      yield beam.pvalue.TaggedOutput("dead_letter", scoring_failed(
          row.source_file, row.source_line, "answer",
          f"a sentence judgement of the answer of system {row.system_name!r}",
          failure, {"system_name": row.system_name, "question": row.question,
                    "answer": row.answer}))
      return
    scores = dict(groups["scores"])
    vectors = dict(groups["vectors"])
    yield answer_row(linked, records, predicate_labels, scores, vectors, self._scorer,
                     self._k_weights)


def _rekey(keyed):
  (key, part), value = keyed
  return key, (part, value)


def _rekey_parts(parts, label: str):
  """_rekey over a PCollection, or over each of a tuple of them (the
  embedder's unmerged "scored"), kept apart: SpilledCoGroupByKey spills each
  part where it is made, where a Flatten of them would be held whole."""
  if not isinstance(parts, (tuple, list)):
    return parts | label >> beam.Map(_rekey)
  return tuple(part | f"{label}{index}" >> beam.Map(_rekey)
               for index, part in enumerate(parts))


class ScoreAnswers(beam.PTransform):
  """PCollection[SckInput] -> {"rows": PCollection[SckRow], "dead_letter":
  PCollection[DeadLetter] of answers a sentence judgement of which could not be
  scored (a hosted model refused it, or kept failing), "scorer_stats",
  "embedding_stats": PCollection[dict]}, given the knowledge graph of
  knowledge_graph.BuildKnowledgeGraph, a Scorer (transforms/scoring/) and a ModelHandler of
  sentence embeddings (models/embeddings.py) whose "scored" may be a tuple of
  PCollections (ScoreUniqueExamples with merge_scored=False); a model's
  examples are grouped in runs under `work_dir`."""

  def __init__(self, graph: Dict[str, object], scorer, embedding_transform,
               work_dir: str, k_weights: Sequence[float] = K_WEIGHTS):
    super().__init__()
    self._graph = graph
    self._scorer = scorer
    self._work_dir = work_dir
    self._embed = embedding_transform
    self._k_weights = tuple(k_weights)

  def expand(self, answers):
    graph = self._graph
    predicate_labels = beam.pvalue.AsSingleton(graph["predicate_labels"])
    linked = answers | "LinkEntities" >> beam.ParDo(
        _LinkAnswersFn(), beam.pvalue.AsSingleton(graph["gazetteer"]))
    records = (
        {"rows": linked | "RequestEntities" >> beam.FlatMap(_entity_requests),
         "record": graph["entities"]}
        | "JoinEntitiesByKey" >> SpillKeyedRuns(
            FileSystems.join(self._work_dir, "entities"), _ENTITY_JOIN_TAGS)
        | "SendRecordsToAnswers" >> beam.ParDo(_SendRecordsToRowsFn()))
    contexts = (
        {"linked": linked, "records": records}
        | "GroupRecordsByAnswer" >> SpilledCoGroupByKey(
            FileSystems.join(self._work_dir, "records"))
        | "MakeContexts" >> beam.Map(_context))
    scored = (contexts
              | "BuildSentenceExamples" >> beam.ParDo(_ExamplesFn(), predicate_labels)
              | "ScoreSentences" >> ScoreAttribution(self._scorer, self._work_dir))
    embedded = (contexts
                | "ListTextsToEmbed" >> beam.ParDo(_EmbeddingTextsFn())
                | "EmbedTexts" >> self._embed)
    rows = (
        {"context": contexts,
         "scores": scored["scored"] | "KeyScoresByAnswer" >> beam.Map(_rekey),
         "failed": scored["failed"] | "KeyFailuresByAnswer" >> beam.Map(_rekey),
         "vectors": _rekey_parts(embedded["scored"], "KeyVectorsByAnswer")}
        | "GroupScoresByAnswer" >> SpilledCoGroupByKey(
            FileSystems.join(self._work_dir, "answers"))
        | "CombineAnswerScores" >> beam.ParDo(
            _AnswerRowFn(self._scorer.describe()["name"], self._k_weights),
            predicate_labels).with_outputs("dead_letter", main="rows"))
    return {"rows": rows.rows, "dead_letter": rows.dead_letter,
            "scorer_stats": scored["stats"],
            "embedding_stats": embedded["stats"]}
