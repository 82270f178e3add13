"""A flag that a run would leave unused is refused at launch (exit 2, nothing
written, the message naming the flag and why), never accepted and recorded as
if it had been applied: found by running each job with and without the flag
and comparing outputs (2026-12-04), every output file equal.

  * --threshold or --max_input_tokens with --decision decode (a decision is the
    generated text; each whole input is scored);
  * --max_input_tokens 0 (read as the default) or negative, in the jobs and in
    `autoais serve` (tests/unit/serve/test_serve_http.py);
  * evaluate's --join without --corpus (nothing is joined);
  * agreement's --bootstrap_samples and --seed where the format's groups are not
    data sets (the bootstrap is of the means over data sets), --calibrate_metric
    without --calibrate_on;
  * claims' --evidence_mode rerank with a scorer that never cuts an input;
  * audit's --top_k with --candidates_from article (the top-1 candidate's
    article, whatever K keeps);
  * training-data's --format where every --input entry names its own;
  * a negative --seed of any job with bootstrap intervals (refused at launch,
    not failing mid-run once the rows were scored);
  * --progress_interval negative (read as 0), NaN (a line on every turn) or
    infinite (failing in the progress thread);
  * a hosted scorer's --request_timeout past a day or infinite (the standard
    library's timeouts overflow), --retry_backoff NaN (taken as the longest);
  * an empty --positive_label (read as the flag left out);
  * --instances_per_request past the 512 examples of one call to the model
    (recorded, never reached);
  * training-data's --seed where nothing is drawn.
Second round, the same day: every hosted and local family, the run flags and
the Python API (tests/unit/test_api.py: load_scorer's threshold=, score_cache=
and large_model=, which its score() leaves unused). Third round (an audit of
every job's flags, 2026-12-04, evening):
  * --decision (even "threshold", its default) with any scorer but t5, the only
    one that decodes: refused as every flag a scorer does not take;
  * agreement's --calibrate_on with --decision decode (a decision is the
    generated text: the calibrated threshold's figures would be another rule's).
    With string-match it stays: its calibrated threshold keeps the 0/1 scores'
    decisions or makes every one Y or every one N, and docs/agreement.md's
    example shows it;
  * compare's --allow_changed_scorer true where both runs were scored alike.
"""
import pytest

from autoais.beam_jobs import agreement, audit, claims, compare, evaluate, training_data
from tests.support.jobs import run_job
from tests.support.paths import EXAMPLES

GOLD = EXAMPLES / "gold.jsonl"
PREDICTIONS = EXAMPLES / "predictions" / "retrieve-then-read.csv"
RATINGS = EXAMPLES / "agreement" / "ratings.csv"
AUDIT = EXAMPLES / "audit"


def _t5(model, *flags):
  return ("--scorer", "t5", "--model", model, *flags)


def _remote_ratings(*flags):
  """agreement's arguments on the example ratings with a hosted scorer at a
  port nothing listens on (the refusals come before any request)."""
  return ("--input", RATINGS, "--format", "ratings", "--scorer", "remote", "--endpoint",
          "http://127.0.0.1:9", *flags)


# case: (job, its arguments given the example corpus (c) and the tiny T5 (m),
# what the message says)
_CASES = {
    "decode-threshold": (evaluate, lambda c, m: (
        "--predictions", PREDICTIONS, "--corpus", c, "--gold", GOLD,
        *_t5(m, "--decision", "decode", "--threshold", "0.3")),
        "--threshold 0.3 is not used with --decision decode"),
    "decode-input-length": (evaluate, lambda c, m: (
        "--predictions", PREDICTIONS, "--corpus", c, "--gold", GOLD,
        *_t5(m, "--decision", "decode", "--max_input_tokens", "16")),
        "--max_input_tokens 16 is not used with --decision decode"),
    "input-length-zero": (evaluate, lambda c, m: (
        "--predictions", PREDICTIONS, "--corpus", c, "--gold", GOLD,
        *_t5(m, "--max_input_tokens", "0")), "--max_input_tokens must be positive, got 0"),
    "input-length-negative": (agreement, lambda c, m: (
        "--input", RATINGS, "--format", "ratings", *_t5(m, "--max_input_tokens", "-4")),
        "--max_input_tokens must be positive, got -4"),
    "join-without-corpus": (evaluate, lambda c, m: (
        "--predictions", EXAMPLES / "inline" / "rag-assistant.jsonl", "--gold", GOLD,
        "--join", "shuffle"), "--join shuffle chooses how predictions are joined to "
                              "--corpus: without a corpus"),
    "bootstrap-without-data-sets": (agreement, lambda c, m: (
        "--input", RATINGS, "--format", "ratings", "--bootstrap_samples", "7"),
        "--bootstrap_samples: the bootstrap resamples the means over data sets, and the "
        "groups of --format ratings are not data sets"),
    "seed-without-data-sets": (agreement, lambda c, m: (
        "--input", RATINGS, "--format", "ratings", "--seed", "5"),
        "--seed: the bootstrap resamples the means over data sets"),
    "calibrate-metric-without-calibration": (agreement, lambda c, m: (
        "--input", RATINGS, "--format", "ratings", "--calibrate_metric",
        "balanced_accuracy"), "--calibrate_metric is what the threshold chosen on "
                              "--calibrate_on maximises: give it"),
    "rerank-string-match": (claims, lambda c, m: (
        "--input", EXAMPLES / "claims" / "expertqa.jsonl", "--evidence_mode", "rerank"),
        "--evidence_mode rerank chooses evidence sentences for a claim whose input is "
        "longer than the model's, and string-match cuts no input"),
    "rerank-decode": (claims, lambda c, m: (
        "--input", EXAMPLES / "claims" / "expertqa.jsonl", "--evidence_mode", "rerank",
        *_t5(m, "--decision", "decode")),
        "and --decision decode scores each whole input: no claim would be reranked"),
    "top-k-of-articles": (audit, lambda c, m: (
        "--answers", AUDIT / "answers.csv", "--candidates", AUDIT / "runs" / "*.trec",
        "--topics", AUDIT / "topics.tsv", "--corpus", c, "--candidates_from", "article",
        "--top_k", "2"), "--top_k: with --candidates_from article"),
    "format-of-prefixed-inputs": (training_data, lambda c, m: (
        "--input", f"aggrefact:{EXAMPLES / 'agreement' / 'aggrefact.csv'}", "--family",
        "nli-classifier", "--format", "begin"),
        "--format begin: every --input entry names its own format"),
    "seed-of-nothing-drawn": (training_data, lambda c, m: (
        "--input", EXAMPLES / "agreement" / "aggrefact.csv", "--format", "aggrefact",
        "--family", "nli-classifier", "--validation_fraction", "0", "--test_fraction",
        "0", "--seed", "5"), "--seed draws the validation and test splits and the "
                             "negatives"),
    "negative-seed": (evaluate, lambda c, m: (
        "--predictions", PREDICTIONS, "--corpus", c, "--gold", GOLD, "--seed", "-1"),
        "--seed must be a non-negative integer"),
    "negative-seed-of-claims": (claims, lambda c, m: (
        "--input", EXAMPLES / "claims" / "expertqa.jsonl", "--seed", "-1"),
        "--seed must be a non-negative integer"),
    **{f"progress-interval-{value}": (claims, lambda c, m, value=value: (
        "--input", EXAMPLES / "claims" / "expertqa.jsonl", "--progress_interval", value),
        f"--progress_interval {float(value)}: seconds between progress lines, positive, "
        "or 0 for none") for value in ("nan", "-5", "inf")},
    "request-timeout-past-a-day": (agreement, lambda c, m: _remote_ratings(
        "--request_timeout", "1e10"),
        "--request_timeout must be positive and at most 86400 s"),
    "instances-past-a-call": (agreement, lambda c, m: _remote_ratings(
        "--instances_per_request", "600"),
        "--instances_per_request 600: from 1 to 512, the most examples of one call"),
    "decision-of-string-match": (evaluate, lambda c, m: (
        "--predictions", PREDICTIONS, "--corpus", c, "--gold", GOLD, "--decision",
        "threshold"), "--decision is for --scorer t5, not --scorer string-match (the "
                      "default): a flag the scorer does not take is refused"),
    "decision-of-remote": (agreement, lambda c, m: _remote_ratings(
        "--decision", "threshold"),
        "--decision is for --scorer t5, not --scorer remote"),
    "calibration-of-decode": (agreement, lambda c, m: (
        "--input", RATINGS, "--format", "ratings", "--calibrate_on", RATINGS,
        *_t5(m, "--decision", "decode")),
        "with --decision decode a decision is whether the generated text reads '1'"),
    "retry-backoff-nan": (agreement, lambda c, m: _remote_ratings(
        "--retry_backoff", "nan"),
        "--retry_backoff a number of seconds not negative"),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_flag_the_run_would_leave_unused_is_refused(case, example_corpus, tiny_t5,
                                                      tmp_path, capsys):
  job, arguments, message = _CASES[case]
  output = tmp_path / "out"
  assert run_job(job, *arguments(example_corpus, tiny_t5), "--output_dir", output) == 2
  assert message in capsys.readouterr().err
  assert not output.exists()


def test_an_empty_positive_label_is_refused(tiny_nli_classifier, tmp_path, capsys):
  """Read as the flag left out before: the head's own supporting label scored."""
  output = tmp_path / "out"
  assert run_job(agreement, "--input", RATINGS, "--format", "ratings", "--scorer",
                 "nli-classifier", "--model", tiny_nli_classifier, "--positive_label", "",
                 "--output_dir", output) == 2
  assert "--positive_label '': the head of --model" in capsys.readouterr().err
  assert not output.exists()


def test_a_negative_seed_of_compare_is_refused_at_launch(example_corpus, tmp_path, capsys):
  """Before, the bootstrap failed mid-run (exit 1), leaving compare.csv behind.
  And --allow_changed_scorer true beside two runs scored alike: it lets
  nothing through (the outputs were those of the run without it)."""
  run = tmp_path / "run"
  assert run_job(evaluate, "--predictions", PREDICTIONS, "--corpus", example_corpus,
                 "--gold", GOLD, "--bootstrap_samples", 20, "--output_dir", run) == 0
  output = tmp_path / "compare"
  assert run_job(compare, "--baseline", run, "--candidate", run, "--seed", -1,
                 "--output_dir", output) == 2
  assert "--seed must be a non-negative integer" in capsys.readouterr().err
  assert not output.exists()
  assert run_job(compare, "--baseline", run, "--candidate", run, "--allow_changed_scorer",
                 "true", "--output_dir", output) == 2
  assert ("--allow_changed_scorer true lets runs scored differently be compared, and "
          "these two were scored alike: drop it" in capsys.readouterr().err)
  assert not output.exists()
  assert run_job(compare, "--baseline", run, "--candidate", run, "--allow_changed_scorer",
                 "false", "--output_dir", output) == 0
