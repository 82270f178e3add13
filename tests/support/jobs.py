"""Running jobs in-process; SCORING_JOBS, each job that scores with the
flags that run it on its bundled example (all but the scorer's), and
scoring_job_flags, the same with a built corpus for audit."""
from tests.support.paths import EXAMPLES

_AGGREFACT = EXAMPLES / "agreement" / "aggrefact.csv"
SCORING_JOBS = {
    "evaluate": ("--predictions", EXAMPLES / "agreement" / "ratings.csv"),
    "agreement": ("--input", _AGGREFACT, "--format", "aggrefact"),
    "claims": ("--input", EXAMPLES / "claims" / "expertqa.jsonl", "--format", "expertqa"),
    "citations": ("--input", EXAMPLES / "citations" / "*.json"),
    "audit": ("--answers", EXAMPLES / "audit" / "answers.csv", "--candidates",
              EXAMPLES / "audit" / "runs" / "*.trec", "--topics",
              EXAMPLES / "audit" / "topics.tsv", "--corpus", EXAMPLES / "corpus"),
    "sck": ("--input", EXAMPLES / "sck" / "answers.csv", "--kg", EXAMPLES / "sck" / "kg.csv"),
}


def scoring_job_flags(job: str, corpus) -> list:
  """SCORING_JOBS[job] with the built `corpus` in place of examples/corpus
  (audit reads a built corpus; its example names the passages' sources)."""
  return [corpus if flag == EXAMPLES / "corpus" else flag for flag in SCORING_JOBS[job]]


def run_job(module, *args) -> int:
  """Runs a job's run(argv) in this process (FnApiRunner); returns its exit code."""
  return module.run([str(arg) for arg in args])
