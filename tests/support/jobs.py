"""Running jobs in-process; SCORING_JOBS, each job that scores with the
flags that run it on its bundled example (all but the scorer's)."""
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


def run_job(module, *args) -> int:
  """Runs a job's run(argv) in this process (FnApiRunner); returns its exit code."""
  return module.run([str(arg) for arg in args])
