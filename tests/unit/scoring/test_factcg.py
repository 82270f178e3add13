"""`--scorer factcg` (issue 50, item 2): FactCG-DeBERTa scored as FactCG's
`Inferencer` scores it.

Scores equal the reference's own Inferencer (../shared/reference/factcg, run
as it is: tests/support/factcg_reference.py) on the same tiny random
checkpoint in the published layout (tests/support/factcg_models.py): short
pairs, a document of three chunks, a first sentence past the chunk size (the
reference's empty first chunk), a chunk past 2048 tokens (cut at its end),
line breaks and braces; in-process, chunk for chunk and token for token, and
through `agreement` end to end. Every job that scores takes `--scorer factcg`
and refuses `--max_input_tokens` with it; `autoais serve` serves it; a blank
document fails its row only; other checkpoints are refused.
"""
import csv
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("nltk")

from autoais.beam_jobs import agreement  # pylint: disable=wrong-import-position
from autoais.models.factcg import TEMPLATE, load_factcg  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample, ScoringFailure  # pylint: disable=wrong-import-position
from tests.support.factcg_models import build_tiny_factcg  # pylint: disable=wrong-import-position
from tests.support.factcg_reference import reference_factcg  # pylint: disable=wrong-import-position
from tests.support.jobs import SCORING_JOBS, run_job  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position

AGGREFACT = EXAMPLES / "agreement" / "aggrefact.csv"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
  return build_tiny_factcg(str(tmp_path_factory.mktemp("factcg")), example_texts())


@pytest.fixture(scope="module")
def ours(model_dir):
  return load_factcg(model_dir, token_budget=4096)


def _pairs():
  """(document, claim): passages and claims, line breaks and braces; a
  document of 24 passages (two chunks); a first sentence of 560 words of
  several pieces each (past 550 words and 2048 tokens: an empty chunk before
  it, and its input cut)."""
  texts = example_texts()
  pairs = [(texts[i], texts[i + 1][:90]) for i in range(0, 12, 2)]
  return pairs + [
      ("A short premise.", "A short claim."),
      ("Line one.\nLine two {doc} and {0}.\n\nLine three.", "A claim with {claim}."),
      (" ".join(texts[:24]), "The answer to the question is yes"),
      (" ".join(f"q{i}z" for i in range(560)) + ". Then more.", "More")]


def test_scores_equal_the_reference_chunk_for_chunk(ours, model_dir, monkeypatch):
  reference = reference_factcg(monkeypatch, model_dir, ours.splitter.split)
  pairs = _pairs()
  examples = [AttributionExample(p, h, "", "") for p, h in pairs]
  scores = ours.score(examples, 0.5)
  # A pair a call: the reference pads a call's chunks to its longest (2048).
  expected = np.array([reference.batch_inference([p], [h])[0][0] for p, h in pairs])
  got = np.array([score.nli_score for score in scores])
  chunks = [reference.chunking_src(p) for p, _ in pairs]
  print(f"factcg: max abs diff {np.abs(got - expected).max():.2e} over {len(pairs)} pairs, "
        f"{sum(map(len, chunks))} chunks, scores {got.min():.3f} to {got.max():.3f}")
  np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
  assert [ours.chunks(p) for p, _ in pairs] == chunks
  assert [len(c) for c in chunks[-2:]] == [2, 3] and chunks[-1][0] == ""
  assert [s.n_windows for s in scores] == [len(c) for c in chunks]
  assert [s.truncated for s in scores] == [len(c) > 1 for c in chunks]
  assert len({round(value, 3) for value in expected}) > 5  # not a constant model
  # The inputs are the reference tokenizer's own (cut at 2048 tokens).
  inputs = [w["input_ids"] for item in ours.encode_many(examples) for w in item.windows]
  theirs = []
  for (_, claim), pieces in zip(pairs, chunks):
    batch = reference.tokenize(pieces, [claim] * len(pieces))
    theirs += [ids[:sum(mask)] for ids, mask in zip(batch["input_ids"].tolist(),
                                                    batch["attention_mask"].tolist())]
  assert inputs == theirs and max(map(len, inputs)) == 2048


def test_agreement_end_to_end_equals_the_reference(ours, model_dir, tmp_path, monkeypatch):
  output = tmp_path / "agreement"
  assert run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact",
                 "--output_dir", output, "--scorer", "factcg", "--model", model_dir,
                 "--score_cache", tmp_path / "cache", "--bootstrap_samples", 20) == 0
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  assert scorer["name"] == scorer["family"] == "factcg"
  assert scorer["template"] == TEMPLATE and scorer["chunk_words"] == 550
  assert scorer["max_input_tokens"] == 2048 and scorer["score_cache_key"]
  reference = reference_factcg(monkeypatch, model_dir, ours.splitter.split)
  with open(AGGREFACT, newline="", encoding="utf-8") as f:
    items = list(csv.DictReader(f))
  with open(output / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  expected = reference.batch_inference([i["doc"] for i in items], [i["claim"] for i in items])[0]
  np.testing.assert_allclose(sorted(float(row["nli_score"]) for row in rows),
                             sorted(expected), rtol=0, atol=1e-5)


def test_every_job_that_scores_takes_factcg_and_refuses_an_input_length(model_dir, tmp_path,
                                                                        capsys):
  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.registry import SERVED  # pylint: disable=import-outside-toplevel
  assert "factcg" in SERVED
  for job, flags in SCORING_JOBS.items():
    module = importlib.import_module(JOBS[job])
    assert run_job(module, *flags, "--output_dir", tmp_path / job, "--scorer", "factcg",
                   "--model", model_dir, "--max_input_tokens", 64) == 2, job
    err = capsys.readouterr().err
    assert ("--max_input_tokens is for --scorer t5 / nli-classifier / minicheck / "
            "lettucedetect, not --scorer factcg") in err, (job, err)
    assert not (tmp_path / job).exists()


def test_serve_scores_as_in_process_and_refuses_a_blank_premise(ours, model_dir):
  from autoais.beam_jobs.serve import load_served_model, parse_args  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import BadRequest  # pylint: disable=import-outside-toplevel
  from autoais.serve.batching import Limits  # pylint: disable=import-outside-toplevel
  served, description = load_served_model(
      parse_args(["--scorer", "factcg", "--model", model_dir]), model_dir, None)
  assert description["scorer"] == "factcg" and description["template"] == TEMPLATE
  examples = [AttributionExample(p, h, "", "") for p, h in _pairs()[:8]]
  encoded = served.encode(examples, Limits(64, 10 ** 6, 8, 512))
  np.testing.assert_allclose([s.nli_score for s in served.score(encoded)],
                             [s.nli_score for s in ours.score(examples, 0.5)],
                             rtol=0, atol=1e-6)
  with pytest.raises(BadRequest, match="instance 1: factcg: the document is blank"):
    served.encode(examples[:1] + [AttributionExample(" \n", "claim", "", "")],
                  Limits(64, 10 ** 6, 8, 512))


def _changed(source, target, **config):
  shutil.copytree(source, target)
  path = target / "config.json"
  path.write_text(json.dumps(dict(json.loads(path.read_text()), **config)))
  return target


def test_a_blank_document_fails_its_row_and_other_checkpoints_are_refused(
    ours, model_dir, tmp_path, capsys):
  scores = ours.score([AttributionExample("", "claim", "", ""),
                       AttributionExample("A premise.", "claim", "", "")], 0.5)
  assert isinstance(scores[0], ScoringFailure) and "the document is blank" in scores[0].message
  assert scores[1].nli_score == pytest.approx(ours.score(
      [AttributionExample("A premise.", "claim", "", "")], 0.5)[0].nli_score, abs=1e-6)
  out = tmp_path / "out"

  def run(model, *extra):
    return run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact",
                   "--output_dir", out, "--scorer", "factcg", "--model", model, *extra)

  from pathlib import Path  # pylint: disable=import-outside-toplevel
  other = _changed(Path(model_dir), tmp_path / "other",
                   architectures=["RobertaForSequenceClassification"])
  assert run(other) == 2
  assert "not a two-label DebertaV2ForSequenceClassification" in capsys.readouterr().err
  three = _changed(Path(model_dir), tmp_path / "three", id2label={"0": "a", "1": "b", "2": "c"})
  assert run(three) == 2
  assert "not a two-label" in capsys.readouterr().err
  assert run(model_dir, "--decision", "decode") == 2
  assert "--decision is for --scorer t5, not --scorer factcg" in capsys.readouterr().err
  assert run(model_dir, "--chunk_size", "100") == 2
  assert "--chunk_size is for --scorer minicheck / llm-judge" in capsys.readouterr().err
  assert not out.exists()
