"""`--scorer hhem` (issue 50, item 1): Vectara's HHEM-2.1-open from its
checkpoint as published, without its remote code.

Scores equal the reference's own code (../shared/reference/hhem, run as it is:
tests/support/hhem_reference.py) on the same tiny random checkpoint in the
published layout (tests/support/hhem_models.py), pairs short and one past 512
tokens, in-process and through `agreement` end to end; every job that scores
takes `--scorer hhem` and refuses `--max_input_tokens` with it (the whole input
is scored); `autoais serve` serves it; a checkpoint that is not HHEM's, a
foundation without config.json and weights of another shape are refused.
"""
import csv
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from autoais.beam_jobs import agreement  # pylint: disable=wrong-import-position
from autoais.models.hhem import load_hhem  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample  # pylint: disable=wrong-import-position
from autoais.schemas.errors import ModelError  # pylint: disable=wrong-import-position
from tests.support.hhem_models import PROMPT, build_tiny_hhem  # pylint: disable=wrong-import-position
from tests.support.hhem_reference import reference_hhem  # pylint: disable=wrong-import-position
from tests.support.jobs import SCORING_JOBS, run_job  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position

AGGREFACT = EXAMPLES / "agreement" / "aggrefact.csv"


@pytest.fixture(scope="module")
def hhem(tmp_path_factory):
  """(foundation directory, HHEM directory)."""
  return build_tiny_hhem(str(tmp_path_factory.mktemp("hhem")), example_texts())


def _pairs():
  """(premise, hypothesis): passages and claims; line breaks, braces and a
  `<pad>` in the texts; one premise of a dozen passages (past 512 tokens)."""
  texts = example_texts()
  pairs = [(texts[i], texts[i + 1][:90]) for i in range(0, 16, 2)]
  pairs += [("A short premise.", "A short claim."),
            ("Line one.\nLine two {text2} and {0}.\n\n", "A claim with {braces}."),
            ("<pad> padded </s> text", "Hypothesis: x"),
            (" ".join(texts[:12]), "The answer to the question is yes")]
  return pairs


def test_scores_equal_the_reference_past_512_tokens_too(hhem, monkeypatch):
  foundation, model = hhem
  ours = load_hhem(model, tokenizer_path=foundation, token_budget=1024)
  reference = reference_hhem(monkeypatch, model, foundation)
  pairs = _pairs()
  scores = ours.score([AttributionExample(p, h, "", "") for p, h in pairs], 0.5)
  expected = reference.predict(pairs).numpy().astype(np.float64)
  got = np.array([score.nli_score for score in scores])
  lengths = [len(reference.tokenzier(PROMPT.format(text1=p, text2=h))["input_ids"])
             for p, h in pairs]
  print(f"hhem: max abs diff {np.abs(got - expected).max():.2e} over {len(pairs)} pairs "
        f"of {min(lengths)} to {max(lengths)} tokens")
  np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
  assert max(lengths) > 512  # scored whole, as the reference scores it
  assert all((s.n_windows, s.truncated) == (1, False) for s in scores)
  assert [s.attributable for s in scores] == [value > 0.5 for value in got]
  assert len({round(value, 3) for value in expected}) > 5  # not a constant model
  # The inputs are the reference tokenizer's own encodings of HHEM's prompt.
  assert [pair.windows[0]["input_ids"] for pair in ours.encode_many(
      [AttributionExample(p, h, "", "") for p, h in pairs])] == [
          reference.tokenzier(PROMPT.format(text1=p, text2=h))["input_ids"]
          for p, h in pairs]


def test_agreement_end_to_end_equals_the_reference(hhem, tmp_path, monkeypatch):
  foundation, model = hhem
  output = tmp_path / "agreement"
  assert run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact",
                 "--output_dir", output, "--scorer", "hhem", "--model", model,
                 "--tokenizer", foundation, "--score_cache", tmp_path / "cache",
                 "--bootstrap_samples", 20) == 0
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  assert scorer["name"] == scorer["family"] == "hhem"
  assert scorer["prompt"] == PROMPT and scorer["input_length"] == "whole"
  assert scorer["foundation"] == foundation and scorer["score_cache_key"]
  reference = reference_hhem(monkeypatch, model, foundation)
  with open(AGGREFACT, newline="", encoding="utf-8") as f:
    pairs = [(item["doc"], item["claim"]) for item in csv.DictReader(f)]
  with open(output / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  np.testing.assert_allclose(sorted(float(row["nli_score"]) for row in rows),
                             sorted(reference.predict(pairs).tolist()), rtol=0, atol=1e-5)


def _changed(source, target, **config):
  shutil.copytree(source, target)
  path = target / "config.json"
  path.write_text(json.dumps(dict(json.loads(path.read_text()), **config)))
  return target


def test_every_job_that_scores_takes_hhem_and_refuses_an_input_length(hhem, tmp_path,
                                                                      capsys):
  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.registry import SERVED  # pylint: disable=import-outside-toplevel
  foundation, model = hhem
  assert "hhem" in SERVED
  for job, flags in SCORING_JOBS.items():
    module = importlib.import_module(JOBS[job])
    assert run_job(module, *flags, "--output_dir", tmp_path / job, "--scorer", "hhem",
                   "--model", model, "--tokenizer", foundation,
                   "--max_input_tokens", 64) == 2, job
    err = capsys.readouterr().err
    assert ("--max_input_tokens is for --scorer t5 / nli-classifier / minicheck / "
            "lettucedetect, not "
            "--scorer hhem") in err, (job, err)
    assert not (tmp_path / job).exists()


def test_serve_scores_as_in_process(hhem, tmp_path):
  from autoais.beam_jobs.serve import load_served_model, parse_args  # pylint: disable=import-outside-toplevel
  from autoais.serve.batching import Limits  # pylint: disable=import-outside-toplevel
  foundation, model = hhem
  # Without --tokenizer: the foundation config.json names (here a directory).
  named = str(_changed(model, tmp_path / "named", foundation=foundation))
  served, description = load_served_model(
      parse_args(["--scorer", "hhem", "--model", named]), named, None)
  assert description["scorer"] == "hhem" and description["prompt"] == PROMPT
  assert description["foundation"] == foundation
  examples = [AttributionExample(p, h, "", "") for p, h in _pairs()]
  encoded = served.encode(examples, Limits(64, 10 ** 6, 8, 512))
  ours = load_hhem(model, tokenizer_path=foundation)
  np.testing.assert_allclose([s.nli_score for s in served.score(encoded)],
                             [s.nli_score for s in ours.score(examples, 0.5)],
                             rtol=0, atol=1e-6)


def test_refusals(hhem, tmp_path, capsys):
  foundation, model = hhem
  out = tmp_path / "out"

  def run(model_dir, *extra):
    return run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact",
                   "--output_dir", out, "--scorer", "hhem", "--model", model_dir, *extra)

  other = _changed(model, tmp_path / "other", architectures=["T5ForTokenClassification"])
  assert run(other, "--tokenizer", foundation) == 2
  assert "do not name HHEMv2ForSequenceClassification" in capsys.readouterr().err
  bare = tmp_path / "bare"
  shutil.copytree(foundation, bare)
  (bare / "config.json").unlink()
  assert run(model, "--tokenizer", bare) == 2
  assert "no config.json (HHEM's shape is its foundation's)" in capsys.readouterr().err
  assert run(model, "--tokenizer", foundation, "--decision", "decode") == 2
  assert "--decision is for --scorer t5, not --scorer hhem" in capsys.readouterr().err
  assert run(model, "--tokenizer", foundation, "--dtype", "float16") == 2
  assert not out.exists()
  # Weights of another shape than the foundation's, found when they load.
  wider = _changed(foundation, tmp_path / "wider", d_model=48)
  with pytest.raises(ModelError, match="not those of a T5ForTokenClassification"):
    load_hhem(model, tokenizer_path=str(wider))
