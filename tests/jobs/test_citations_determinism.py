"""`autoais citations`: the same inputs give byte-identical outputs across runs
and between the in-process and the multi-process DirectRunner (the human check
included: one system's items carry judgements); the counts of run.json
reconcile on files with a bad item and a broken one."""
import hashlib
import json

import pytest

from autoais.beam_jobs import citations
from tests.support.citations import SYSTEMS, alce_items, write_alce
from tests.support.jobs import run_job
from tests.support.nq import nq_oracle_records

ITEMS = range(0, 50)
COMPARED = ("citations_rows.parquet", "citations_rows.csv", "citations_items.parquet",
            "citations_items.csv", "citations.csv", "citations.json", "citations.md",
            "citations_human.csv", "citations_human.json", "citations_human.md",
            "dead_letter.jsonl")


def _digests(directory):
  return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
          for name in COMPARED}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("citations_determinism")
  records = nq_oracle_records()
  (root / "runs").mkdir()
  for system in SYSTEMS:
    items = alce_items(records, system, ITEMS)
    items[7]["docs"] = "not a list"
    if system == "single":  # three sentences of one citation each
      for k, item in enumerate(items):
        item["sentences"] = [{"sentence_recall_score": (k + s) % 3 > 0, "citations": [
            {"citation_precision_score": (k * s) % 3}]} for s in range(3)]
    write_alce(root / "runs" / f"{system}.json", items)
  # A file whose JSON breaks after two items.
  broken = json.dumps({"data": alce_items(records, "single", range(200, 203))}, indent=1)
  (root / "runs" / "broken.json").write_text(broken[:broken.rindex('"question"')],
                                             encoding="utf-8")
  modes = {"first": [], "second": [],
           "multi_process": ["--direct_running_mode=multi_processing",
                             "--direct_num_workers=2"]}
  outputs = {}
  for name, flags in modes.items():
    assert run_job(citations, "--input", root / "runs" / "*.json", "--output_dir",
                   root / name, "--bootstrap_samples", 100, *flags) == 0
    outputs[name] = root / name
  return outputs


def test_two_runs_are_byte_identical(runs):
  assert _digests(runs["first"]) == _digests(runs["second"])


def test_multi_process_run_is_byte_identical(runs):
  assert _digests(runs["first"]) == _digests(runs["multi_process"])


def test_counts_reconcile_and_outputs_are_not_trivial(runs):
  run = json.loads((runs["first"] / "run.json").read_text(encoding="utf-8"))
  counts = run["counts"]
  # 3 systems x 50 items, 3 of them bad; 2 items of the broken file and its break.
  assert counts["read"] == 3 * 50 + 3 and counts["reconciled"]
  assert counts["rejected"] == 4 and counts["scored"] == 3 * 49 + 2
  assert counts["by_reason"] == {"rejected:wrong_type": 3, "rejected:malformed_json": 1}
  rows = (runs["first"] / "citations_rows.csv").read_text(encoding="utf-8")
  assert rows.count("\n") - 1 == run["sentences"] > 300
  summary = json.loads((runs["first"] / "citations.json").read_text(encoding="utf-8"))
  recall = {row["system_name"]: row["citation_rec"] for row in summary["systems"]}
  assert set(recall) == set(SYSTEMS) | {"broken"}
  assert 0 < recall["single"] < 100
  human = json.loads((runs["first"] / "citations_human.json").read_text(encoding="utf-8"))
  assert human["items_by_check"]["aligned"] > 40
  # String matching calls no model; the pairs are counted all the same.
  assert run["model_calls"] == 0 and run["unique_pairs"] > 0
