"""The `autoais` command: one subcommand per job.

    autoais build-corpus --input GLOB --output DIR [--num_shards N] [Beam options]
    autoais evaluate --predictions PATH --corpus DIR [--gold SRC] --output_dir DIR ...
    autoais ais-annotations --input 'ann_*.csv' --output_dir DIR [--alpha 0.01]
    autoais agreement --input PATH --format FORMAT --output_dir DIR [scorer flags] ...
    autoais claims --input PATH --output_dir DIR [--format expertqa|jsonl] ...
    autoais citations --input 'runs/*.json' --output_dir DIR [scorer flags] ...
    autoais audit --answers PATH --candidates PATH --corpus DIR --output_dir DIR ...
    autoais sck --input PATH --kg 'kg/*.parquet' --output_dir DIR [scorer flags] ...
    autoais training-data --input [FORMAT:]PATH --family t5|nli-classifier --output_dir DIR
    autoais finetune --train DIR --family t5|nli-classifier --base DIR --output_dir OUT
    autoais serve --model DIR [--host 127.0.0.1] [--port 8080]   (the NLI model over HTTP)

`autoais JOB --help` lists a job's own flags, then the scorer flags (jobs that
score) and the run flags; `autoais JOB --help_beam`, Beam's pipeline options
(--runner, Dataflow's, Flink's, ...). `autoais --version` prints the version.
"""
import importlib
import sys

JOBS = {
    "build-corpus": "autoais.beam_jobs.build_corpus",
    "evaluate": "autoais.beam_jobs.evaluate",
    "ais-annotations": "autoais.beam_jobs.ais_annotations",
    "agreement": "autoais.beam_jobs.agreement",
    "claims": "autoais.beam_jobs.claims",
    "citations": "autoais.beam_jobs.citations",
    "audit": "autoais.beam_jobs.audit",
    "sck": "autoais.beam_jobs.sck",
    "compare": "autoais.beam_jobs.compare",
    "training-data": "autoais.beam_jobs.training_data",
    "finetune": "autoais.beam_jobs.finetune",
    "serve": "autoais.beam_jobs.serve",
}


def main(argv=None) -> int:
  argv = sys.argv[1:] if argv is None else list(argv)
  usage = f"{__doc__.strip()}\n\njobs: {', '.join(JOBS)}"
  if argv and argv[0] == "--version":
    # The installed distribution's version, which setup.py takes from
    # autoais.__version__ (a layer above this one), with what run.json records.
    from autoais.transforms.rows.run_record import software_versions  # pylint: disable=import-outside-toplevel
    versions = software_versions()
    print(f"autoais {versions.pop('autoais_beam')} (" +
          ", ".join(f"{name} {value}" for name, value in versions.items()) + ")")
    return 0
  if argv and argv[0] in ("-h", "--help"):
    print(usage)
    return 0
  if not argv or argv[0] not in JOBS:
    # No job named, or one there is none of: the usage, as an error.
    if argv:
      print(f"autoais: unknown job {argv[0]!r}", file=sys.stderr)
    print(usage, file=sys.stderr)
    return 2
  job = importlib.import_module(JOBS[argv[0]])
  return job.run(argv[1:])


if __name__ == "__main__":
  raise SystemExit(main())
