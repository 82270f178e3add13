"""The NQ-Open leaderboard: NQ-Open dev gold, a corpus built from the 2,655
oracle Wikipedia passages, and five systems of predictions derived from them
(the nq_leaderboard_inputs fixture of tests/conftest.py)."""
import gzip
import json
import pathlib

from tests.support.files import read_jsonl, write_jsonl, write_prediction_files
from tests.support.jobs import run_job
from tests.support.paths import shared_file


def nq_oracle_records():
  with gzip.open(shared_file("nq_oracle_passages/nq-open-oracle.jsonl.gz"), "rt",
                 encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def oracle_passage_id(index: int, title: str) -> str:
  """A Pyserini-style id for the oracle passage of NQ-Open question `index`."""
  page = title.replace(" ", "_")
  return f"http://en.wikipedia.org/wiki/{page}#{page}#{index}"


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


def build_nq_leaderboard(root: pathlib.Path) -> dict:
  """Writes the nq_leaderboard_inputs fixture's files under root; returns its dict."""
  from autoais.beam_jobs import build_corpus  # pylint: disable=import-outside-toplevel
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
