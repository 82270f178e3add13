"""Shared test helpers: where the real data sets live, and running jobs in-process."""
import csv
import gzip
import json
import os
import pathlib

import pytest

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent

# `make test` runs pytest-xdist processes side by side. Each takes its share of
# the cores for torch's (OpenMP) threads, set before torch is imported: with a
# thread per core in every process, threads spin against each other's cores
# (the reference-parity fixture took 540 s in the suite against 178 s alone).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
  _THREADS = str(max(1, (os.cpu_count() or 1) //
                     int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
  for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, _THREADS)


def shared_data_dir() -> pathlib.Path:
  """The real data sets: $AUTOAIS_SHARED_DATA, else ../shared/data beside the project."""
  return pathlib.Path(os.environ.get("AUTOAIS_SHARED_DATA",
                                     PROJECT_ROOT.parent / "shared" / "data"))


def shared_file(relative: str) -> pathlib.Path:
  """A file of the shared data; skips the test (with the reason) where it is absent."""
  path = shared_data_dir() / relative
  if not path.exists():
    pytest.skip(f"shared data {relative} not found under {shared_data_dir()} "
                "(set AUTOAIS_SHARED_DATA)")
  return path


def shared_reference(relative: str) -> pathlib.Path:
  """A file of the field's reference code (../shared/reference, beside the
  shared data); skips the test (with the reason) where it is absent."""
  path = shared_data_dir().parent / "reference" / relative
  if not path.exists():
    pytest.skip(f"reference code {relative} not found under "
                f"{shared_data_dir().parent / 'reference'}")
  return path


def nq_oracle_records():
  with gzip.open(shared_file("nq_oracle_passages/nq-open-oracle.jsonl.gz"), "rt",
                 encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def oracle_passage_id(index: int, title: str) -> str:
  """A Pyserini-style id for the oracle passage of NQ-Open question `index`."""
  page = title.replace(" ", "_")
  return f"http://en.wikipedia.org/wiki/{page}#{page}#{index}"


def write_jsonl(path, records):
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for record in records:
      f.write(json.dumps(record, ensure_ascii=False) + "\n")
  return path


def write_prediction_files(directory, systems):
  """One predictions CSV per system: {name: [(question, answer, attribution)]}."""
  directory = pathlib.Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  for name, rows in systems.items():
    with open(directory / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(["question", "answer", "attribution"])
      writer.writerows(rows)


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def run_job(module, *args) -> int:
  """Runs a job's run(argv) in this process (FnApiRunner); returns its exit code."""
  return module.run([str(arg) for arg in args])


EXAMPLES = PROJECT_ROOT / "examples"


@pytest.fixture(scope="session")
def example_corpus(tmp_path_factory):
  """The example passages (examples/corpus) built into a 2-shard corpus, once a
  session; tests that damage a corpus work on a copy."""
  from beam_jobs import build_corpus  # pylint: disable=import-outside-toplevel
  output = tmp_path_factory.mktemp("example_corpus") / "corpus"
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", output, "--num_shards", 2) == 0
  return output


NQ_SYSTEMS = ("right-answer-right-passage", "right-answer-wrong-passage",
              "wrong-answer", "sparse-with-unknown-ids", "reformatted-answers")


def _system_predictions(gold, oracle_by_question, passage_ids):
  """Per system: {question: (answer, attribution)} over the gold questions."""
  questions = [g["question"] for g in gold]
  with_passage = [q for q in questions if q in oracle_by_question]
  systems = {name: {} for name in NQ_SYSTEMS}
  for position, question in enumerate(questions):
    answers = gold[position]["answer"]
    own = passage_ids.get(question, "")
    neighbour = passage_ids[with_passage[(with_passage.index(question) + 1) %
                                         len(with_passage)]] if own else ""
    other_answer = gold[(position + 7) % len(gold)]["answer"][0]
    systems["right-answer-right-passage"][question] = (answers[0], own)
    systems["right-answer-wrong-passage"][question] = (answers[-1], neighbour)
    systems["wrong-answer"][question] = (other_answer, own)
    if position % 3 == 0:
      attribution = own if position % 2 == 0 else "http://en.wikipedia.org/wiki/Nowhere#0"
      systems["sparse-with-unknown-ids"][question] = (answers[0], attribution)
    # Case, punctuation and articles that SQuAD normalisation removes, plus a
    # partial answer every fifth question (F1 strictly between 0 and 1).
    answer = f"The {answers[0].upper()}!" if position % 5 else answers[0].split()[0]
    systems["reformatted-answers"][question] = (answer, own)
  return systems


@pytest.fixture(scope="session")
def nq_leaderboard_inputs(tmp_path_factory):
  """A real leaderboard: NQ-Open dev gold, a corpus built from the 2,655 oracle
  Wikipedia passages, and five systems of predictions derived from them."""
  return build_nq_leaderboard(tmp_path_factory.mktemp("nq_leaderboard"))


def build_nq_leaderboard(root: pathlib.Path) -> dict:
  """Writes the nq_leaderboard_inputs fixture's files under root; returns its dict."""
  from beam_jobs import build_corpus  # pylint: disable=import-outside-toplevel
  gold_path = shared_file("nq_open/NQ-open.dev.jsonl")
  gold = read_jsonl(gold_path)
  oracle = nq_oracle_records()
  passage_ids, contents_by_id, oracle_by_question = {}, {}, {}
  corpus_records = []
  for index, record in enumerate(oracle):
    ctx = record["ctxs"][0]
    passage_id = oracle_passage_id(index, ctx["title"])
    contents = f"« {ctx['title']} » « {ctx['title']} » {ctx['text']}"
    passage_ids[record["question"]] = passage_id
    contents_by_id[passage_id] = (ctx["title"], ctx["text"])
    oracle_by_question[record["question"]] = record
    corpus_records.append({"id": passage_id, "contents": contents})
  write_jsonl(root / "pyserini" / "oracle.jsonl", corpus_records)
  assert run_job(build_corpus, "--input", root / "pyserini" / "*.jsonl",
                 "--output", root / "corpus", "--num_shards", 8) == 0

  systems = _system_predictions(gold, oracle_by_question, passage_ids)
  write_prediction_files(root / "predictions", {
      name: [(question, answer, attribution)
             for question, (answer, attribution) in predictions.items()]
      for name, predictions in systems.items()})
  return {"root": root, "gold": gold, "systems": systems, "contents": contents_by_id,
          "gold_path": gold_path, "corpus": root / "corpus",
          "predictions": root / "predictions" / "*.csv"}



EXAMPLES = PROJECT_ROOT / "examples"


def example_texts():
  """Texts of the example corpus and gold: a vocabulary for tiny T5 models."""
  texts = [json.loads(line)["contents"] for line in
           (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  texts += [g["question"] + " " + " ".join(g["answer"])
            for g in read_jsonl(EXAMPLES / "gold.jsonl")]
  return texts + ["premise: hypothesis: The answer to the question is"] * 50


@pytest.fixture(scope="session")
def tiny_t5_dirs(tmp_path_factory):
  """Two tiny random T5 checkpoints (seeds 3 and 4) with the example vocabulary."""
  from models.testing import build_random_t5  # pylint: disable=import-outside-toplevel
  root = tmp_path_factory.mktemp("tiny_t5")
  return {seed: build_random_t5(str(root / f"seed{seed}"), example_texts(),
                                vocab_size=2000, seed=seed) for seed in (3, 4)}


@pytest.fixture(scope="session")
def examples_corpus_dir(tmp_path_factory):
  """The example corpus, built by build-corpus."""
  from beam_jobs import build_corpus  # pylint: disable=import-outside-toplevel
  output = tmp_path_factory.mktemp("examples_corpus") / "corpus"
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", output, "--num_shards", 2) == 0
  return output


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory):
  """A tiny random-weight T5 NLI model (models/testing.py) whose vocabulary is
  trained on the example corpus; skipped where torch is not installed."""
  pytest.importorskip("torch")
  pytest.importorskip("transformers")
  from models.testing import build_random_t5  # pylint: disable=import-outside-toplevel
  texts = [json.loads(line)["contents"] for line in
           (PROJECT_ROOT / "examples" / "corpus" / "wiki_sample.jsonl")
           .read_text(encoding="utf-8").splitlines()]
  directory = str(tmp_path_factory.mktemp("tiny_t5") / "model")
  return build_random_t5(directory, texts + ["premise: hypothesis: is"] * 50,
                         vocab_size=2000, seed=3)


# The reference-parity module (minutes, one module fixture) is collected first:
# pytest-xdist hands each worker a run of consecutive tests to start with, so
# its tests start together on one worker at once while the other takes the
# many short ones, instead of running alone at the end of the suite.
_FIRST = "tests/test_reference_parity.py::"


def pytest_collection_modifyitems(config, items):
  del config
  items.sort(key=lambda item: not item.nodeid.startswith(_FIRST))


# Hypothesis profiles for the reader property tests: `ci` (the default, a few
# hundred examples per reader inside `make test`) and `nightly` (20x more), chosen
# with pytest's --hypothesis-profile.
from hypothesis import settings as _hypothesis_settings  # pylint: disable=wrong-import-position

_hypothesis_settings.register_profile("ci", max_examples=300, deadline=None)
_hypothesis_settings.register_profile("nightly", max_examples=6000, deadline=None)


def pytest_configure(config):
  if not config.getoption("hypothesis_profile", None):
    _hypothesis_settings.load_profile("ci")
