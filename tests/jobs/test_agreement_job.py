"""`autoais agreement` on the real labels of AttributionBench, BEGIN, WiCE and
ExpertQA (string-match on the whole sets, the tiny random T5 on slices of them),
XOR-AttriQA rows written here through a tiny random mT5, and calibration.

Every figure in agreement.json must equal scikit-learn on the rows of
agreement_rows.parquet, and the items and their labels must be what a reading of
the source written here, apart from the project's readers, finds.
"""
import collections
import csv
import json
import pathlib
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats
from sklearn import metrics as skm

from autoais.beam_jobs import agreement
from tests.support.files import read_jsonl, write_jsonl
from tests.support.jobs import run_job
from tests.support.paths import shared_file
from autoais.transforms.agreement.steps import premise_digest

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------
# Independent readings of the sources: {(file name, line[, extra]): attributable}.


def _attributionbench_labels(paths):
  labels = {}
  for path in paths:
    for line, record in enumerate(read_jsonl(path), start=1):
      labels[(path.name, line)] = record["attribution_label"] == "attributable"
  return labels


def _begin_labels(paths):
  labels = {}
  for path in paths:
    lines = path.read_text(encoding="utf-8").split("\n")
    columns = lines[0].split("\t")
    for number, text in enumerate(lines[1:], start=2):
      if text.strip():
        row = dict(zip(columns, text.split("\t")))
        labels[(path.name, number)] = row["begin_label"] == "Fully attributable"
  return labels


def _wice_labels(paths):
  labels = {}
  for path in paths:
    for record in read_jsonl(path):
      labels[record["meta"]["id"]] = record["label"] == "supported"
  return labels


def _expertqa_labels(paths):
  """The labels of the claims agreement scores, and the dead letters' counts by
  reason: a system's answer to a question that an earlier file (by path), or
  an earlier line, already gave is rejected (ExpertQA's rand_val and
  domain_val share answers), as are claims without a label or evidence text."""
  labels, skipped = {}, collections.Counter()
  first_answer = {}
  for path in sorted(paths, key=str):
    for line, record in enumerate(read_jsonl(path), start=1):
      for system, answer in record["answers"].items():
        for index, claim in enumerate(answer["claims"]):
          support = claim.get("support")
          texts = [e.split("\n", 1)[1].strip() if "\n" in e else ""
                   for e in claim["evidence"]]
          if support in (None, "", "N/A"):
            skipped["unmatched:no_human_label"] += 1
          elif not claim["evidence"]:
            skipped["unmatched:no_evidence"] += 1
          elif not any(texts):
            skipped["unmatched:no_evidence_text"] += 1
          elif first_answer.setdefault((system, record["question"]),
                                       (path, line)) != (path, line):
            skipped["rejected:duplicate_answer"] += 1
          else:
            labels[(path.name, line, system, index)] = support == "Complete"
  return labels, skipped


def _row_key(fmt, row):
  name = pathlib.Path(row["source_file"]).name
  if fmt == "wice":
    return row["item_id"]
  if fmt == "expertqa":
    system, index = row["item_id"].rsplit(":", 2)[1:]
    return (name, row["source_line"], system, int(index))
  return (name, row["source_line"])


# ----------------------------------------------------------------------------
# The check every run gets.


def _sklearn_figures(rows):
  human = np.array([row["human_attributable"] for row in rows])
  decided = np.array([row["decision"] == "Y" for row in rows])
  scores = np.array([row["nli_score"] for row in rows])
  both = 0 < human.sum() < len(human)
  kappa = skm.cohen_kappa_score(human, decided)
  return {"n_rated": len(rows), "human_ais": human.mean(), "predicted_ais": decided.mean(),
          "accuracy": skm.accuracy_score(human, decided),
          "balanced_accuracy": skm.balanced_accuracy_score(human, decided) if both else None,
          "cohen_kappa": None if np.isnan(kappa) else kappa,
          "roc_auc": skm.roc_auc_score(human, scores) if both else None,
          "pr_auc": skm.average_precision_score(human, scores) if both else None}


def _assert_equal_figures(entry, expected, where):
  for key, value in expected.items():
    if value is None:
      assert entry[key] is None, (where, key)
    else:
      assert entry[key] == pytest.approx(value, abs=1e-12), (where, key)


def check_run(output, fmt, expected_labels, groupings):
  """Figures equal scikit-learn on the rows; items and labels are the expected
  ones; counts reconcile. Returns (rows, content)."""
  rows = pq.read_table(output / "agreement_rows.parquet").to_pylist()
  content = json.loads((output / "agreement.json").read_text())
  manifest = json.loads((output / "run.json").read_text())
  assert {_row_key(fmt, row): row["human_attributable"] for row in rows} == \
      expected_labels
  assert len(rows) == len(expected_labels)
  _assert_equal_figures(content["overall"], _sklearn_figures(rows), "overall")
  assert content["overall"]["auc_exact"]
  for grouping, column in zip(groupings, ("group", "secondary_group")):
    groups = collections.defaultdict(list)
    for row in rows:
      groups[row[column]].append(row)
    assert sorted(content["groups"][grouping]) == sorted(groups)
    for name, selected in groups.items():
      _assert_equal_figures(content["groups"][grouping][name],
                            _sklearn_figures(selected), (grouping, name))
  labels = collections.Counter(row["human_label"] for row in rows)
  assert {label: entry["n"] for label, entry in
          content["overall"]["by_human_label"].items()} == dict(labels)
  counts = manifest["counts"]
  assert counts["reconciled"] and counts["items"] == len(rows)
  assert counts["scored"] == sum(row["n_premises"] for row in rows)
  with open(output / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    assert sum(1 for _ in csv.DictReader(f)) == len(rows)
  return rows, content


# ----------------------------------------------------------------------------
# The real sets.

SETS = {
    "attributionbench": (["attributionbench/dev_all_subset_balanced.jsonl"],
                         _attributionbench_labels, ("src_dataset",)),
    "begin": (["begin/begin_dev_wow.tsv", "begin/begin_dev_cmu.tsv",
               "begin/begin_dev_tc.tsv"], _begin_labels, ("data_source", "model_name")),
    "wice": (["wice/oracle_chunks_claim_dev.jsonl"], _wice_labels, ()),
    "expertqa": (["expertqa/rand_val.jsonl", "expertqa/domain_val.jsonl"],
                 lambda paths: _expertqa_labels(paths)[0], ("system",)),
}


def _run(output, inputs, fmt, *flags):
  return run_job(agreement, "--input", ",".join(str(p) for p in inputs), "--format",
                 fmt, "--output_dir", output, *flags)


@pytest.mark.parametrize("fmt", list(SETS))
def test_string_match_on_the_whole_set_equals_sklearn(fmt, tmp_path):
  relative, labels_of, groupings = SETS[fmt]
  paths = [shared_file(name) for name in relative]
  assert _run(tmp_path / "out", paths, fmt) == 0
  rows, content = check_run(tmp_path / "out", fmt, labels_of(paths), groupings)
  assert {row["nli_score"] for row in rows} <= {0.0, 1.0}
  if fmt == "begin":
    assert content["overall"]["by_human_label"]["Generic"]["n"] == 81
  if fmt == "wice":
    assert len(rows) == 349 and sum(row["n_premises"] for row in rows) == 1043
  if fmt == "expertqa":
    manifest = json.loads((tmp_path / "out" / "run.json").read_text())
    skipped = _expertqa_labels(paths)[1]
    assert skipped["rejected:duplicate_answer"] == 507
    assert manifest["counts"]["by_reason"] == dict(sorted(skipped.items()))
    # The claim is scored as the claims job and ExpertQA's script clean it: its
    # one-digit citation markers out, blank-line parts joined. It was scored
    # raw ("... the world of work[1].") in 1,338 of the 1,418 items.
    raw = {(path.name, line, system, index): claim["claim_string"]
           for path in paths for line, record in enumerate(read_jsonl(path), start=1)
           for system, answer in record["answers"].items()
           for index, claim in enumerate(answer["claims"])}
    marked = 0
    for row in rows:
      claim = raw[_row_key(fmt, row)]
      marked += bool(re.search(r"\[\d\]", claim))
      assert row["hypothesis"] == " ".join(re.sub(r"\[\d\] ?", "", claim).split("\n\n"))
    assert marked > len(rows) // 2


def _slice_lines(source, target, keep):
  lines = source.read_text(encoding="utf-8").split("\n")
  kept = [line for number, line in enumerate(lines) if line.strip() and keep(number)]
  target.write_text("\n".join(kept) + "\n", encoding="utf-8")
  return target


@pytest.fixture(scope="module")
def slices(tmp_path_factory):
  """Slices of the real sets for the T5 runs (every item of them is real)."""
  root = tmp_path_factory.mktemp("slices")
  wice = shared_file("wice/oracle_chunks_claim_dev.jsonl")
  first_claims = []
  for record in read_jsonl(wice):
    if record["meta"]["id"] not in first_claims:
      first_claims.append(record["meta"]["id"])
  first_claims = set(first_claims[:15])
  write_jsonl(root / "wice.jsonl", [r for r in read_jsonl(wice)
                                    if r["meta"]["id"] in first_claims])
  return {
      "attributionbench": [_slice_lines(
          shared_file("attributionbench/dev_all_subset_balanced.jsonl"),
          root / "attributionbench.jsonl", lambda n: n % 20 == 3)],
      "begin": [_slice_lines(shared_file(f"begin/begin_dev_{name}.tsv"),
                             root / f"begin_{name}.tsv", lambda n: n == 0 or n % 6 == 1)
                for name in ("wow", "cmu")],
      "wice": [root / "wice.jsonl"],
      "expertqa": [_slice_lines(shared_file("expertqa/rand_val.jsonl"),
                                root / "expertqa.jsonl", lambda n: n < 8)],
  }


def _model_texts():
  texts = []
  for record in read_jsonl(shared_file("attributionbench/dev_all_subset_balanced.jsonl")):
    texts += [record["claim"]] + record["references"][:1]
  return texts[:800] + ["premise: hypothesis: The answer to the question is"] * 20


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  directory = str(tmp_path_factory.mktemp("tiny_t5") / "model")
  return build_random_t5(directory, _model_texts(), vocab_size=4000, d_model=16,
                         d_kv=8, d_ff=32, num_layers=1, num_heads=2, seed=11)


@pytest.mark.parametrize("fmt", list(SETS))
def test_tiny_t5_on_real_slices_equals_sklearn(fmt, slices, tiny_t5, tmp_path):
  _, labels_of, groupings = SETS[fmt]
  paths = slices[fmt]
  assert _run(tmp_path / "out", paths, fmt, "--scorer", "t5", "--model", tiny_t5) == 0
  rows, content = check_run(tmp_path / "out", fmt, labels_of(paths), groupings)
  scores = [row["nli_score"] for row in rows]
  assert len(set(scores)) > len(scores) // 2  # continuous scores, not 0/1
  assert content["overall"]["distinct_scores"] == len(set(scores))
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["scorer"]["name"] == "t5" and manifest["scorer"]["one_token"] == "▁1"
  if fmt == "wice":  # a claim's score is the max over its chunks
    from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
    from autoais.transforms.scoring.examples import (claim_example)  # pylint: disable=import-outside-toplevel
    loaded = t5_nli.load_t5_nli(tiny_t5)
    chunk_scores = collections.defaultdict(list)
    for record in read_jsonl(paths[0]):
      example = claim_example(" ".join(s.strip() for s in record["evidence"]),
                              record["claim"])
      chunk_scores[record["meta"]["id"]].append(
          loaded.score([example], "threshold", 0.5)[0].nli_score)
    assert any(len(chunks) > 1 for chunks in chunk_scores.values())
    for row in rows:
      assert row["n_premises"] == len(chunk_scores[row["item_id"]])
      assert row["nli_score"] == pytest.approx(max(chunk_scores[row["item_id"]]),
                                               abs=1e-6)


def test_calibrated_threshold_is_the_exhaustive_sweeps(slices, tiny_t5, tmp_path):
  """Calibrate on BEGIN-WoW, apply to WoW + CMU. The calibration items are also
  input items, with the same scores (each distinct triple is scored once), so
  the sweep here runs on exactly the scores the job saw."""
  wow, cmu = slices["begin"]
  outputs = {}
  for name, flags in {"in_process": [],
                      "multi_process": ["--direct_running_mode=multi_processing",
                                        "--direct_num_workers=2"]}.items():
    outputs[name] = tmp_path / name
    assert _run(outputs[name], [wow, cmu], "begin", "--scorer", "t5", "--model",
                tiny_t5, "--calibrate_on", wow, *flags) == 0
  # Exact (byte-identical across runners): model calls are fixed by the data,
  # not by the runner's bundles, so both runs score the same batches.
  for name in agreement.OUTPUT_FILES[1:]:
    assert ((outputs["in_process"] / name).read_bytes() ==
            (outputs["multi_process"] / name).read_bytes()), name
  rows = pq.read_table(outputs["in_process"] / "agreement_rows.parquet").to_pylist()
  content = json.loads((outputs["in_process"] / "agreement.json").read_text())
  calibration = [row for row in rows if row["source_file"] == str(wow)]
  scores = np.array([row["nli_score"] for row in calibration])
  human = np.array([row["human_attributable"] for row in calibration])
  distinct = np.unique(scores)
  candidates = np.concatenate([[np.nextafter(distinct[0], -np.inf)], distinct])
  accuracy = [skm.accuracy_score(human, scores > t) for t in candidates]
  best = max(accuracy)
  ties = [t for t, a in zip(candidates, accuracy) if a == best]
  expected = min(ties, key=lambda t: (abs(t - 0.5), t))
  chosen = content["calibration"]
  assert chosen["threshold"] == expected and chosen["value"] == best
  assert chosen["candidates"] == len(candidates)
  assert best > skm.accuracy_score(human, scores > 0.5)  # calibration changed it
  # The input's figures at the calibrated threshold, beside those at 0.5.
  all_scores = np.array([row["nli_score"] for row in rows])
  all_human = np.array([row["human_attributable"] for row in rows])
  at_threshold = content["overall"]["at_calibrated_threshold"]
  assert at_threshold["accuracy"] == skm.accuracy_score(all_human,
                                                        all_scores > expected)
  assert at_threshold["cohen_kappa"] == pytest.approx(
      skm.cohen_kappa_score(all_human, all_scores > expected), abs=1e-12)
  assert content["overall"]["accuracy"] == skm.accuracy_score(all_human,
                                                              all_scores > 0.5)
  assert all(row["calibrated_decision"] == ("Y" if row["nli_score"] > expected else "N")
             for row in rows)
  manifest = json.loads((outputs["in_process"] / "run.json").read_text())
  assert manifest["calibration_counts"]["items"] == len(calibration)
  page = (outputs["in_process"] / "agreement.md").read_text()
  assert "at the calibrated threshold" in page
  # The input's items that the threshold was tuned on, said on the page.
  tuned_on = {(row["premise_digest"], row["hypothesis"]) for row in calibration}
  shared = sum((row["premise_digest"], row["hypothesis"]) in tuned_on for row in rows)
  assert shared >= len(calibration) > 0
  assert chosen["input_items_in_calibration_set"] == shared
  assert (f"{shared} of the input's {len(rows)} items are in the calibration set too"
          in page)


# ----------------------------------------------------------------------------
# XOR-AttriQA rows written here, through a tiny random mT5.

XOR_ROWS = [
    # (language, query, prediction, passage in language, passage in English,
    #  query in English, prediction in English, ais)
    ("ja", "富士山の高さは何メートルですか", "3776メートル",
     "富士山は日本で最も高い山で、標高は3776メートルです。",
     "Mount Fuji is the highest mountain in Japan, 3,776 metres high.",
     "How high is Mount Fuji in metres?", "3776 metres", "Y"),
    ("ja", "日本の首都はどこですか", "大阪", "東京は日本の首都であり、最大の都市です。",
     "Tokyo is the capital and the largest city of Japan.",
     "What is the capital of Japan?", "Osaka", "N"),
    ("ja", "源氏物語の作者は誰ですか", "紫式部", "源氏物語は紫式部によって書かれた長編物語です。",
     "The Tale of Genji is a long tale written by Murasaki Shikibu.",
     "Who wrote The Tale of Genji?", "Murasaki Shikibu", "Y"),
    ("bn", "বাংলাদেশের রাজধানী কোথায়?", "ঢাকা", "ঢাকা বাংলাদেশের রাজধানী এবং বৃহত্তম শহর।",
     "Dhaka is the capital and the largest city of Bangladesh.",
     "Where is the capital of Bangladesh?", "Dhaka", "Y"),
    ("bn", "গীতাঞ্জলি কে লিখেছেন?", "কাজী নজরুল ইসলাম",
     "গীতাঞ্জলি রবীন্দ্রনাথ ঠাকুরের লেখা একটি কাব্যগ্রন্থ।",
     "Gitanjali is a collection of poems written by Rabindranath Tagore.",
     "Who wrote Gitanjali?", "Kazi Nazrul Islam", "N"),
    ("bn", "পদ্মা নদী কোন দেশে প্রবাহিত?", "বাংলাদেশ", "পদ্মা বাংলাদেশের একটি প্রধান নদী।",
     "The Padma is a major river of Bangladesh.", "In which country does the Padma flow?",
     "Bangladesh", "Y"),
    ("te", "తెలంగాణ రాజధాని ఏది?", "హైదరాబాద్", "హైదరాబాద్ తెలంగాణ రాష్ట్ర రాజధాని నగరం.",
     "Hyderabad is the capital city of the state of Telangana.",
     "What is the capital of Telangana?", "Hyderabad", "Y"),
    ("te", "గోదావరి నది ఎక్కడ పుడుతుంది?", "హిమాలయాలు",
     "గోదావరి నది మహారాష్ట్రలోని త్రయంబకేశ్వర్ వద్ద పుడుతుంది.",
     "The Godavari river rises at Trimbakeshwar in Maharashtra.",
     "Where does the Godavari river originate?", "The Himalayas", "N"),
    ("te", "కూచిపూడి ఏ రకమైన కళ?", "నృత్యం", "కూచిపూడి ఒక శాస్త్రీయ నృత్య రూపం.",
     "Kuchipudi is a classical dance form.", "What kind of art is Kuchipudi?", "dance",
     "Y"),
    ("ru", "Кто написал роман «Война и мир»?", "Лев Толстой",
     "Роман «Война и мир» написал Лев Толстой.",
     "The novel War and Peace was written by Leo Tolstoy.",
     "Who wrote the novel War and Peace?", "Leo Tolstoy", "Y"),
    ("ru", "Какая река течёт через Москву?", "Волга",
     "Через Москву протекает Москва-река.", "The Moskva river flows through Moscow.",
     "Which river flows through Moscow?", "Volga", "N"),
    ("ru", "Сколько дней в високосном году?", "366",
     "В високосном году 366 дней, а в обычном 365.",
     "A leap year has 366 days and an ordinary year 365.",
     "How many days are there in a leap year?", "366", "Y"),
]
_XOR_COLUMNS = ("query_language", "query", "prediction", "passage_in_language",
                "passage_en", "query_translated_en", "prediction_translated_en", "ais")


@pytest.fixture(scope="module")
def xor_inputs(tmp_path_factory):
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  root = tmp_path_factory.mktemp("xor")
  records = [dict(zip(_XOR_COLUMNS, row), passage_retrieved_language=row[0])
             for row in XOR_ROWS]
  # In English only: no English passage, so the in-english scenario rejects it.
  records.append(dict(records[0], passage_en=None, query="富士山はどこにありますか"))
  write_jsonl(root / "xor.jsonl", records)
  texts = [" ".join(row[1:7]) for row in XOR_ROWS] * 20
  model = build_random_t5(str(root / "mt5"), texts + _model_texts()[:200],
                          vocab_size=1500, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                          num_heads=2, seed=5, model_type="mt5")
  return root / "xor.jsonl", model


@pytest.mark.parametrize("scenario", ["in-language", "in-english"])
def test_xor_attriqa_through_mt5_batched_equals_one_at_a_time(scenario, xor_inputs,
                                                              tmp_path):
  from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
  from autoais.transforms.labelled.readers import labelled_reader  # pylint: disable=import-outside-toplevel
  path, model = xor_inputs
  assert _run(tmp_path / "out", [path], "xor-attriqa", "--scenario", scenario,
              "--scorer", "t5", "--model", model) == 0
  rows = pq.read_table(tmp_path / "out" / "agreement_rows.parquet").to_pylist()
  expected = {(path.name, line): row[7] == "Y"
              for line, row in enumerate(XOR_ROWS, start=1)}
  if scenario == "in-language":
    expected[(path.name, len(XOR_ROWS) + 1)] = True
  _, content = check_run(tmp_path / "out", "xor-attriqa", expected, ("query_language",))
  assert sorted(content["groups"]["query_language"]) == ["bn", "ja", "ru", "te"]
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["scorer"]["model_type"] == "mt5"
  assert manifest["counts"]["rejected"] == (1 if scenario == "in-english" else 0)
  # One example at a time through the same model, outside the pipeline.
  loaded = t5_nli.load_t5_nli(model)
  items = [item for item in labelled_reader("xor-attriqa", scenario)(str(path))
           if hasattr(item, "example")]
  single = {item.item_id: loaded.score([item.example], "threshold", 0.5)[0].nli_score
            for item in items}
  batched = {row["item_id"]: row["nli_score"] for row in rows}
  assert batched.keys() == single.keys()
  np.testing.assert_allclose([batched[k] for k in sorted(batched)],
                             [single[k] for k in sorted(single)], rtol=0, atol=1e-6)
  for row, source in zip(rows, XOR_ROWS):
    query, answer = (source[1], source[2]) if scenario == "in-language" else (
        source[5], source[6])
    assert row["hypothesis"] == f"The answer to the question '{query}' is '{answer}'"


# ----------------------------------------------------------------------------
# The ratings format and refusals.


def test_ratings_format(tmp_path):
  path = tmp_path / "ratings.csv"
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    for s in range(3):
      for i in range(20):
        contains = (i + s) % 3 != 0
        writer.writerow([f"sys{s}", f"question {i}?", f"answer {i}", f"doc{i}",
                         f"Title: Doc {i}\n\n{'It is answer ' + str(i) if contains else 'No.'}",
                         "Y" if i < 8 + 4 * s else "N"])
    writer.writerow(["sys0", "question 99?", "answer", "doc", "Title: D\n\nanswer", ""])
  assert _run(tmp_path / "out", [path], "ratings") == 0
  # Each record spans three physical lines (the passage holds two line breaks).
  expected = {(path.name, 2 + 3 * (20 * s + i)): i < 8 + 4 * s
              for s in range(3) for i in range(20)}
  _, content = check_run(tmp_path / "out", "ratings", expected, ("system_name",))
  groups = content["groups"]["system_name"]
  predicted = [groups[name]["predicted_ais"] for name in sorted(groups)]
  human = [groups[name]["human_ais"] for name in sorted(groups)]
  level = content["group_level"]["system_name"]
  assert level["groups"] == sorted(groups)
  assert level["pearson"]["statistic"] == stats.pearsonr(predicted, human).statistic
  assert level["kendall"]["statistic"] == stats.kendalltau(predicted, human).statistic
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["counts"]["by_reason"] == {"unmatched:no_human_label": 1}


def _expertqa_record(question, answers):
  return {"question": question, "answers": {
      system: {"answer_string": " ".join(claims), "claims": [
          {"claim_string": f"{claim[:-1]}[1].", "support": "Complete" if i % 2 else "Missing",
           "evidence": [f"[1] https://example.org/{i}\n\n{claim} indeed."]}
          for i, claim in enumerate(claims)]}
      for system, claims in answers.items()}}


def test_a_systems_second_answer_to_a_question_is_rejected_in_each_set(tiny_t5, tmp_path):
  """ExpertQA's claims come in answers: a system's answer to a question given
  again (a later line, or a later file) is rejected claim by claim, naming
  where the kept (first) answer is, in the measured and the calibration set
  alike; the rest is as without it. (agreement.md and report.html name the
  threshold the input's figures were decided at, --threshold's, beside the
  calibrated one: they said "at the default threshold".)"""
  first = write_jsonl(tmp_path / "a.jsonl", [
      _expertqa_record("Q1?", {"s": ["Paris is big.", "Lyon is old."], "t": ["X is Y."]}),
      _expertqa_record("Q1?", {"s": ["Paris is small."]}),  # s answers Q1 again
      _expertqa_record("Q2?", {"s": ["Nice is warm."]})])
  second = write_jsonl(tmp_path / "b.jsonl", [  # t's answer to Q1 again, and new ones
      _expertqa_record("Q1?", {"t": ["X is Z.", "W is V."], "u": ["U is U."]})])
  calibration = write_jsonl(tmp_path / "c.jsonl", [
      _expertqa_record("Q9?", {"s": ["A is B."]}), _expertqa_record("Q9?", {"s": ["A is C."]})])
  assert _run(tmp_path / "out", [first, second], "expertqa",
              "--calibrate_on", calibration, "--scorer", "t5", "--model", tiny_t5,
              "--threshold", 0.7) == 0
  assert ("| on the input | at threshold 0.7 | at the calibrated threshold |" in
          (tmp_path / "out" / "agreement.md").read_text())
  assert "% at threshold 0.7, " in (tmp_path / "out" / "report.html").read_text()
  rows = pq.read_table(tmp_path / "out" / "agreement_rows.parquet").to_pylist()
  assert sorted((pathlib.Path(row["source_file"]).name, row["source_line"], row["hypothesis"])
                for row in rows) == [
      ("a.jsonl", 1, "Lyon is old."), ("a.jsonl", 1, "Paris is big."),
      ("a.jsonl", 1, "X is Y."), ("a.jsonl", 3, "Nice is warm."), ("b.jsonl", 1, "U is U.")]
  dead = [json.loads(line) for line in
          (tmp_path / "out" / "dead_letter.jsonl").read_text().splitlines()]
  assert sorted((pathlib.Path(d["source_file"]).name, d["source_line"], d["reason"],
                 d["record"]["claim"]) for d in dead) == [
      ("a.jsonl", 2, "duplicate_answer", "Paris is small."),
      ("b.jsonl", 1, "duplicate_answer", "W is V."),
      ("b.jsonl", 1, "duplicate_answer", "X is Z."),
      ("c.jsonl", 2, "duplicate_answer", "A is C.")]
  messages = {d["record"]["claim"]: d["message"] for d in dead}
  assert messages["Paris is small."].endswith(
      f"system 's' already answered this question at {first}:1; the first answer is kept")
  assert f"system 't' already answered this question at {first}:1" in messages["W is V."]
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  for block, (read, scored) in (("counts", (8, 5)), ("calibration_counts", (2, 1))):
    counts = manifest[block]
    assert (counts["read"], counts["scored"], counts["reconciled"]) == (read, scored, True)
    assert counts["by_reason"] == {"rejected:duplicate_answer": read - scored}


@pytest.mark.parametrize("decision, premise", [
    ("threshold", "Doc, History. It began in 1901.\nIt ended in 1950."),
    # The Attributed QA script's regex stops the text at its first line break.
    ("decode", "Doc, History. It began in 1901.")])
def test_ratings_premise_follows_the_decision_mode(decision, premise, tiny_t5, tmp_path):
  path = tmp_path / "ratings.csv"
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    writer.writerow(["s", "when did it end?", "1950", "doc",
                     "Title: Doc\nSection: History\n\nIt began in 1901.\nIt ended in 1950.",
                     "Y"])
  assert _run(tmp_path / "out", [path], "ratings", "--scorer", "t5", "--model", tiny_t5,
              "--decision", decision) == 0
  rows = pq.read_table(tmp_path / "out" / "agreement_rows.parquet").to_pylist()
  assert [row["premise_digest"] for row in rows] == [premise_digest([premise])]


@pytest.mark.parametrize("flags, message", [
    (["--format", "nope"], "--format 'nope': choose from"),
    (["--format", "begin", "--scenario", "in-english"], "--scenario applies to"),
    (["--format", "xor-attriqa", "--scenario", "french"], "--scenario 'french'"),
    (["--format", "begin", "--calibrate_metric", "f1"], "--calibrate_metric 'f1'"),
    (["--format", "ratings"], "missing required column(s) passage, human_rating"),
])
def test_bad_configuration_exits_2_before_writing(flags, message, tmp_path, capsys):
  path = tmp_path / "in.csv"
  path.write_text("question,answer,attribution\nq,a,b\n", encoding="utf-8")
  code = run_job(agreement, "--input", path, "--output_dir", tmp_path / "out", *flags)
  assert code == 2
  assert message in capsys.readouterr().err
  assert not (tmp_path / "out").exists()
