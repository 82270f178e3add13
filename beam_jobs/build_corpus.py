"""build-corpus: passages (Pyserini JSONL, or JSONL/Parquet with id,title,text) to
the sharded, id-sorted Parquet corpus that `evaluate` joins against.

    autoais build-corpus --input 'wiki/*.jsonl.gz' --output gs://bucket/corpus \
        --num_shards 256 [--row_group_size 32] [Beam options]
    python -m autoais.beam_jobs.build_corpus ...

Layout and join strategies: transforms/corpus/store.py. Lines that are not passages
(not JSON, no `id`, no `contents`/`title`+`text`, a repeated id) go to
`dead_letter.jsonl` with their file and line; `corpus.json`, written last,
records the shards, their sizes and the counts (read = written + dead-lettered),
and, under "articles", the article index shards (article key -> passage ids,
for `autoais audit --candidates_from article`).
"""
if __name__ == "__main__":
  # `python -m autoais.beam_jobs.build_corpus`: run the package module instead of defining this
  # one's classes a second time under __main__ (Beam pickles DoFns by reference).
  import sys
  from autoais.beam_jobs.build_corpus import run
  sys.exit(run())

import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import JobArguments, ViewsKept
from autoais.beam_jobs.running import run_job
from autoais.schemas.errors import ConfigError, require
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas import ArticleEntry, CorpusRecord
from autoais.transforms.corpus import store
from autoais.transforms.corpus.sources import check_corpus_file, read_corpus_source
from autoais.transforms.io.atomic import atomic_create
from autoais.transforms.io.dead_letters import WriteDeadLetters
from autoais.transforms.io.inputs import match_files
from autoais.transforms.io.counts import SumCounts
from autoais.transforms.rows.run_record import WriteManifest, utc_now, versions_and_timings
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.io.sorted_runs import SpillSortedRuns, merge_sorted_runs

OUTPUT_FILES = (store.MANIFEST, "dead_letter.jsonl")
DEFAULT_NUM_SHARDS = 64


def output_files(num_shards: int):
  """Every file build-corpus writes: the manifest, the dead letters, the
  passage shards and the article index shards."""
  return OUTPUT_FILES + tuple(
      name(shard, num_shards) for name in (store.shard_file_name,
                                           store.article_shard_file_name)
      for shard in range(num_shards))


CORPUS_KEY = ("id", "source_file", "source_line")
ARTICLE_KEY = ("article", "passage_id")


class BuildCorpusOptions(ViewsKept, PipelineOptions):

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "build-corpus")
    group.add_argument("--input", help="Passage files: path, glob or comma list "
                       "(.jsonl, .parquet; .gz allowed), local or gs://.")
    group.add_argument("--output", help="Corpus directory to write.")
    # No argparse default: the row-writing jobs' --num_shards (their row
    # tables' files, default 1) shares the name, and Beam gives every class
    # of a process one default (the API imports all jobs).
    group.add_argument("--num_shards", type=int,
                       help=f"Number of hash shards (default {DEFAULT_NUM_SHARDS}).")
    group.add_argument("--row_group_size", type=int,
                       default=store.DEFAULT_ROW_GROUP_SIZE,
                       help="Passages per Parquet row group; small groups make "
                       "point lookups read little (default %(default)s).")


class _WriteShardFn(beam.DoFn):

  def __init__(self, output_dir: str, num_shards: int, row_group_size: int):
    self._output_dir = output_dir
    self._num_shards = num_shards
    self._row_group_size = row_group_size

  def process(self, shard_runs):
    # Run files hold every shard's rows: they are deleted with the scratch
    # directory when the job completes, not here.
    shard, runs = shard_runs
    name = store.shard_file_name(shard, self._num_shards)
    path = FileSystems.join(self._output_dir, name)
    with atomic_create(path) as sink:
      writer = store.ShardWriter(sink, self._row_group_size)
      for record in merge_sorted_runs(runs, CorpusRecord, CORPUS_KEY):
        duplicate = writer.add(record)
        if duplicate is not None:
          yield beam.pvalue.TaggedOutput("dead_letter", duplicate)
      writer.close()
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    yield {"shard": shard, "path": name, "num_rows": writer.num_rows,
           "num_row_groups": writer.num_row_groups, "bytes": size}


class _WriteArticleShardFn(beam.DoFn):

  def __init__(self, output_dir: str, num_shards: int):
    self._output_dir = output_dir
    self._num_shards = num_shards

  def process(self, shard_runs):
    shard, runs = shard_runs
    name = store.article_shard_file_name(shard, self._num_shards)
    path = FileSystems.join(self._output_dir, name)
    with atomic_create(path) as sink:
      writer = store.ArticleShardWriter(sink)
      for entry in merge_sorted_runs(runs, ArticleEntry, ARTICLE_KEY):
        writer.add(entry)
      writer.close()
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    yield {"shard": shard, "path": name, "num_rows": writer.num_rows,
           "num_row_groups": writer.num_row_groups, "bytes": size}


class _CorpusManifest:
  """Builds corpus.json from the pipeline's counts and shard statistics."""

  def __init__(self, options: BuildCorpusOptions, inputs, started: float,
               started_at: str):
    self._num_shards = options.num_shards
    self._row_group_size = options.row_group_size
    self._inputs = list(inputs)
    self._started = started
    self._started_at = started_at

  def __call__(self, read_counts, shards, article_shards, dead):
    shards = sorted(shards, key=lambda s: s["shard"])
    article_shards = sorted(article_shards, key=lambda s: s["shard"])
    written = sum(s["num_rows"] for s in shards)
    indexed = sum(s["num_rows"] for s in article_shards)
    if indexed != written:
      raise RuntimeError(f"the article index holds {indexed} passages, the corpus "
                         f"{written}")
    read = read_counts.get("read", 0)
    dead = dead["passages"]
    counts = {"read": read, "written": written, "rejected": dead["rejected"],
              "reconciled": read == written + dead["rejected"],
              "by_reason": dead["by_reason"]}
    if not counts["reconciled"]:
      raise RuntimeError(f"corpus counts do not reconcile: {counts}")
    return {
        "format": store.FORMAT,
        "hash": store.HASH,
        "num_shards": self._num_shards,
        "row_group_size": self._row_group_size,
        "sort_key": "id",
        "num_passages": written,
        "total_bytes": sum(s["bytes"] for s in shards),
        "counts": counts,
        "inputs": self._inputs,
        "shards": shards,
        "articles": {
            "key": f"passage id up to the first '{store.ARTICLE_SEPARATOR}'",
            "hash": store.HASH,
            "num_shards": self._num_shards,
            "row_group_size": store.ARTICLE_ROW_GROUP_SIZE,
            "sort_key": ["article", "passage_id"],
            "num_entries": indexed,
            "total_bytes": sum(s["bytes"] for s in article_shards),
            "shards": article_shards,
        },
        **versions_and_timings(self._started, self._started_at),
    }


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the
  build-corpus steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(BuildCorpusOptions)
  require(options, "input", "output")
  if options.num_shards is None:
    options.num_shards = DEFAULT_NUM_SHARDS
  if options.num_shards < 1 or options.row_group_size < 1:
    raise ConfigError("--num_shards and --row_group_size must be positive")
  inputs = match_files(options.input)
  if not inputs:
    raise ConfigError(f"--input {options.input!r} matches no files")
  output = OutputDir("build-corpus", options.output, output_files(options.num_shards),
                     reads={"--input": inputs}, flag="--output")
  output.check()
  for path in inputs:
    check_corpus_file(path)

  started, started_at = time.time(), utc_now()
  work_dir = output.claim()

  read = pipeline | "ReadPassages" >> ReadRecords(inputs, read_corpus_source)
  shards = (
      read.records
      | "SpillShardRuns" >> SpillSortedRuns(
          FileSystems.join(work_dir, "corpus"), CorpusRecord, CORPUS_KEY,
          shard_of=store.CorpusRecordShard(options.num_shards))
      | "GroupRunsByShard" >> beam.GroupByKey()
      | "WriteShards" >> beam.ParDo(_WriteShardFn(
          options.output, options.num_shards, options.row_group_size)).with_outputs(
              "dead_letter", main="shards"))
  article_shards = (
      read.records
      | "KeyByArticle" >> beam.Map(store.article_entry)
      | "SpillArticleRuns" >> SpillSortedRuns(
          FileSystems.join(work_dir, "articles"), ArticleEntry, ARTICLE_KEY,
          shard_of=store.ArticleEntryShard(options.num_shards))
      | "GroupArticleRunsByShard" >> beam.GroupByKey()
      | "WriteArticleShards" >> beam.ParDo(_WriteArticleShardFn(
          options.output, options.num_shards)))
  dead = ({"passages": (read.dead_letter, shards.dead_letter)}
          | "WriteDeadLetters" >> WriteDeadLetters(
              FileSystems.join(options.output, "dead_letter.jsonl"), work_dir))
  _ = pipeline | "WriteCorpusManifest" >> WriteManifest(
      FileSystems.join(options.output, store.MANIFEST),
      _CorpusManifest(options, inputs, started, started_at),
      {
          "read_counts": read.counts | "SumReadCounts" >> beam.CombineGlobally(
              SumCounts()),
          "shards": shards.shards | "ListShards" >> beam.combiners.ToList(),
          "article_shards": article_shards | "ListArticleShards" >> (
              beam.combiners.ToList()),
          "dead": dead,
      },
      work_dir=work_dir)
  return output


def run(argv=None) -> int:
  return run_job("build-corpus", argv, BuildCorpusOptions, build_pipeline)

