"""The audit job's inputs over the NQ-Open leaderboard (tests/jobs/test_audit.py,
tests/support/record_outputs.py)."""
import json

from tests.support.nq import nq_oracle_records, oracle_passage_id

K = 4
SYSTEMS = ("right-answers", "wrong-answers")
UNKNOWN = "http://en.wikipedia.org/wiki/Nowhere#Nowhere#0"


def build_audit_inputs(root, nq_leaderboard_inputs) -> dict:
  """Answers, a TREC run with K candidates a question (the oracle passage at
  rank i % K + 1, an unknown top-1, repeats) and topics, over the NQ leaderboard."""
  oracle = nq_oracle_records()
  n = len(oracle)
  ids = [oracle_passage_id(i, record["ctxs"][0]["title"])
         for i, record in enumerate(oracle)]
  lists = {}  # (system, question) -> [(rank, docid)] in file order
  answers = {}  # (system, question) -> answer
  run_lines, topic_lines = [], []
  for i, record in enumerate(oracle):
    question = record["question"]
    topic_lines.append(f"q{i}\t{question}")
    gold_rank = i % K + 1
    distractors = iter(ids[(i + 7 * j + 1) % n] for j in range(K))
    ranked = [(rank, ids[i] if rank == gold_rank else next(distractors))
              for rank in range(1, K + 1)]
    if i % 60 == 30:
      ranked.insert(0, (0, UNKNOWN))  # a top-1 that is not in the corpus
    if i % 50 == 7:
      ranked.append((K + 1, ranked[0][1]))  # a repeated candidate
    for system in SYSTEMS:
      lists[(system, question)] = ranked
      run_lines += [f"q{i} Q0 {doc} {rank} {20 - rank}.5 {system}"
                    for rank, doc in ranked]
    answers[("right-answers", question)] = record["answers"][0]
    answers[("wrong-answers", question)] = oracle[(i + 3) % n]["answers"][0]
  topic_lines.append("q-extra\tA question no answer asks")
  run_lines += [f"q-extra Q0 {ids[0]} 1 1.0 right-answers", "q1 Q0 too-few 1"]
  (root / "run.trec").write_text("\n".join(run_lines) + "\n", encoding="utf-8")
  (root / "topics.tsv").write_text("\n".join(topic_lines) + "\n", encoding="utf-8")
  with open(root / "answers.jsonl", "w", encoding="utf-8") as f:
    for (system, question), answer in answers.items():
      f.write(json.dumps({"system_name": system, "question": question,
                          "answer": answer}) + "\n")
    f.write(json.dumps({"system_name": "right-answers", "question": oracle[0]["question"],
                        "answer": "a second answer"}) + "\n")
    f.write(json.dumps({"system_name": "right-answers",
                        "question": "A question without candidates?",
                        "answer": "x"}) + "\n")
  passages = {}
  for passage_id, (title, text) in nq_leaderboard_inputs["contents"].items():
    passages[passage_id] = f"« {title} » « {title} » {text}"
  gold_ids = {record["question"]: ids[i] for i, record in enumerate(oracle)}
  return {"root": root, "lists": lists, "answers": answers, "passages": passages,
          "gold_ids": gold_ids, "corpus": nq_leaderboard_inputs["corpus"],
          "gold_path": nq_leaderboard_inputs["gold_path"], "n": n}
