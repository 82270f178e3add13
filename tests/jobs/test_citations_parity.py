"""`autoais citations` against ALCE's own eval.py (`../shared/reference/alce/`,
unchanged), run in this process on the same files with the same model.

Inputs: ALCE result files built from NQ-Open oracle passages (each item's
documents: its gold passage and three distractors), five systems over the same
questions: single citations with ASQA `qa_pairs`; several citations (repeats,
more than --at_most_citations, `[1, 2]`, `[1] [2]`); the messy cases (no
citation, out of range, `[0]`, citations after the full stop, two-line and
empty outputs, `<|im_end|>`, ` |`); a QAMPARI file (list items, `answers`); an
ELI5-style file with `claims`. The model is a tiny T5 in the published layout
whose greedy decisions mix (tests/support/citations.py build_mixing_t5); our job
runs it with `--decision decode`, the rule eval.py applies (generate, == "1").

eval.py loads `google/t5_xxl_true_nli_mixture` in bfloat16 from the hub: its
loaders are pointed at the tiny model's directory (float32, as ours) and its
`sent_tokenize` is the project's splitter (models/sentences.py: Punkt itself
where its data is installed, else syntok). Its
`main()` runs per file, as its users run it (`--citations --no_rouge`, and
`--claims_nli` for the ELI5 file), and its `.score` file is compared with our
leaderboard. Its model calls are counted and printed beside ours.
"""
import importlib.util
import json
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("nltk")
pytest.importorskip("rouge_score")

from autoais.beam_jobs import citations  # pylint: disable=wrong-import-position
from tests.support.citations import (ELI5_SYSTEM, QAMPARI_SYSTEM, SYSTEMS,  # pylint: disable=wrong-import-position
                                     alce_items, build_mixing_t5, probe_inputs,
                                     write_alce)
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.nq import nq_oracle_records  # pylint: disable=wrong-import-position
from tests.support.paths import shared_reference  # pylint: disable=wrong-import-position
from autoais.transforms.citations.alce import splitter  # pylint: disable=wrong-import-position

ITEMS = range(0, 24)
# The model's probes: other questions.
PROBES = range(1000, 1040)
ALL_SYSTEMS = SYSTEMS + (QAMPARI_SYSTEM, ELI5_SYSTEM)
# The figures eval.py writes and the leaderboard column of each.
FIGURES = {"citation_rec": "citation_rec", "citation_prec": "citation_prec",
           "length": "length", "str_em": "str_em", "str_hit": "str_hit",
           "qampari_prec": "qampari_prec", "qampari_rec": "qampari_rec",
           "qampari_rec_top5": "qampari_rec_top5", "qampari_f1": "qampari_f1",
           "qampari_f1_top5": "qampari_f1_top5", "num_preds": "qampari_num_preds",
           "claims_nli": "claims_nli"}


def _load_eval(monkeypatch, model_dir):
  """ALCE's eval.py as a module, its hub loaders and sent_tokenize substituted."""
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # pylint: disable=import-outside-toplevel
  path = shared_reference("alce/eval.py")
  monkeypatch.syspath_prepend(str(path.parent))
  spec = importlib.util.spec_from_file_location("alce_eval", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)

  class _Model:
    @staticmethod
    def from_pretrained(_name, **_kwargs):
      return AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()

  class _Tokenizer:
    @staticmethod
    def from_pretrained(_name, **_kwargs):
      return AutoTokenizer.from_pretrained(model_dir)

  monkeypatch.setattr(module, "AutoModelForSeq2SeqLM", _Model)
  monkeypatch.setattr(module, "AutoTokenizer", _Tokenizer)
  monkeypatch.setattr(module, "get_max_memory", lambda: None)
  monkeypatch.setattr(module, "sent_tokenize", splitter().split)
  calls = {"n": 0}
  original = module._run_nli_autoais  # pylint: disable=protected-access

  def counted(passage, claim):
    calls["n"] += 1
    return original(passage, claim)

  monkeypatch.setattr(module, "_run_nli_autoais", counted)
  return module, calls


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
  shared_reference("alce/eval.py")
  root = tmp_path_factory.mktemp("citations_parity")
  records = nq_oracle_records()
  texts = [r["ctxs"][0]["title"] + " " + r["ctxs"][0]["text"] for r in records[:600]]
  model = build_mixing_t5(str(root / "model"), texts + ["premise: hypothesis: Title:"] * 20,
                          probe_inputs(records, PROBES))
  (root / "runs").mkdir()
  for system in ALL_SYSTEMS:
    write_alce(root / "runs" / f"{system}.json", alce_items(records, system, ITEMS))
  assert run_job(citations, "--input", root / "runs" / "*.json", "--output_dir",
                 root / "ours", "--scorer", "t5", "--model", model, "--decision",
                 "decode", "--bootstrap_samples", 50) == 0
  with pytest.MonkeyPatch.context() as monkeypatch:
    module, calls = _load_eval(monkeypatch, model)
    reference, reference_calls = {}, {}
    for system in ALL_SYSTEMS:
      argv = ["eval.py", "--f", str(root / "runs" / f"{system}.json"), "--citations",
              "--no_rouge"] + (["--claims_nli"] if system == ELI5_SYSTEM else [])
      monkeypatch.setattr(sys, "argv", argv)
      before = calls["n"]
      module.main()
      reference_calls[system] = calls["n"] - before
      with open(root / "runs" / f"{system}.json.score", encoding="utf-8") as f:
        reference[system] = json.load(f)
  with open(root / "ours" / "citations.json", encoding="utf-8") as f:
    ours = {row["system_name"]: row for row in json.load(f)["systems"]}
  with open(root / "ours" / "run.json", encoding="utf-8") as f:
    run = json.load(f)
  return {"root": root, "ours": ours, "reference": reference, "run": run,
          "reference_calls": reference_calls}


@pytest.mark.parametrize("system", ALL_SYSTEMS)
def test_figures_equal_eval_py(parity, system):
  ours, reference = parity["ours"][system], parity["reference"][system]
  compared = 0
  for name, value in reference.items():
    column = FIGURES[name]
    if name in ("str_em", "str_hit") and ours[column] is None:
      # eval.py reports 0 where the file has no qa_pairs; we report none.
      assert value == 0, (system, name)
      continue
    assert ours[column] == value, (system, name, ours[column], value)
    compared += 1
  assert {"citation_rec", "citation_prec", "length"} <= set(reference)
  assert compared >= 3


def test_the_comparison_is_not_vacuous(parity):
  """Decisions mix, the precision test finds citations not needed, and the
  messy cases reach eval.py's own branches."""
  import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel
  rows = pq.read_table(parity["root"] / "ours" / "citations_rows.parquet").to_pylist()
  scored = [row for row in rows if row["status"] == "scored"]
  supported = sum(row["supported"] for row in scored)
  assert 0.05 * len(scored) < supported < 0.95 * len(scored), (supported, len(scored))
  assert {row["status"] for row in rows} == {"scored", "no_citation", "out_of_range"}
  needed = "".join(row["needed"] for row in rows)
  assert "Y" in needed and "N" in needed
  for system in SYSTEMS:
    assert 0 < parity["ours"][system]["citation_rec"] < 100, system
  assert parity["ours"]["single"]["str_em"] is not None
  assert parity["ours"][QAMPARI_SYSTEM]["qampari_f1"] is not None
  assert parity["ours"][ELI5_SYSTEM]["claims_nli"] is not None


def test_model_calls_are_the_unique_pairs_and_fewer_than_eval_py(parity):
  run, reference_calls = parity["run"], parity["reference_calls"]
  ours = parity["ours"]
  # Our count of eval.py's calls, per system, is what eval.py made.
  for system in ALL_SYSTEMS:
    assert ours[system]["reference_calls"] == reference_calls[system], system
  total = sum(reference_calls.values())
  assert run["reference_model_calls"] == total
  assert run["model_calls"] == run["unique_pairs"]
  print(f"\nmodel calls: ours {run['model_calls']} (distinct pairs), eval.py {total} "
        f"(per system {reference_calls}); pairs answered by an earlier round: "
        f"{run['scorer']['pairs_reused']}")
  assert 0 < run["model_calls"] < total
  assert run["scorer"]["pairs_reused"] > 0
  assert run["counts"]["reconciled"] and run["counts"]["rejected"] == 0
