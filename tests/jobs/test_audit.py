"""`autoais audit` on the real NQ oracle passages: TREC runs written here mix each
question's gold passage with other questions' gold passages at chosen ranks.
The audit's top-1 / any / reranked figures equal a direct computation; an
oracle scorer (tests/support/scorers.py) shows that reranking recovers the gold
passage; `--candidates_from article` finds exactly an article's passages;
identical triples are scored once; outputs are deterministic; every line is
accounted for."""
import collections
import hashlib
import json

import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import audit, build_corpus
from autoais.transforms.scoring.string_match import string_match_attributable
from autoais.schemas import Candidate, DeadLetter
from tests.support.audit_inputs import SYSTEMS, build_audit_inputs
from tests.support.files import read_jsonl
from tests.support.jobs import run_job
from tests.support.nq import nq_oracle_records, oracle_passage_id
from tests.support.scorers import OracleScorer
from autoais.transforms.audit.readers import (read_audit_answers, read_candidates_jsonl,
                                      read_topics, read_trec_run)
from autoais.transforms.corpus.passages import nli_premise, parse_passage
from autoais.transforms.corpus.store import article_of


@pytest.fixture(scope="module")
def audit_inputs(nq_leaderboard_inputs, tmp_path_factory):
  return build_audit_inputs(tmp_path_factory.mktemp("audit"), nq_leaderboard_inputs)


def _audit(inputs, output, *extra):
  root = inputs["root"]
  return run_job(audit, "--answers", root / "answers.jsonl", "--candidates",
                 root / "run.trec", "--topics", root / "topics.tsv", "--corpus",
                 inputs["corpus"], "--output_dir", output, "--bootstrap_samples", 100,
                 *extra)


@pytest.fixture(scope="module")
def string_match_audit(audit_inputs, tmp_path_factory):
  output = tmp_path_factory.mktemp("audit_out") / "string_match"
  assert _audit(audit_inputs, output, "--gold", audit_inputs["gold_path"]) == 0
  return output


def _searchable(contents):
  parsed = parse_passage(contents)
  return f"{parsed.title} {parsed.headings} {parsed.text}"


def _expected_answers(inputs, score_of):
  """Per (system, question): the audit of its candidates, computed directly."""
  expected = {}
  for key, ranked in inputs["lists"].items():
    answer = inputs["answers"][key]
    seen, rows = set(), []
    for rank, doc in sorted(ranked):
      if doc not in seen:
        seen.add(doc)
        contents = inputs["passages"].get(doc)
        score = None if contents is None else score_of(key[1], answer, contents)
        rows.append((rank, doc, score))
    found = [row for row in rows if row[2] is not None]
    best = max(found, key=lambda row: (row[2], -row[0]))
    expected[key] = {
        "n_candidates": len(found), "n_unknown": len(rows) - len(found),
        "top1_id": rows[0][1], "top1": rows[0][2] is not None and rows[0][2] > 0.5,
        "any": any(row[2] > 0.5 for row in found), "reranked_id": best[1],
        "reranked": best[2] > 0.5}
  return expected


def _string_match(question, answer, contents):
  return float(string_match_attributable(answer, _searchable(contents)))


def _answers_table(output):
  rows = pq.read_table(output / "audit_answers.parquet").to_pylist()
  return {(row["system_name"], row["question"]): row for row in rows}


def _summary(output):
  return {row["system_name"]: row
          for row in json.loads((output / "audit.json").read_text())["systems"]}


def test_rates_equal_a_direct_computation(audit_inputs, string_match_audit):
  expected = _expected_answers(audit_inputs, _string_match)
  table = _answers_table(string_match_audit)
  assert set(table) == set(expected)
  for key, figures in expected.items():
    row = table[key]
    assert (row["n_candidates"], row["n_unknown_candidates"], row["top1_id"],
            row["top1_attributable"] == "Y", row["any_attributable"] == "Y",
            row["reranked_id"], row["reranked_attributable"] == "Y") == (
                figures["n_candidates"], figures["n_unknown"], figures["top1_id"],
                figures["top1"], figures["any"], figures["reranked_id"],
                figures["reranked"]), key
  summary = _summary(string_match_audit)
  for system in SYSTEMS:
    mine = [figures for (name, _), figures in expected.items() if name == system]
    for rate in ("top1", "any", "reranked"):
      # Percents, 100 * count / n (docs/audit.md).
      assert summary[system][rate] == 100 * sum(f[rate] for f in mine) / len(mine)
      assert summary[system][f"{rate}_ci_low"] <= summary[system][rate] <= summary[
          system][f"{rate}_ci_high"]
    assert summary[system]["n_answers"] == len(mine)
  right = summary["right-answers"]
  # Not vacuous: the gold passage sits at rank 1 for a quarter of the questions.
  assert 15 < right["top1"] < 35 < 80 < right["any"]
  assert right["reranking_gain"] == pytest.approx(
      (right["reranked"] - right["top1"]) / right["top1"], rel=1e-11)
  # audit.md shows the gain as a percentage, and its column says so (a ratio of
  # 3 read as "300.0" under "gain" looked like a 300-fold gain).
  page = (string_match_audit / "audit.md").read_text(encoding="utf-8")
  assert "| gain % |" in page and "gain % = 100 x (reranked - top-1) / top-1" in page
  row = next(line for line in page.splitlines() if line.startswith("| right-answers |"))
  assert row.split(" | ")[6].startswith(f"{100 * right['reranking_gain']:.1f} [")


def test_em_split_equals_a_direct_computation(audit_inputs, string_match_audit):
  expected = _expected_answers(audit_inputs, _string_match)
  table = _answers_table(string_match_audit)
  summary = _summary(string_match_audit)
  for system in SYSTEMS:
    keys = [key for key in expected if key[0] == system]
    exact = [key for key in keys if table[key]["em"] == 1.0]
    other = [key for key in keys if table[key]["em"] == 0.0]
    assert summary[system]["n_em"] == len(exact)
    assert summary[system]["n_graded"] == len(exact) + len(other) == len(keys)
    for name, subset in (("em", exact), ("non_em", other)):
      value = summary[system][f"top1_{name}"]
      if not subset:
        assert value is None
        continue
      assert value == 100 * sum(expected[k]["top1"] for k in subset) / len(subset)
  assert summary["right-answers"]["n_em"] == len(
      [k for k in expected if k[0] == "right-answers"])


def test_every_line_is_accounted_for(audit_inputs, string_match_audit):
  manifest = json.loads((string_match_audit / "run.json").read_text())
  answers, candidates = manifest["counts"]["answers"], manifest["counts"]["candidates"]
  n = audit_inputs["n"]
  assert answers == dict(answers, read=2 * n + 2, scored=2 * n, rejected=1,
                         unmatched=1, reconciled=True)
  assert answers["by_reason"] == {"rejected:duplicate_answer": 1,
                                  "unmatched:no_candidates": 1}
  unknown = 2 * len([i for i in range(n) if i % 60 == 30])
  repeated = 2 * len([i for i in range(n) if i % 50 == 7])
  lines = sum(len(ranked) for ranked in audit_inputs["lists"].values()) + 2
  assert candidates["read"] == lines and candidates["reconciled"]
  assert candidates["by_reason"] == {
      "rejected:duplicate_candidate": repeated, "rejected:malformed_trec": 1,
      "unmatched:candidate_not_in_corpus": unknown, "unmatched:no_answer": 1}
  rows = pq.read_table(string_match_audit / "audit_candidates.parquet")
  assert candidates["scored"] == rows.num_rows == lines - 2 - unknown - repeated
  dead = read_jsonl(string_match_audit / "dead_letter.jsonl")
  assert len(dead) == 2 + unknown + repeated + 2
  assert manifest["counts"]["topics"]["read"] == n + 1
  # Every candidate line matched (all but the malformed one and the one no
  # answer asks for; duplicates are rejected after) reached its answer through
  # its topic's question: the answers have no query_id.
  assert manifest["counts"]["topics"]["candidates_matched"] == lines - 2
  # A repeated candidate is rejected before the corpus is read for it.
  assert manifest["join"]["lookups"] == lines - 2 - repeated


def test_oracle_scorer_reranking_recovers_the_gold_passage(audit_inputs, tmp_path,
                                                            monkeypatch):
  passages = audit_inputs["passages"]
  premises = {question: nli_premise(parse_passage(passages[passage_id]))
              for question, passage_id in audit_inputs["gold_ids"].items()}
  monkeypatch.setattr(audit, "scorer_from_options",
                      lambda *_: OracleScorer(premises))
  assert _audit(audit_inputs, tmp_path / "out") == 0
  table = _answers_table(tmp_path / "out")
  with_gold = 0
  top1_hits = collections.Counter()
  for (system, question), ranked in audit_inputs["lists"].items():
    row = table[(system, question)]
    # The gold passage, or one with the same text (a few NQ questions repeat).
    golden = sorted((rank, doc) for rank, doc in ranked if doc in passages and
                    nli_premise(parse_passage(passages[doc])) == premises[question])
    assert audit_inputs["gold_ids"][question] in [doc for _, doc in golden]
    assert (row["reranked_id"], row["reranked_rank"], row["reranked_attributable"]) == (
        golden[0][1], golden[0][0], "Y")
    assert row["top1_attributable"] == (
        "Y" if row["top1_id"] in [doc for _, doc in golden] else "N")
    top1_hits[system] += row["top1_attributable"] == "Y"
    with_gold += 1
  assert with_gold == 2 * audit_inputs["n"]
  summary = _summary(tmp_path / "out")
  for system in SYSTEMS:
    assert summary[system]["reranked"] == summary[system]["any"] == 100.0
    assert summary[system]["top1"] == 100 * top1_hits[system] / audit_inputs["n"]
    # The gold passage is at rank 1 for a quarter of the questions.
    assert abs(summary[system]["top1"] - 25) < 1
    assert summary[system]["reranking_gain"] > 2.5


def test_article_candidates_are_exactly_the_articles_passages(audit_inputs, tmp_path):
  assert _audit(audit_inputs, tmp_path / "out", "--candidates_from", "article") == 0
  by_article = collections.defaultdict(set)
  for passage_id in audit_inputs["passages"]:
    by_article[article_of(passage_id)].add(passage_id)
  assert max(len(ids) for ids in by_article.values()) > 2  # not vacuous
  rows = pq.read_table(tmp_path / "out" / "audit_candidates.parquet").to_pylist()
  found = collections.defaultdict(set)
  for row in rows:
    found[(row["system_name"], row["question"])].add(row["candidate_id"])
  table = _answers_table(tmp_path / "out")
  several = 0
  for key, ranked in audit_inputs["lists"].items():
    top1 = min(ranked)[1]
    expected = by_article[article_of(top1)] - ({top1} - set(audit_inputs["passages"]))
    assert found.get(key, set()) == expected, key
    assert table[key]["top1_id"] == top1 and table[key]["top1_rank"] == 1
    several += len(expected) > 1
  assert several > 100
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  candidates = manifest["counts"]["candidates"]
  assert candidates["reconciled"] and candidates["replaced_by_article"] > 0
  # The article index was read a row group or so per article, not whole.
  join = manifest["join"]
  assert join["article_lookups"] == len(audit_inputs["lists"])
  assert join["article_row_groups_read"] <= join["article_lookups"]


def test_an_old_corpus_is_refused_for_article_candidates(audit_inputs, tmp_path,
                                                         capsys):
  old = tmp_path / "old_corpus"
  old.mkdir()
  manifest = json.loads((audit_inputs["corpus"] / "corpus.json").read_text())
  del manifest["articles"]
  (old / "corpus.json").write_text(json.dumps(manifest))
  root = audit_inputs["root"]
  assert run_job(audit, "--answers", root / "answers.jsonl", "--candidates",
                 root / "run.trec", "--topics", root / "topics.tsv", "--corpus", old,
                 "--output_dir", tmp_path / "out", "--candidates_from", "article") == 2
  assert "no article index" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


def _digests(directory):
  names = ("audit_candidates.parquet", "audit_answers.parquet", "audit_answers.csv",
           "audit.csv", "audit.json", "audit.md", "dead_letter.jsonl")
  return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
          for name in names}


def test_outputs_are_byte_identical_across_runs_and_runners(audit_inputs,
                                                            string_match_audit,
                                                            tmp_path):
  gold = ("--gold", audit_inputs["gold_path"])
  assert _audit(audit_inputs, tmp_path / "again", *gold) == 0
  assert _audit(audit_inputs, tmp_path / "multi", *gold,
                "--direct_running_mode=multi_processing", "--direct_num_workers=2") == 0
  assert _digests(string_match_audit) == _digests(tmp_path / "again")
  assert _digests(string_match_audit) == _digests(tmp_path / "multi")


def test_identical_candidates_are_scored_once(audit_inputs, model_scorer, tmp_path):
  """Two systems give the same answers with the same candidates, and a third
  system the same answers with some of them: one model call per distinct
  (premise, hypothesis). Each local model family."""
  family, model = model_scorer
  oracle = nq_oracle_records()[:6]
  ids = [oracle_passage_id(i, record["ctxs"][0]["title"])
         for i, record in enumerate(oracle)]
  lines, answers = [], []
  for i, record in enumerate(oracle):
    docs = [ids[i], ids[(i + 1) % 6], ids[(i + 2) % 6]]
    for system in ("a", "b", "c"):
      for rank, doc in enumerate(docs if system != "c" else docs[:1], start=1):
        lines.append(json.dumps({"system_name": system, "question": record["question"],
                                 "candidates": [{"id": doc, "rank": rank}]}))
      answers.append({"system_name": system, "question": record["question"],
                      "answer": record["answers"][0]})
  (tmp_path / "candidates.jsonl").write_text("\n".join(lines) + "\n")
  (tmp_path / "answers.jsonl").write_text(
      "\n".join(json.dumps(answer) for answer in answers) + "\n")
  assert run_job(audit, "--answers", tmp_path / "answers.jsonl", "--candidates",
                 tmp_path / "candidates.jsonl", "--corpus", audit_inputs["corpus"],
                 "--output_dir", tmp_path / "out", "--bootstrap_samples", 20,
                 "--scorer", family, "--model", model) == 0
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  scorer = manifest["scorer"]
  assert scorer["family"] == family
  assert (scorer["rows_scored_by_model"], scorer["unique_triples"]) == (6 * 7, 6 * 3)
  rows = pq.read_table(tmp_path / "out" / "audit_candidates.parquet").to_pylist()
  by_triple = collections.defaultdict(set)
  for row in rows:
    by_triple[(row["question"], row["candidate_id"])].add(row["nli_score"])
  assert len(by_triple) == 18 and all(len(s) == 1 for s in by_triple.values())


# ----------------------------------------------------------------------------
# Readers.


def test_trec_and_topics_readers_name_line_and_field(tmp_path):
  run = tmp_path / "run.trec"
  run.write_bytes(b"q1 Q0 d1 1 2.5 sys\n\nq1 Q0 d2 x 2.0 sys\nq1 Q0 d3 3 high sys\n"
                  b"q1 Q0 d4 4\nq2 Q0 \xff 1 1.0 sys\n")
  items = list(read_trec_run(str(run)))
  assert items[0] == Candidate("sys", "q1", None, "d1", None, 1, 2.5, str(run), 1)
  assert [(i.source_line, i.reason, i.field) for i in items[1:]] == [
      (3, "wrong_type", "rank"), (4, "wrong_type", "score"),
      (5, "malformed_trec", None), (6, "non_utf8", None)]
  topics = tmp_path / "topics.tsv"
  topics.write_text("q1\tWho?\nq2 no tab\nq1\tAgain?\nq3\t \n", encoding="utf-8")
  items = list(read_topics(str(topics)))
  assert (items[0].query_id, items[0].question) == ("q1", "Who?")
  assert [(i.source_line, i.reason) for i in items[1:]] == [
      (2, "malformed_topic"), (3, "duplicate_topic"), (4, "empty_question")]



def test_trec_and_topics_readers_skip_a_byte_order_mark(tmp_path):
  """A UTF-8 byte-order mark opening a run or topics file is not part of the first
  query id (found by tests/robustness/test_reader_properties.py: it was, and a
  file of only a BOM gave a dead letter)."""
  run, topics, empty = tmp_path / "run.trec", tmp_path / "topics.tsv", tmp_path / "e.trec"
  run.write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 2.5 sys\n")
  topics.write_bytes(b"\xef\xbb\xbfq1\tWho?\r\n")
  empty.write_bytes(b"\xef\xbb\xbf")
  assert [c.query_id for c in read_trec_run(str(run))] == ["q1"]
  assert [t.query_id for t in read_topics(str(topics))] == ["q1"]
  assert list(read_trec_run(str(empty))) == []

def test_candidates_jsonl_reader(tmp_path):
  path = tmp_path / "c.jsonl"
  path.write_text("\n".join(json.dumps(record) for record in [
      {"system_name": "s", "query_id": 7, "candidates": [
          {"id": "d1", "rank": 1}, {"passage": "Inline text.", "rank": 2},
          {"id": "d3", "rank": "3"}, {"rank": 4}]},
      {"system_name": "s", "question": "q?", "candidates": []},
      {"question": "q?", "candidates": [{"id": "d", "rank": 1}]},
  ]) + "\n")
  items = list(read_candidates_jsonl(str(path)))
  good = [i for i in items if isinstance(i, Candidate)]
  assert [(c.query_id, c.passage_id[:7], c.passage, c.rank) for c in good] == [
      ("7", "d1", None, 1), ("7", "inline:", "Inline text.", 2)]
  dead = [(i.source_line, i.kind, i.reason, i.field) for i in items
          if isinstance(i, DeadLetter)]
  assert dead == [(1, "rejected", "wrong_type", "candidates[2].rank"),
                  (1, "rejected", "wrong_type", "candidates[3].passage"),
                  (2, "unmatched", "no_candidates", "candidates"),
                  (3, "rejected", "missing_field", "system_name")]



def test_an_empty_query_id_cell_is_matched_by_question(tmp_path):
  """A CSV answer whose query_id cell is empty has no query id (README: matched by
  question), like an empty system_name cell; it was rejected as wrong_type
  (found by tests/robustness/test_reader_properties.py)."""
  answers = tmp_path / "answers.csv"
  answers.write_text("question,answer,system_name,query_id\nWho?,Ann,,\n"
                     "Why?,So, , q2 \n", encoding="utf-8")
  items = list(read_audit_answers(str(answers)))
  assert [(i.system_name, i.question, i.query_id, i.source_line) for i in items] == [
      (None, "Who?", None, 2), (None, "Why?", "q2", 3)]

def test_unnamed_answers_take_the_run_tag_and_ids_match(audit_inputs, tmp_path):
  """Answers without system_name, keyed by query_id: each run tag audits them
  as its own system; inline passages need no corpus lookup."""
  oracle = nq_oracle_records()[:3]
  answers = tmp_path / "answers.csv"
  answers.write_text("query_id,question,answer\n" + "".join(
      f"q{i},\"{r['question']}\",\"{r['answers'][0]}\"\n" for i, r in enumerate(oracle)))
  items = [i for i in read_audit_answers(str(answers))]
  assert all(i.system_name is None and i.query_id for i in items)
  lines = []
  for i, record in enumerate(oracle):
    ctx = record["ctxs"][0]
    lines.append(json.dumps({"system_name": "inline-run", "query_id": f"q{i}",
                             "candidates": [{"passage": ctx["text"], "rank": 1}]}))
  (tmp_path / "inline.jsonl").write_text("\n".join(lines) + "\n")
  run = tmp_path / "run.trec"
  run.write_text("".join(
      f"q{i} Q0 {oracle_passage_id(i, r['ctxs'][0]['title'])} 1 1.0 bm25\n"
      for i, r in enumerate(oracle)))
  # Topics given, but the answers' query ids match every candidate: run.json
  # says no candidate was matched through them.
  topics = tmp_path / "topics.tsv"
  topics.write_text("".join(f"q{i}\t{r['question']}\n" for i, r in enumerate(oracle)))
  assert run_job(audit, "--answers", answers, "--candidates",
                 f"{tmp_path / 'inline.jsonl'},{run}", "--corpus",
                 audit_inputs["corpus"], "--output_dir", tmp_path / "out",
                 "--bootstrap_samples", 20, "--topics", topics) == 0
  table = _answers_table(tmp_path / "out")
  assert {system for system, _ in table} == {"inline-run", "bm25"}
  assert len(table) == 6
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["counts"]["answers"]["scored"] == 3
  assert manifest["counts"]["answers"]["audited_as_system_answers"] == 6
  assert manifest["join"]["lookups"] == 3
  assert manifest["counts"]["topics"] == dict(manifest["counts"]["topics"], read=3,
                                              candidates_matched=0)


def test_bad_configurations_exit_2_before_writing(audit_inputs, tmp_path):
  root = audit_inputs["root"]
  base = ["--answers", root / "answers.jsonl", "--candidates", root / "run.trec",
          "--output_dir", tmp_path / "out"]
  assert run_job(audit, *base) == 2  # TREC runs need a corpus
  assert run_job(audit, *base, "--corpus", audit_inputs["corpus"], "--topics",
                 root / "topics.tsv", "--candidates_from", "document") == 2
  assert run_job(audit, *base, "--corpus", audit_inputs["corpus"], "--topics",
                 root / "topics.tsv", "--top_k", 0) == 2
  assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------
# Which candidates an answer is audited on.


def _small_audit(tmp_path, runs, questions, *extra, exit_code=0):
  """Audits the answer "The Zebra." to each of `questions` (q1, q2, ...) against
  `runs` ({file name: text}) on a corpus of Y1..Y4 (holding "zebra") and
  N1..N4; -> (audit_answers rows by question, run.json, dead letters)."""
  tmp_path.mkdir(parents=True, exist_ok=True)
  corpus = [{"id": f"{kind}{i}#{kind}{i}#0",
             "contents": f"« {kind}{i} » « {kind}{i} » The animal here is "
                         f"{'a zebra' if kind == 'Y' else 'a horse'}, number {i}."}
            for i in range(1, 5) for kind in "YN"]
  (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in corpus))
  assert run_job(build_corpus, "--input", tmp_path / "corpus.jsonl", "--output",
                 tmp_path / "corpus", "--num_shards", "1") == 0
  (tmp_path / "topics.tsv").write_text("".join(f"{q}\tquestion {q}\n" for q in questions))
  (tmp_path / "answers.csv").write_text(
      "question,answer\n" + "".join(f"question {q},The Zebra.\n" for q in questions))
  for name, text in runs.items():
    (tmp_path / name).write_text(text)
  output = tmp_path / "out"
  assert run_job(audit, "--answers", tmp_path / "answers.csv", "--candidates",
                 ",".join(str(tmp_path / name) for name in runs), "--topics",
                 tmp_path / "topics.tsv", "--corpus", tmp_path / "corpus",
                 "--output_dir", output, "--bootstrap_samples", 20, *extra) == exit_code
  rows = {row["question"].split()[-1]: row
          for row in pq.read_table(output / "audit_answers.parquet").to_pylist()}
  return rows, json.loads((output / "run.json").read_text()), read_jsonl(
      output / "dead_letter.jsonl")


def test_top_k_keeps_the_k_best_ranked_whatever_the_ranks(tmp_path):
  """--top_k 1: q1 ranks from 0, q2 from -3, q3 starts at rank 2: each answer
  is audited on its best-ranked candidate alone (any = top-1 = reranked)."""
  run = ("q1 Q0 N1#N1#0 0 3.0 S\nq1 Q0 Y1#Y1#0 1 2.0 S\n"
         "q2 Q0 N2#N2#0 -3 3.0 S\nq2 Q0 Y2#Y2#0 1 2.0 S\n"
         "q3 Q0 Y3#Y3#0 2 3.0 S\nq3 Q0 N3#N3#0 3 2.0 S\n")
  rows, record, dead = _small_audit(tmp_path, {"run.trec": run}, ["q1", "q2", "q3"],
                                    "--top_k", "1")
  assert {q: (row["n_candidates"], row["top1_id"], row["top1_attributable"],
              row["any_attributable"], row["reranked_attributable"])
          for q, row in rows.items()} == {
              "q1": (1, "N1#N1#0", "N", "N", "N"), "q2": (1, "N2#N2#0", "N", "N", "N"),
              "q3": (1, "Y3#Y3#0", "Y", "Y", "Y")}
  candidates = record["counts"]["candidates"]
  assert (candidates["read"], candidates["scored"], candidates["beyond_top_k"]) == (6, 3, 3)
  assert candidates["reconciled"] and not dead


def test_a_rank_or_a_list_given_twice_is_rejected_not_tie_broken_by_id(tmp_path):
  """q1: two candidates at rank 1 (the later line is rejected, not the one
  whose id sorts last); q2: its list again in a second file under the same
  tag; q3: a JSON Lines list naming a passage twice; q4: ranks against the
  scores (audited by rank, and counted)."""
  runs = {
      "a.trec": ("q1 Q0 Y1#Y1#0 1 2.0 S\nq1 Q0 N1#N1#0 1 2.0 S\n"
                 "q2 Q0 N2#N2#0 1 3.0 S\nq2 Q0 Y2#Y2#0 2 2.0 S\n"
                 "q4 Q0 N4#N4#0 1 1.0 S\nq4 Q0 Y4#Y4#0 2 9.0 S\n"),
      "b.trec": "q2 Q0 Y2#Y2#0 1 3.0 S\n",
      "c.jsonl": json.dumps({"system_name": "S", "query_id": "q3", "candidates": [
          {"id": "N3#N3#0", "rank": 1}, {"id": "Y3#Y3#0", "rank": 2},
          {"id": "N3#N3#0", "rank": 3}]}) + "\n",
  }
  # b.trec yields no row: exit 3, its file named in run.json.
  rows, record, dead = _small_audit(tmp_path, runs, ["q1", "q2", "q3", "q4"], exit_code=3)
  assert [entry["main_reason"] for entry in record["empty_inputs"]] == [
      "rejected:repeated_list"]
  assert rows["q1"]["top1_id"] == "Y1#Y1#0" and rows["q1"]["n_candidates"] == 1
  assert rows["q2"]["top1_id"] == "N2#N2#0" and rows["q2"]["n_candidates"] == 2
  assert rows["q3"]["n_candidates"] == 2
  assert rows["q4"]["top1_id"] == "N4#N4#0"
  by_reason = {entry["reason"]: entry for entry in dead}
  assert sorted(by_reason) == ["duplicate_candidate", "repeated_list", "repeated_rank"]
  assert (by_reason["repeated_rank"]["source_line"], by_reason["repeated_rank"]["field"]) == (
      2, "rank")
  assert by_reason["repeated_list"]["source_file"].endswith("b.trec")
  assert by_reason["repeated_list"]["field"] == "tag"
  assert by_reason["duplicate_candidate"]["field"] == "candidates[2].id"
  candidates = record["counts"]["candidates"]
  assert candidates["reconciled"] and candidates["lists_ranked_against_scores"] == 1
  assert candidates["by_reason"] == {"rejected:duplicate_candidate": 1,
                                     "rejected:repeated_list": 1,
                                     "rejected:repeated_rank": 1}


def test_inline_passages_are_audited_as_their_ids_are_with_rank_ties(tmp_path):
  """The same two passages at rank 1, by id and inline: one audit."""
  found = []
  for name, entries in (("ids", [{"id": "N1#N1#0", "rank": 1},
                                 {"id": "Y1#Y1#0", "rank": 1}]),
                        ("inline", [{"passage": "Title: N1\n\nThe animal here is a "
                                     "horse, number 1.", "rank": 1},
                                    {"passage": "Title: Y1\n\nThe animal here is a "
                                     "zebra, number 1.", "rank": 1}])):
    rows, _, dead = _small_audit(tmp_path / name, {"c.jsonl": json.dumps(
        {"system_name": "S", "query_id": "q1", "candidates": entries}) + "\n"}, ["q1"])
    found.append((rows["q1"]["top1_attributable"], rows["q1"]["n_candidates"],
                  [(entry["reason"], entry["field"]) for entry in dead]))
  assert found[0] == found[1] == ("N", 1, [("repeated_rank", "candidates[1].rank")])
