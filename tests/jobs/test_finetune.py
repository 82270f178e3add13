"""`autoais finetune` on training-data outputs written here, with tiny models
built here (a random T5 with its own SentencePiece vocabulary, a random
RoBERTa classifier with its own BPE): the t5 family end to end (trained as
TRUE, loaded by `--scorer t5` unchanged, decisions on the trained examples
moving from the base's to the labels'), the nli-classifier family full and
with LoRA, agreement on the validation split giving the card's figures, the
same weights for a seed, a killed run resumed to the same final weights, and
the refusals (exit 2 before anything is written).
"""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from autoais.beam_jobs import agreement, finetune, training_data
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

COLOURS = ("red", "blue", "green", "black")
OTHER_COLOURS = ("white", "yellow", "purple", "orange")
THINGS = ("car", "door", "house", "boat", "chair", "kite", "bike", "cup", "hat", "box",
          "lamp", "ship")


def _items():
  """Claims that a premise supports (its colour) or not (another colour). The
  unsupported claims name colours no premise has: a tiny model learns that
  in a few dozen steps, and the tests are about the training, not the task."""
  rows = []
  for i, thing in enumerate(THINGS):
    for j, colour in enumerate(COLOURS):
      other = OTHER_COLOURS[(j + i) % len(OTHER_COLOURS)]
      premise = f"the {thing} is {colour} and it is old"
      rows.append({"dataset": "toy", "doc": premise, "claim": f"the {thing} is {colour}",
                   "label": 1})
      rows.append({"dataset": "toy", "doc": premise, "claim": f"the {thing} is {other}",
                   "label": 0})
  return rows


def _write_csv(path, rows):
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  return path


def _texts():
  return [row["doc"] for row in _items()] + [row["claim"] for row in _items()]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  return tmp_path_factory.mktemp("finetune")


@pytest.fixture(scope="module")
def source(root):
  return _write_csv(root / "toy.csv", _items())


def _training_data(root, source, family, name, *extra):
  output = root / name
  assert run_job(training_data, "--input", f"aggrefact:{source}", "--family", family,
                 "--output_dir", output, "--test_fraction", "0.1",
                 "--validation_fraction", "0.25", *extra) == 0
  return output


@pytest.fixture(scope="module")
def t5_data(root, source):
  return _training_data(root, source, "t5", "data-t5")


@pytest.fixture(scope="module")
def nli_data(root, source):
  return _training_data(root, source, "nli-classifier", "data-nli")


@pytest.fixture(scope="module")
def t5_base(root):
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  premises = [f"premise: {row['doc']} hypothesis: {row['claim']}" for row in _items()]
  return build_random_t5(str(root / "t5-base"), premises * 3 + ["1", "0"] * 20,
                         vocab_size=120)


@pytest.fixture(scope="module")
def roberta_base(root):
  from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=import-outside-toplevel
  return build_tiny_classifier(
      str(root / "roberta-base"), "roberta",
      {0: "entailment", 1: "neutral", 2: "contradiction"}, _texts() * 3, vocab_size=300)


T5_TRAINING = ("--epochs", "12", "--batch_size", "8", "--learning_rate", "3e-3",
               "--eval_every", "10", "--progress_interval", "0")
NLI_TRAINING = ("--epochs", "6", "--batch_size", "8", "--learning_rate", "2e-3",
                "--eval_every", "10", "--progress_interval", "0")


@pytest.fixture(scope="module")
def t5_model(root, t5_data, t5_base):
  output = root / "t5-model"
  assert run_job(finetune, "--train", t5_data, "--family", "t5", "--base", t5_base,
                 "--output_dir", output, *T5_TRAINING) == 0
  return output


def _agreement(output, data, split, scorer, model, *extra):
  assert run_job(agreement, "--input", data / f"{split}.parquet", "--format",
                 "training-data", "--scorer", scorer, "--model", model,
                 "--output_dir", output, "--progress_interval", "0", *extra) == 0
  return (json.loads((output / "agreement.json").read_text()),
          json.loads((output / "run.json").read_text()))


def _card(model):
  return json.loads((model / "model_card.json").read_text())


def test_t5_loads_unchanged_and_agreement_on_validation_gives_the_cards_figures(
    root, t5_data, t5_model):
  card = _card(t5_model)
  assert card["family"] == "t5" and 0 <= card["threshold"] <= 1
  assert sorted(os.listdir(t5_model)) == sorted(
      ["config.json", "generation_config.json", "model.safetensors", "spiece.model",
       "tokenizer_config.json", "special_tokens_map.json", "model_card.json",
       "MODEL_CARD.md", "_autoais_outputs.json"])
  summary, record = _agreement(root / "agree-t5-validation", t5_data, "validation", "t5",
                               t5_model)
  assert record["scorer"]["threshold"] == card["threshold"]
  assert record["scorer"]["threshold_from"] == "model card (model_card.json)"
  # The threshold was calibrated on scores at the scorer's default input
  # length: the card says which (another --max_input_tokens is refused beside it).
  assert card["calibrated_max_input_tokens"] == record["scorer"]["max_input_tokens"] == 512
  for name in ("n_rated", "accuracy", "balanced_accuracy", "cohen_kappa"):
    assert summary["overall"][name] == pytest.approx(card["validation"][name], abs=1e-12)
  assert summary["overall"]["roc_auc"] == pytest.approx(card["validation"]["roc_auc"],
                                                        abs=1e-6)
  # --threshold given: used, and said.
  _, record = _agreement(root / "agree-t5-given", t5_data, "validation", "t5", t5_model,
                         "--threshold", "0.5")
  assert record["scorer"]["threshold"] == 0.5
  assert record["scorer"]["threshold_from"] == "--threshold"


def test_t5_decisions_on_the_trained_examples_move_to_the_labels(
    root, t5_data, t5_base, t5_model):
  base, base_record = _agreement(root / "agree-t5-base", t5_data, "train", "t5", t5_base)
  trained, _ = _agreement(root / "agree-t5-trained", t5_data, "train", "t5", t5_model)
  assert base_record["scorer"]["threshold_from"] == (
      "default (the model has no model_card.json)")
  assert base["overall"]["accuracy"] < 0.7
  assert trained["overall"]["accuracy"] >= 0.9
  assert trained["overall"]["balanced_accuracy"] > base["overall"]["balanced_accuracy"]
  card = _card(t5_model)
  assert card["validation"]["balanced_accuracy"] > card["base_validation"][
      "balanced_accuracy"]
  assert card["steps"]["best"] > 0


def _weights(model):
  return safetensors_torch.load_file(str(model / "model.safetensors"))


def _same(first, second):
  return first.keys() == second.keys() and all(torch.equal(first[k], second[k])
                                               for k in first)


def test_nli_classifier_trains_a_two_label_head_that_the_scorer_loads(
    root, nli_data, roberta_base):
  output = root / "nli-full"
  assert run_job(finetune, "--train", nli_data, "--family", "nli-classifier", "--base",
                 roberta_base, "--output_dir", output, *NLI_TRAINING) == 0
  config = json.loads((output / "config.json").read_text())
  assert config["id2label"] == {"0": "not_entailment", "1": "entailment"}
  summary, record = _agreement(root / "agree-nli", nli_data, "validation",
                               "nli-classifier", output)
  card = _card(output)
  # The default training length, 256, stops at the base's position table.
  assert card["settings"]["max_input_tokens"] == 64
  assert record["scorer"]["threshold"] == card["threshold"]
  for name in ("n_rated", "accuracy", "balanced_accuracy"):
    assert summary["overall"][name] == pytest.approx(card["validation"][name], abs=1e-12)
  # The same seed, the same weights.
  again = root / "nli-full-again"
  assert run_job(finetune, "--train", nli_data, "--family", "nli-classifier", "--base",
                 roberta_base, "--output_dir", again, *NLI_TRAINING) == 0
  assert _same(_weights(output), _weights(again))
  assert _card(again)["threshold"] == card["threshold"]


def test_lora_is_merged_into_plain_weights(root, nli_data, roberta_base):
  pytest.importorskip("peft")
  output = root / "nli-lora"
  assert run_job(finetune, "--train", nli_data, "--family", "nli-classifier", "--base",
                 roberta_base, "--output_dir", output, "--lora_rank", "4",
                 *NLI_TRAINING) == 0
  weights = _weights(output)
  base = safetensors_torch.load_file(os.path.join(roberta_base, "model.safetensors"))
  assert not [name for name in weights if "lora" in name]
  # Every encoder weight the base has, as the base names it; the attention
  # projections LoRA adapted moved, the rest of the encoder did not.
  encoder = [name for name in base if not name.startswith("classifier.")]
  assert set(encoder) <= set(weights)
  moved = [name for name in encoder if not torch.equal(base[name], weights[name])]
  assert moved and all(name.endswith(("query.weight", "value.weight")) for name in moved)
  _, record = _agreement(root / "agree-lora", nli_data, "validation", "nli-classifier",
                         output)
  assert record["scorer"]["threshold"] == _card(output)["threshold"]


def test_a_killed_run_resumes_to_the_weights_of_an_uninterrupted_run(
    root, t5_data, t5_base, t5_model):
  output = root / "t5-killed"
  argv = [sys.executable, "-m", "autoais.beam_jobs.finetune", "--train", str(t5_data),
          "--family", "t5", "--base", t5_base, "--output_dir", str(output),
          "--save_every", "20", *T5_TRAINING]
  state = output / "_finetune_checkpoints" / "state.json"
  process = subprocess.Popen(argv, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
  try:
    deadline = time.monotonic() + 600
    while not state.exists() and process.poll() is None and time.monotonic() < deadline:
      time.sleep(0.02)
    assert process.poll() is None, "the run ended before its first checkpoint"
    os.kill(process.pid, signal.SIGKILL)
  finally:
    process.wait()
  killed_at = json.loads(state.read_text())["step"]
  assert killed_at >= 20 and not (output / "model.safetensors").exists()
  assert run_job(finetune, "--train", t5_data, "--family", "t5", "--base", t5_base,
                 "--output_dir", output, "--save_every", "20", *T5_TRAINING) == 0
  card = _card(output)
  assert card["steps"]["resumed_from"] == killed_at < card["steps"]["total"]
  assert _same(_weights(output), _weights(t5_model))
  assert card["threshold"] == _card(t5_model)["threshold"]
  assert card["validation_history"] == _card(t5_model)["validation_history"]
  assert not (output / "_finetune_checkpoints").exists()


# ----------------------------------------------------------------------------
# Refusals.


def _refused(capsys, output, *argv):
  assert run_job(finetune, *argv, "--output_dir", output, "--progress_interval", "0") == 2
  error = capsys.readouterr().err
  assert not output.exists() or not os.listdir(output)
  return error


def test_an_empty_or_one_class_split_is_refused(root, source, t5_base, tmp_path, capsys):
  empty = _training_data(tmp_path, source, "t5", "no-validation",
                         "--validation_fraction", "0")
  error = _refused(capsys, tmp_path / "out1", "--train", empty, "--family", "t5",
                   "--base", t5_base)
  assert f"{empty}/validation.parquet" in error and "is empty" in error
  positives = _write_csv(tmp_path / "positives.csv",
                         [row for row in _items() if row["label"] == 1])
  one_class = _training_data(tmp_path, positives, "t5", "one-class")
  error = _refused(capsys, tmp_path / "out2", "--train", one_class, "--family", "t5",
                   "--base", t5_base)
  assert f"{one_class}/train.parquet" in error and "one class only" in error


def test_a_base_that_does_not_load_is_refused(root, t5_data, nli_data, tmp_path, capsys,
                                              roberta_base):
  broken = tmp_path / "broken"
  broken.mkdir()
  (broken / "config.json").write_text('{"model_type": "t5"}')
  (broken / "model.safetensors").write_bytes(b"not safetensors")
  error = _refused(capsys, tmp_path / "out1", "--train", t5_data, "--family", "t5",
                   "--base", broken)
  assert f"--base {broken}" in error
  pickled = tmp_path / "pickled"
  pickled.mkdir()
  (pickled / "config.json").write_text('{"model_type": "t5"}')
  (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04")
  error = _refused(capsys, tmp_path / "out2", "--train", t5_data, "--family", "t5",
                   "--base", pickled)
  assert "--base" in error and "pickle" in error
  # A classifier is no T5.
  error = _refused(capsys, tmp_path / "out3", "--train", t5_data, "--family", "t5",
                   "--base", roberta_base)
  assert f"--base {roberta_base}" in error and "does not load as a t5 model" in error
  # Data of the other family.
  error = _refused(capsys, tmp_path / "out4", "--train", nli_data, "--family", "t5",
                   "--base", roberta_base)
  assert f"{nli_data}/run.json" in error and "nli-classifier" in error
  # Inputs past the base's position table (64 tokens): the first long batch
  # failed inside the model, exit 1, with the output directory claimed.
  error = _refused(capsys, tmp_path / "out5", "--train", nli_data, "--family",
                   "nli-classifier", "--base", roberta_base, "--max_input_tokens", "100")
  assert ("--max_input_tokens 100: training inputs of up to that many tokens, but the "
          "position table of --base (roberta.embeddings.position_embeddings) takes at "
          "most 64; give --max_input_tokens 64 or less" in error)


def test_an_output_directory_that_breaks_the_file_rules_is_refused(
    t5_data, t5_base, tmp_path, capsys):
  # The data's own directory: the run would write beside (and then over) its input.
  assert run_job(finetune, "--train", t5_data, "--family", "t5", "--base", t5_base,
                 "--output_dir", t5_data, "--progress_interval", "0") == 2
  assert "holds the outputs of `autoais training-data`" in capsys.readouterr().err
  # A file under an output name that no run of finetune wrote.
  output = tmp_path / "taken"
  output.mkdir()
  (output / "config.json").write_text("{}")
  assert run_job(finetune, "--train", t5_data, "--family", "t5", "--base", t5_base,
                 "--output_dir", output, "--progress_interval", "0") == 2
  assert "config.json exists" in capsys.readouterr().err
  assert sorted(os.listdir(output)) == ["config.json"]


def test_the_python_api_runs_both_commands(root, source, roberta_base, tmp_path):
  import autoais  # pylint: disable=import-outside-toplevel
  data = autoais.training_data(input=[f"aggrefact:{source}"], family="nli-classifier",
                               output_dir=tmp_path / "data", validation_fraction=0.25)
  assert sum(entry["examples"] for entry in data.run["splits"].values()) == len(_items())
  model = autoais.finetune(train=[tmp_path / "data"], family="nli-classifier",
                           base=roberta_base, output_dir=tmp_path / "model", epochs=1,
                           batch_size=8, progress_interval=0)
  assert model.run == _card(tmp_path / "model")
  assert model.run["split_sizes"]["train"]["examples"] == data.run["splits"]["train"][
      "examples"]
  with pytest.raises(autoais.ConfigError):
    autoais.finetune(train=[tmp_path / "data"], family="t5", base=roberta_base,
                     output_dir=tmp_path / "refused")


def test_several_training_data_outputs_train_one_model(root, nli_data, source,
                                                       roberta_base, tmp_path):
  extra = _write_csv(tmp_path / "more.csv", [
      dict(row, claim=row["claim"].replace("the ", "a ", 1)) for row in _items()])
  more = _training_data(tmp_path, extra, "nli-classifier", "more")
  output = tmp_path / "model"
  assert run_job(finetune, "--train", f"{nli_data},{more}", "--family", "nli-classifier",
                 "--base", roberta_base, "--output_dir", output, "--epochs", "1",
                 "--progress_interval", "0") == 0
  card = _card(output)
  assert [entry["directory"] for entry in card["training_data"]] == [str(nli_data),
                                                                     str(more)]
  for split in ("train", "validation", "test"):
    sizes = [json.loads((d / "run.json").read_text())["splits"][split]["examples"]
             for d in (nli_data, more)]
    assert card["split_sizes"][split]["examples"] == sum(sizes)
  assert card["validation"]["n_rated"] == card["split_sizes"]["validation"]["examples"]
