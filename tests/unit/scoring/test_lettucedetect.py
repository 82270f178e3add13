"""`--scorer lettucedetect` (issue 50, item 3): LettuceDetect's token classifier
over its prompt, chunks of passages, per-token probabilities maxed over the
chunks, unsupported spans, and the row's score.

Scores and spans equal the reference's own TransformerDetector
(../shared/reference/lettucedetect, run as it is:
tests/support/lettucedetect_reference.py) on the same tiny random
ModernBertForTokenClassification in the published layout
(tests/support/lettucedetect_models.py): answers to questions in one chunk,
passages grouped into several chunks under a short input length, text
without a question, another language; the score is one minus the largest
unsupported probability of the answer's tokens (the reference's per-token
probabilities, its trailing [SEP] aside). Every job that scores takes
`--scorer lettucedetect`; a checkpoint that is not a two-label token
classifier is refused. agreement and evaluate write each row's spans to
spans.jsonl (one run of each, its outputs read by several tests).
"""
import csv
import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from autoais.beam_jobs import agreement  # pylint: disable=wrong-import-position
from autoais.models.lettucedetect import checked_text, load_lettucedetect  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample, AttributionScore, ScoringFailure  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.examples import qa_example, qa_hypothesis  # pylint: disable=wrong-import-position
from tests.support import hallucination_sets as sets  # pylint: disable=wrong-import-position
from tests.support.files import read_jsonl  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.lettucedetect_models import build_tiny_lettucedetect  # pylint: disable=wrong-import-position
from tests.support.lettucedetect_reference import reference_detector  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position

AGGREFACT = EXAMPLES / "agreement" / "aggrefact.csv"
RAGTRUTH = EXAMPLES / "agreement" / "ragtruth" / "response.jsonl"
RATINGS = EXAMPLES / "agreement" / "ratings.csv"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  return build_tiny_lettucedetect(str(tmp_path_factory.mktemp("lettucedetect")),
                                  example_texts())


def _passages():
  return [json.loads(line)["contents"] for line in
          (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]


def _qa():
  """(passages, question, answer): one passage each, answers of a word to a
  sentence, one with a leading space and a line break."""
  passages, gold = _passages(), read_jsonl(EXAMPLES / "gold.jsonl")
  cases = [([passages[i]], g["question"], g["answer"][0]) for i, g in enumerate(gold[:8])]
  cases += [([passages[9]], gold[1]["question"], passages[9][40:160]),
            ([passages[3]], "why?", " It stands on\nthe border, in 1953.")]
  return cases


def _reference_result(reference, passages, question, answer):
  """(score, spans) of the reference: one minus its largest token probability
  (its last token is the trailing [SEP], which carries no characters)."""
  tokens = reference.predict(passages, answer, question, output_format="tokens")
  spans = reference.predict(passages, answer, question, output_format="spans")
  assert tokens[-1]["token"] == "[SEP]"
  return 1.0 - max(t["prob"] for t in tokens[:-1]), [
      (s["start"], s["end"], s["confidence"]) for s in spans]


def _ours(model, passages, question, answer):
  example = AttributionExample(" ".join(passages), qa_hypothesis(question, answer)
                               if question is not None else answer, answer, "")
  found = model.score([example], passages_of=lambda _: passages)[0]
  assert isinstance(found, AttributionScore)
  return found


def _compare(cases, ours, reference, label):
  got, expected, spans = [], [], 0
  for passages, question, answer in cases:
    score, reference_spans = _reference_result(reference, passages, question, answer)
    found = _ours(ours, passages, question, answer)
    got.append(found.nli_score)
    expected.append(score)
    assert [(s.start, s.end) for s in found.spans] == [s[:2] for s in reference_spans]
    np.testing.assert_allclose([s.probability for s in found.spans],
                               [s[2] for s in reference_spans], rtol=0, atol=1e-5)
    spans += len(found.spans)
  diff = np.abs(np.array(got) - np.array(expected)).max()
  print(f"lettucedetect {label}: max abs score diff {diff:.2e} over {len(cases)} "
        f"answers, {spans} spans identical")
  np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
  return got, spans


def test_scores_and_spans_equal_the_reference(checkpoint, monkeypatch):
  ours = load_lettucedetect(checkpoint, token_budget=4096)
  reference = reference_detector(monkeypatch, checkpoint)
  got, spans = _compare(_qa(), ours, reference, "qa, one chunk")
  assert spans > 3 and len({round(v, 3) for v in got}) > 5  # spans found, scores spread
  # In one call, padded into batches: the same scores and spans.
  together = ours.score([AttributionExample(p[0], qa_hypothesis(q, a), a, "")
                          for p, q, a in _qa()])
  np.testing.assert_allclose([found.nli_score for found in together], got,
                             rtol=0, atol=1e-5)
  assert [[s[:2] for s in found.spans] for found in together] == [
      [s[:2] for s in _ours(ours, *case).spans] for case in _qa()]
  # Text without a question: the prompt without one, as the reference's.
  _compare([(_passages()[:2], None, "Mount Everest is in Nepal, said to be tall.")],
           ours, reference, "no question")


def test_chunks_of_passages_equal_the_reference(checkpoint, monkeypatch):
  ours = load_lettucedetect(checkpoint, max_input_tokens=400, token_budget=4096)
  reference = reference_detector(monkeypatch, checkpoint, max_length=400)
  passages, gold = _passages(), read_jsonl(EXAMPLES / "gold.jsonl")
  cases = [(passages[:6], gold[0]["question"], "Mount Everest, in the Himalayas of Nepal."),
           (passages[4:12], gold[1]["question"], "Leonardo da Vinci painted it in 1503."),
           (passages[:3] + [passages[3] * 6], gold[2]["question"], "Au, from aurum")]
  _compare(cases, ours, reference, "several chunks")
  found = _ours(ours, *cases[0])
  assert found.n_windows == len(ours.chunks(passages[:6], gold[0]["question"], 12)) > 1
  assert _ours(ours, *cases[2]).truncated  # a passage alone past the input length


def test_another_language_equals_the_reference(checkpoint, monkeypatch):
  ours = load_lettucedetect(checkpoint, language="de", token_budget=4096)
  reference = reference_detector(monkeypatch, checkpoint, lang="de")
  _compare(_qa()[:3], ours, reference, "de")


def test_the_question_and_answer_of_an_example(checkpoint):
  from autoais.models.lettucedetect import PROMPTS  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.names import LETTUCEDETECT_LANGUAGES  # pylint: disable=import-outside-toplevel
  assert tuple(PROMPTS) == LETTUCEDETECT_LANGUAGES  # --language's choices: the prompts
  passage = _passages()[0]
  from autoais.transforms.corpus.passages import parse_passage  # pylint: disable=import-outside-toplevel
  example = qa_example("who said 'yes' is 'no'?", "it is 'x'", parse_passage(passage))
  assert checked_text(example) == ("who said 'yes' is 'no'?", "it is 'x'")
  claim = AttributionExample(passage, "A claim.", "A claim.", passage)
  assert checked_text(claim) == (None, "A claim.")
  # A question carried apart (RAGTruth's QA): the hypothesis is the text checked.
  asked = claim._replace(question="what is it?")
  assert checked_text(asked) == ("what is it?", "A claim.")
  # The key of an example: its question in it where it has one, the key it
  # always had where it has none (the score cache's entries stay valid).
  from autoais.transforms.scoring.examples import digest_of, example_digest  # pylint: disable=import-outside-toplevel
  assert digest_of(claim) == example_digest(passage, "A claim.")
  assert len({digest_of(claim), digest_of(asked),
              digest_of(claim._replace(question="why?"))}) == 3
  model = load_lettucedetect(checkpoint)
  found = model.score([claim, AttributionExample(passage, "", "", "")], 0.5)
  assert isinstance(found[1], ScoringFailure) and "the answer has 0 tokens" in found[1].message
  assert found[0].attributable == (found[0].nli_score > 0.5)


def test_agreement_end_to_end_with_spans(checkpoint, tmp_path):
  output = tmp_path / "agreement"
  assert run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact",
                 "--output_dir", output, "--scorer", "lettucedetect", "--model", checkpoint,
                 "--score_cache", tmp_path / "cache", "--bootstrap_samples", 20) == 0
  record = json.loads((output / "run.json").read_text())
  scorer = record["scorer"]
  assert scorer["name"] == scorer["family"] == "lettucedetect"
  assert scorer["language"] == "en" and scorer["max_input_tokens"] == 4096
  # spans.jsonl: a line per item, in the rows' order, each span's characters
  # those of the text checked, with its probability; rows and lines reconcile.
  lines = [json.loads(line) for line in (output / "spans.jsonl").read_text().splitlines()]
  assert record["counts"]["span_rows"] == record["counts"]["items"] == len(lines) > 0
  with open(output / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  assert [line["item_id"] for line in lines] == [row["item_id"] for row in rows]
  spans = [span for line in lines for span in line["spans"]]
  assert spans and all(line["text"][s["start"]:s["end"]] == s["text"]
                       for line in lines for s in line["spans"])
  for line, row in zip(lines, rows):
    assert line["text"] == row["hypothesis"]  # AggreFact's claims: the claim checked
    if line["spans"]:
      assert abs(float(row["nli_score"]) - (1 - max(s["probability"] for s in line["spans"]))
                 ) < 1e-9
    else:
      assert float(row["nli_score"]) > 0.5
  # A second run reads every score, and its spans, from the score cache.
  cached = tmp_path / "cached"
  assert run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact",
                 "--output_dir", cached, "--scorer", "lettucedetect", "--model", checkpoint,
                 "--score_cache", tmp_path / "cache", "--bootstrap_samples", 20) == 0
  assert json.loads((cached / "run.json").read_text())["scorer"]["cache_hits"] == len(rows)
  assert (cached / "spans.jsonl").read_bytes() == (output / "spans.jsonl").read_bytes()


def test_refusals(checkpoint, tmp_path, capsys):
  other = tmp_path / "other"
  shutil.copytree(checkpoint, other)
  config = json.loads((other / "config.json").read_text())
  (other / "config.json").write_text(json.dumps(
      dict(config, architectures=["ModernBertForSequenceClassification"])))
  assert run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact", "--output_dir",
                 tmp_path / "out", "--scorer", "lettucedetect", "--model", other) == 2
  assert "not a token classifier of two labels" in capsys.readouterr().err
  assert run_job(agreement, "--input", AGGREFACT, "--format", "aggrefact", "--output_dir",
                 tmp_path / "out", "--language", "de") == 2
  assert "--language is for --scorer lettucedetect" in capsys.readouterr().err


def _evaluate_rows():
  """Predictions for evaluate: the rated example rows (passages inline, human
  ratings), one of them again under another system (the same triple: one
  model call, two rows), a later answer of a system to a question it already
  answered (rejected: no line), a row listing two passages, and a row
  without a passage (unscored: no line)."""
  with open(EXAMPLES / "agreement" / "ratings.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  first, second = rows[0], rows[1]
  return rows + [
      dict(first, system_name="copy-of-first"),
      dict(second, answer="a later answer, rejected"),
      {"system_name": "lister", "question": rows[2]["question"], "answer": rows[2]["answer"],
       "passage": [rows[3]["passage"], rows[2]["passage"]], "human_rating": "Y"},
      {"system_name": "lister", "question": rows[4]["question"], "answer": "no passage"},
  ]


@pytest.fixture(scope="module")
def evaluated(checkpoint, tmp_path_factory):
  """One evaluate run with --scorer lettucedetect over _evaluate_rows: its
  output directory and input rows (by line)."""
  from autoais.beam_jobs import evaluate  # pylint: disable=import-outside-toplevel
  root = tmp_path_factory.mktemp("evaluate_spans")
  rows = _evaluate_rows()
  predictions = root / "predictions.jsonl"
  predictions.write_text("".join(json.dumps(row) + "\n" for row in rows))
  output = root / "out"
  assert run_job(evaluate, "--predictions", predictions, "--output_dir", output,
                 "--scorer", "lettucedetect", "--model", checkpoint,
                 "--bootstrap_samples", 20) == 0
  return output, dict(enumerate(rows, 1))


def _passages_of(row):
  passage = row.get("passage")
  return passage if isinstance(passage, list) else [passage] if passage else []


def _span_lines(output):
  return [json.loads(line) for line in (output / "spans.jsonl").read_text().splitlines()]


def test_evaluate_writes_the_spans_of_each_rated_row(evaluated, checkpoint):
  """spans.jsonl: a line per rated row, in source order, named by its source,
  system and question, its text the answer, its spans those the model gives
  the same (passage, question, answer) directly; a row listing passages has
  the spans of the passage it is rated on (the highest score)."""
  from autoais.transforms.corpus.passages import parse_passage  # pylint: disable=import-outside-toplevel
  output, rows = evaluated
  lines = _span_lines(output)
  with open(output / "ratings.csv", newline="", encoding="utf-8") as f:
    rated = list(csv.DictReader(f))
  assert sorted((line["system_name"], line["question"]) for line in lines) == sorted(
      (row["system_name"], row["question"]) for row in rated)
  assert [line["source_line"] for line in lines] == sorted(
      line["source_line"] for line in lines)
  model = load_lettucedetect(checkpoint, token_budget=4096)
  listed = 0
  for line in lines:
    row = rows[line["source_line"]]
    assert set(line) == {"source_file", "source_line", "system_name", "question", "text",
                         "spans"}
    assert line["source_file"].endswith("predictions.jsonl")
    assert (line["system_name"], line["question"], line["text"]) == (
        row["system_name"], row["question"], row["answer"])
    passages = _passages_of(row)
    direct = model.score([qa_example(row["question"], row["answer"], parse_passage(passage))
                          for passage in passages])
    best = max(direct, key=lambda found: found.nli_score)  # ties: the first
    listed += len(passages) > 1
    assert [(s["start"], s["end"]) for s in line["spans"]] == [
        (s.start, s.end) for s in best.spans]
    np.testing.assert_allclose([s["probability"] for s in line["spans"]],
                               [s.probability for s in best.spans], rtol=0, atol=1e-5)
    assert all(s["text"] == row["answer"][s["start"]:s["end"]] for s in line["spans"])
  assert listed == 1
  # Checked and nothing found is a line too, with no spans.
  assert any(line["spans"] for line in lines) and any(not line["spans"] for line in lines)


def test_evaluate_span_rows_reconcile(evaluated):
  """counts.span_rows = counts.scored (the rows ratings.csv rates): a row
  the same triple as another's (scored once) has its own line with the same
  spans; a rejected later answer and a row without a passage have none."""
  output, rows = evaluated
  record = json.loads((output / "run.json").read_text())
  lines = _span_lines(output)
  assert record["counts"]["span_rows"] == record["counts"]["scored"] == len(lines)
  by_system = {(line["system_name"], line["question"]): line for line in lines}
  first = rows[1]
  assert by_system[("copy-of-first", first["question"])]["spans"] == by_system[
      (first["system_name"], first["question"])]["spans"]
  # Scored once each: the copy's triple is the first row's (and the listed
  # row's second passage makes the third row's triple).
  examples = [(passage, row["question"], row["answer"]) for row in rows.values()
              for passage in _passages_of(row)]
  assert record["scorer"]["unique_triples"] == len(set(examples)) == len(examples) - 2
  later, without = len(rows) - 2, len(rows)  # _evaluate_rows' lines
  dead = {(d["source_line"], d["reason"]) for d in read_jsonl(output / "dead_letter.jsonl")}
  assert (later, "duplicate_prediction") in dead and (without, "missing_attribution") in dead
  assert {line["source_line"] for line in lines}.isdisjoint({later, without})
  assert len(lines) == len(rows) - 2


def test_evaluate_report_marks_the_spans(evaluated):
  output, _ = evaluated
  lines = _span_lines(output)
  page = (output / "report.html").read_text()
  assert "Unsupported spans of the first" in page
  assert page.count('<p class="answer">') == len(lines)
  assert page.count('<mark class="unsupported"') >= sum(bool(l["spans"]) for l in lines)


def test_ragtruth_tasks_in_their_prompts_equal_the_reference(checkpoint, monkeypatch,
                                                             tmp_path):
  """RAGTruth's QA responses are checked in LettuceDetect's QA prompt with
  their question (carried on AttributionExample.question: the response stays
  the hypothesis every other scorer reads), Summary and Data2txt responses in
  its prompt without one: each score and its spans equal the reference's
  TransformerDetector given (context=[the premise], question or None, the
  response)."""
  from autoais.transforms.labelled.hallucination import read_ragtruth  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.examples import claim_example  # pylint: disable=import-outside-toplevel
  items = list(read_ragtruth(str(sets.write_ragtruth(tmp_path / "dataset"))))
  assert [item.group for item in items] == ["QA", "QA", "Summary", "Summary", "Data2txt"]
  ours = load_lettucedetect(checkpoint, token_budget=4096)
  reference = reference_detector(monkeypatch, checkpoint)
  found = ours.score([item.example for item in items])
  diffs, spans_seen = [], 0
  for item, result in zip(items, found):
    question = item.question if item.group == "QA" else None
    assert item.example.question == question
    # What the other scorers read is the claim example of (premise, response).
    assert item.example._replace(question=None) == claim_example(
        item.example.premise, item.example.hypothesis)
    assert checked_text(item.example) == (question, item.example.hypothesis)
    score, spans = _reference_result(reference, [item.example.premise], question,
                                     item.example.hypothesis)
    diffs.append(abs(result.nli_score - score))
    assert diffs[-1] <= 1e-5
    assert [(s.start, s.end) for s in result.spans] == [s[:2] for s in spans]
    # The scores of these long responses are near 0 (a token the tiny model is
    # sure of); the spans' probabilities spread, and are compared too.
    diffs += [abs(mine.probability - theirs[2]) for mine, theirs in zip(result.spans, spans)]
    assert max(diffs) <= 1e-5
    spans_seen += len(spans)
    if question is not None:  # the question changes what the model reads
      probabilities = [[token["prob"] for token in reference.predict(
          [item.example.premise], item.example.hypothesis, asked, output_format="tokens")]
                       for asked in (question, None)]
      assert np.abs(np.subtract(*probabilities)).max() > 1e-4
  print(f"lettucedetect ragtruth: {len(items)} responses (2 in the QA prompt), max abs "
        f"diff of scores and span probabilities {max(diffs):.2e}, {spans_seen} spans "
        f"identical, scores {[round(r.nli_score, 6) for r in found]}")


def _ragtruth_with_a_second_question(directory):
  """The bundled RAGTruth files, a second QA source (the same passages, another
  question) and one short response to each of the two QA sources, word for
  word the same: the same (premise, hypothesis) pair twice."""
  sources, responses = (read_jsonl(RAGTRUTH.parent / "source_info.jsonl"),
                        read_jsonl(RAGTRUTH))
  first = next(source for source in sources if source["task_type"] == "QA")
  info = dict(first["source_info"], question="can a starter live in the refrigerator")
  sources.append(dict(first, source_id="15022", source_info=info))
  twin = next(response for response in responses if response["id"] == "20301")
  for response_id, source_id in (("20307", "15021"), ("20308", "15022")):
    responses.append(dict(twin, id=response_id, source_id=source_id,
                          response="Feed it once a day."))
  return sets.write_ragtruth(directory, responses, sources)


def _check_span_agreement(output, lines):
  """agreement.json's span_agreement: the characters of spans.jsonl's spans
  against its human_spans (each side's union), summed over the lines."""
  from autoais.transforms.stats.spans import SpanCounts, span_counts  # pylint: disable=import-outside-toplevel
  expected = sum((span_counts([(s["start"], s["end"]) for s in line["human_spans"]],
                              [(s["start"], s["end"]) for s in line["spans"]])
                  for line in lines), SpanCounts())
  found = json.loads((output / "agreement.json").read_text())["span_agreement"]
  assert found["characters"] == expected._asdict() and expected.predicted > 0
  assert (found["precision"], found["recall"], found["f1"]) == (
      expected.precision(), expected.recall(), expected.f1())
  return expected


def test_ragtruth_spans_against_the_humans(checkpoint, tmp_path):
  """agreement --format ragtruth: the human's spans beside ours in spans.jsonl,
  and agreement.json's span_agreement their characters' precision, recall
  and F1 (transforms/stats/spans.py), summed over the items. Two responses
  with the same passages and text and different questions are two examples:
  scored apart within the run and in the score cache."""
  output, cache = tmp_path / "ragtruth", tmp_path / "cache"
  path = _ragtruth_with_a_second_question(tmp_path / "dataset")
  assert run_job(agreement, "--input", path, "--format", "ragtruth", "--output_dir",
                 output, "--scorer", "lettucedetect", "--model", checkpoint,
                 "--score_cache", cache, "--bootstrap_samples", 20) == 0
  lines = [json.loads(line) for line in (output / "spans.jsonl").read_text().splitlines()]
  labelled = read_jsonl(path)
  record = json.loads((output / "run.json").read_text())
  counts = record["counts"]
  rows = {row["item_id"]: row for row in pq.read_table(
      output / "agreement_rows.parquet").to_pylist()}
  assert rows["20307"]["hypothesis"] == rows["20308"]["hypothesis"]
  assert rows["20307"]["premise_digest"] == rows["20308"]["premise_digest"]
  # Every item its own example: the twins were not merged into one (the
  # tiny model barely reads the question, so their scores are near equal).
  assert record["scorer"]["unique_triples"] == counts["items"] == len(rows)
  again = tmp_path / "again"
  assert run_job(agreement, "--input", path, "--format", "ragtruth", "--output_dir",
                 again, "--scorer", "lettucedetect", "--model", checkpoint,
                 "--score_cache", cache, "--bootstrap_samples", 20) == 0
  # A cache hit a distinct key: one entry shared by the twins would be 1 hit less.
  assert json.loads((again / "run.json").read_text())["scorer"]["cache_hits"] == len(rows)
  assert {row["item_id"]: row["nli_score"] for row in pq.read_table(
      again / "agreement_rows.parquet").to_pylist()} == {
          item: row["nli_score"] for item, row in rows.items()}
  # One response's source is not in source_info.jsonl: a dead letter, no line.
  assert counts["span_rows"] == counts["items"] == len(lines) == len(labelled) - 1
  assert all("human_spans" in line for line in lines)
  assert sum(bool(line["human_spans"]) for line in lines) > 0
  by_id = {item["id"]: item for item in labelled}
  for line in lines:
    assert [(s["start"], s["end"]) for s in line["human_spans"]] == [
        (s["start"], s["end"]) for s in by_id[line["item_id"]]["labels"]]
  _check_span_agreement(output, lines)
  assert "Unsupported spans against the spans the humans marked" in (
      output / "agreement.md").read_text()
  # report.html: the figures, and every row's text with its spans marked.
  page = (output / "report.html").read_text()
  assert "Unsupported spans against the humans&#x27; spans (characters)" in page
  assert page.count('<p class="answer">') == len(lines)
  assert page.count('<mark class="unsupported"') >= sum(bool(l["spans"]) for l in lines)
  assert page.count('<span class="human">') >= sum(bool(l["human_spans"]) for l in lines)


def test_faithbench_spans_against_the_humans(checkpoint, tmp_path):
  """agreement --format faithbench: the summary spans of the Unwanted and
  Questionable annotations beside ours in spans.jsonl, and span_agreement
  over them, two annotators' overlapping spans counted as their union."""
  from autoais.transforms.labelled.hallucination import read_faithbench  # pylint: disable=import-outside-toplevel
  path = sets.write_faithbench(tmp_path / "data_for_release" / "batch_1.json")
  output = tmp_path / "faithbench"
  assert run_job(agreement, "--input", path, "--format", "faithbench", "--output_dir",
                 output, "--scorer", "lettucedetect", "--model", checkpoint) == 0
  lines = [json.loads(line) for line in (output / "spans.jsonl").read_text().splitlines()]
  items = {item.item_id: item for item in read_faithbench(str(path))}
  assert [line["item_id"] for line in lines] == list(items)
  for line in lines:
    item = items[line["item_id"]]
    assert line["text"] == item.example.hypothesis  # the summary
    assert [(s["start"], s["end"], s["label"]) for s in line["human_spans"]] == [
        tuple(span) for span in item.spans]
  overlapping = items["batch_1:2"].spans
  assert len(overlapping) == 2 and overlapping[0].end == overlapping[1].end
  expected = _check_span_agreement(output, lines)
  assert expected.gold == sum(span.end - span.start for item in items.values()
                              for span in item.spans) - (
                                  overlapping[1].end - overlapping[1].start)


# ----------------------------------------------------------------------------
# `autoais serve --scorer lettucedetect`, and `--scorer remote` against it.


@pytest.fixture(scope="module")
def server(checkpoint):
  """`autoais serve --scorer lettucedetect` in its own process (one a module)."""
  from tests.support import serve_load  # pylint: disable=import-outside-toplevel
  process, url = serve_load.start_server(["--scorer", "lettucedetect", "--model", checkpoint])
  yield url
  assert serve_load.stop_server(process) == 0


def test_serve_scores_and_spans_as_in_process(checkpoint):
  from autoais.beam_jobs.serve import load_served_model, parse_args  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import BadRequest  # pylint: disable=import-outside-toplevel
  from autoais.serve.batching import Limits  # pylint: disable=import-outside-toplevel
  served, description = load_served_model(parse_args(
      ["--scorer", "lettucedetect", "--model", checkpoint, "--max_input_tokens", "400"]),
                                          checkpoint, None)
  assert description["unsupported_spans"] is True and description["max_input_tokens"] == 400
  ours = load_lettucedetect(checkpoint, max_input_tokens=400, token_budget=4096)
  passages, gold = _passages(), read_jsonl(EXAMPLES / "gold.jsonl")
  examples = [AttributionExample(p[0], qa_hypothesis(q, a), a, "") for p, q, a in _qa()]
  examples.append(AttributionExample(passages[1], "Mount Everest is in Nepal.", "", ""))
  limits = Limits(64, 10 ** 6, 8, 512)
  # A request carries one premise an instance, one chunk; the several chunks
  # of passages (in-process only, encoded apart) batched with them.
  several = ours.encode_many([AttributionExample(
      "", qa_hypothesis(gold[0]["question"], "Everest, in Nepal."), "Everest, in Nepal.",
      "")], lambda _: passages[:6])
  assert len(several[0].windows) > 1
  got = served.score(served.encode(examples, limits) + several)
  expected = ours.score(examples) + ours.window_scores(
      several, ours.probabilities(several[0].windows), 0.5)
  np.testing.assert_allclose([s.nli_score for s in got], [s.nli_score for s in expected],
                             rtol=0, atol=1e-6)
  assert [[s[:2] for s in found.spans] for found in got] == [
      [s[:2] for s in found.spans] for found in expected]
  np.testing.assert_allclose([s.probability for found in got for s in found.spans],
                             [s.probability for found in expected for s in found.spans],
                             rtol=0, atol=1e-6)
  assert sum(map(len, (found.spans for found in got))) > 3 and got[-1].n_windows > 1
  # Nothing to score: 400 naming the instance; past a limit: 413.
  for answer in ("", " ".join(passages)):
    with pytest.raises(BadRequest, match=r"instance 1: lettucedetect: the answer has \d+ "
                       "tokens, the input 400") as refused:
      served.encode(examples[:1] + [AttributionExample(passages[0], answer, "", "")], limits)
    assert refused.value.status == 400
  with pytest.raises(BadRequest, match="instance 2: the request needs more than 2") as past:
    served.encode(examples[:3], Limits(64, 10 ** 6, 8, 2))
  assert past.value.status == 413
  with pytest.raises(BadRequest, match=r"instance 0: \d+ characters.*\(--max_instance_chars\)"):
    served.encode(examples[:1], Limits(64, 10, 8, 512))
  german, _ = load_served_model(parse_args(
      ["--scorer", "lettucedetect", "--model", checkpoint, "--language", "de"]), checkpoint,
                                None)
  assert german.model.language == "de"


def test_remote_agreement_writes_the_spans_of_the_in_process_run(checkpoint, server,
                                                                 tmp_path):
  from tests.support.serve_load import post  # pylint: disable=import-outside-toplevel
  status, body, _ = post(server, json.dumps({"instances": [
      {"premise": _passages()[0], "hypothesis": "Everest is tall."}]}).encode(), 60)
  assert status == 200 and set(body["predictions"][0]) == {
      "nli_score", "n_windows", "truncated", "unsupported_spans"}
  # A response with its question apart (RAGTruth's QA): the server reads the
  # question as the in-process scorer does.
  from autoais.models.remote import instance  # pylint: disable=import-outside-toplevel
  response = "Mount Everest is the highest mountain in Nepal."
  asked = AttributionExample(_passages()[0], response, response, "", "how tall is Everest?")
  status, body, _ = post(server, json.dumps({"instances": [instance(asked, True)]}).encode(),
                         60)
  local = load_lettucedetect(checkpoint).score([asked, asked._replace(question=None)])
  served = body["predictions"][0]["unsupported_spans"]
  assert status == 200 and [(s["start"], s["end"]) for s in served] == [
      (s.start, s.end) for s in local[0].spans]
  # Within float noise of the in-process scorer's, clear of the prompt without
  # the question's (the tiny model reads the question, if faintly).
  probabilities = [[s.probability for s in found.spans] for found in local]
  np.testing.assert_allclose([s["probability"] for s in served], probabilities[0], rtol=0,
                             atol=1e-6)
  assert np.abs(np.subtract(*probabilities)).max() > 1e-4
  runs = {}
  for name, flags in (("local", ("--model", checkpoint)), ("remote", ("--endpoint", server))):
    runs[name] = tmp_path / name
    assert run_job(agreement, "--input", RATINGS, "--format", "ratings", "--output_dir",
                   runs[name], "--scorer", "lettucedetect" if name == "local" else name,
                   *flags) == 0
  remote_record = json.loads((runs["remote"] / "run.json").read_text())
  assert remote_record["scorer"]["unsupported_spans"] is True
  assert remote_record["scorer"]["served_model"]["unsupported_spans"] is True
  lines = {name: [json.loads(line) for line in (run / "spans.jsonl").read_text().splitlines()]
           for name, run in runs.items()}
  # The server batches its requests, the in-process scorer its own calls:
  # probabilities within float noise, all else identical.
  probabilities = {name: [s.pop("probability") for line in found for s in line["spans"]]
                   for name, found in lines.items()}
  assert lines["remote"] == lines["local"] and sum(map(len, probabilities.values())) > 4
  np.testing.assert_allclose(probabilities["remote"], probabilities["local"], rtol=0,
                             atol=1e-6)
  # Answers to questions: the question prompt, the spans in the answer's
  # characters (the server was sent each instance's answer).
  assert lines["local"][0]["text"] == next(csv.DictReader(RATINGS.open()))["answer"]


def test_remote_reads_the_spans_of_a_span_server_only_and_fails_malformed_ones():
  from types import SimpleNamespace  # pylint: disable=import-outside-toplevel
  from unittest import mock  # pylint: disable=import-outside-toplevel
  from autoais.models import remote  # pylint: disable=import-outside-toplevel
  from autoais.schemas import UnsupportedSpan  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring import hosted  # pylint: disable=import-outside-toplevel
  options = SimpleNamespace(scorer="remote", decision="threshold", endpoint="http://h:1",
                            instances_per_request=8, request_timeout=1.0, max_retries=0,
                            retry_backoff=1.0, score_cache=None)
  for model, spans in (({"unsupported_spans": True}, True), ({"scorer": "t5"}, False)):
    with mock.patch.object(remote, "fetch_health", return_value={"model": model}):
      scorer = hosted.RemoteScorer(**hosted.check_flags(options, True))
    assert scorer.gives_spans is spans
    assert scorer.describe().get("unsupported_spans", False) is spans
  example = AttributionExample("p", qa_hypothesis("q?", "an answer"), "an answer", "")
  span = {"start": 3, "end": 9, "probability": 0.75}
  good = {"nli_score": 0.25, "n_windows": 1, "truncated": False,
          "unsupported_spans": [{"start": 0, "end": 2, "probability": 0.5}, span]}
  sent = []

  def score(prediction, spans=True):
    return remote.score_in_requests([example], 8, lambda instances: sent.extend(
        instances) or [prediction], 0.5, spans)[0]

  assert score(good).spans == [UnsupportedSpan(0, 2, 0.5), UnsupportedSpan(3, 9, 0.75)]
  assert sent.pop() == {"premise": "p", "hypothesis": example.hypothesis,
                        "answer": "an answer"}
  assert score(good, spans=False).spans is None and "answer" not in sent.pop()
  # A question carried apart goes to a span server only.
  asked = example._replace(question="q?")
  assert remote.instance(asked, True)["question"] == "q?"
  assert "question" not in remote.instance(asked) and "question" not in remote.instance(
      example, True)
  for spans in (None, "0-2", [span, span], [dict(span, probability=1.5)],
                [dict(span, start=True)], [dict(span, end=3)], [[3, 9, 0.75]]):
    failure = score(dict(good, unsupported_spans=spans) if spans else
                    {key: value for key, value in good.items() if key != "unsupported_spans"})
    assert isinstance(failure, ScoringFailure) and failure.status == 200, spans
    assert failure.message.startswith("malformed response: ") and "span" in failure.message
