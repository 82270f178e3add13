"""finetune: train an attribution detector on training-data outputs, saved as
the scorers load any checkpoint, with its calibrated threshold (docs/finetune.md).

    autoais finetune --train DATA_DIR[,DATA_DIR...] --family t5|nli-classifier \
        --base DIR_OR_HUB_ID [--base_revision REV] --output_dir OUT \
        [--epochs 3] [--batch_size 16] [--learning_rate 1e-4] [--max_input_tokens N] \
        [--lora_rank R] [--eval_every STEPS] [--save_every STEPS] [--seed 0] \
        [--calibrate_metric balanced_accuracy|accuracy] [--device cpu|cuda] \
        [--progress_interval 10]
    python -m autoais.beam_jobs.finetune ...

Not a Beam pipeline (one process trains one model), so it takes no Beam
options; it lives with the jobs because it is one of the commands and keeps
their rules: flags checked first, every refusal (exit 2, naming the file)
before anything is written: an empty train or validation split, one holding a
single class, a base that does not load as the family's model, an output
directory that breaks beam_jobs/output_dir.py's rules.

`--base` is a local directory or a hub id, resolved as the scorers resolve
--model (models/hub.py: pinned to a commit, the offline cache where there is
no network). t5 trains a T5 / mT5 as TRUE is trained (targets "1" / "0"),
nli-classifier a sequence classifier with a two-label head; with --lora_rank,
LoRA adapters (peft) merged into the saved weights (transforms/finetune/trainable.py).
The loop, validation, calibration and checkpoints: transforms/finetune/training.py.

Outputs in --output_dir: config.json, model.safetensors (generation_config.json
for t5) and the base's tokenizer files, the checkpoint of the best validation
balanced accuracy; model_card.json (base and revision, data digests, split
sizes, steps, seed, the threshold calibrated on validation and the validation
figures at it) and MODEL_CARD.md. `--scorer t5|nli-classifier --model OUT`
decides at the card's threshold unless --threshold is given. A killed run,
rerun with the same flags, resumes from its last checkpoint
(OUT/_finetune_checkpoints, every --save_every steps).
"""
if __name__ == "__main__":
  # Run the package module.
  import sys
  from autoais.beam_jobs.finetune import run
  sys.exit(run())

import argparse
import logging
import os
import shutil
import sys
import time

from autoais.beam_jobs.output_dir import OutputDir
from autoais.models import checkpoints, hub
from autoais.transforms.finetune.trainable import MODEL_FILES, load_trainable, tokenizer_file_names
from autoais.schemas import FAMILIES
from autoais.schemas.errors import ConfigError, InputError, ModelError, require_choice
from autoais.transforms.finetune.card import (CARD_JSON, CARD_MARKDOWN, card_json,
                                              card_markdown)
from autoais.transforms.finetune.data import (check_trainable, read_training_data,
                                              split_sizes)
from autoais.transforms.finetune.training import (Checkpoints, Settings, fingerprint,
                                                  plain, train)
from autoais.transforms.io.atomic import write_text_atomically
from autoais.transforms.rows.run_record import software_versions, utc_now
from autoais.transforms.stats.agreement import METRICS

EXIT_CONFIG_ERROR = 2
EXIT_FAILED = 1


def argument_parser() -> argparse.ArgumentParser:
  parser_ = argparse.ArgumentParser(
      prog="autoais finetune", description=__doc__.split("\n\n")[0],
      formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
  add = parser_.add_argument
  add("--train", required=True, help="training-data output directories, comma "
      "separated (their train and validation splits).")
  add("--family", required=True, help="t5 or nli-classifier: as the data's.")
  add("--base", required=True, help="The model to start from: a local directory or "
      "a Hugging Face hub id (org/name).")
  add("--base_revision", default=None, help="A hub --base's branch, tag or commit.")
  add("--output_dir", required=True, help="Local directory for the model and its card.")
  add("--epochs", type=int, default=3, help="Passes over the train split (default 3).")
  add("--batch_size", type=int, default=16, help="Examples a step (default 16).")
  add("--learning_rate", type=float, default=1e-4,
      help="AdamW's constant learning rate (default 1e-4, the paper's).")
  add("--max_input_tokens", type=int, default=None,
      help="Training inputs are cut to this many tokens, the premise's end first "
      "(default 256, or the base's position table where it takes fewer; scoring "
      "windows long premises as the scorers do).")
  add("--lora_rank", type=int, default=0,
      help="Train LoRA adapters of this rank (peft) instead of every weight, merged "
      "into the saved weights (default 0: full fine-tuning).")
  add("--eval_every", type=int, default=None,
      help="Steps between validations (default: one epoch).")
  add("--save_every", type=int, default=None,
      help="Steps between checkpoints to resume from (default: --eval_every).")
  add("--seed", type=int, default=0, help="Seed of the order, the new weights and "
      "dropout (default 0).")
  add("--calibrate_metric", default="balanced_accuracy",
      help="What the threshold maximises on validation: balanced_accuracy "
      "(default) or accuracy.")
  add("--device", default="cpu", help="cpu (default) or cuda (bfloat16 autocast).")
  add("--progress_interval", type=float, default=10.0,
      help="Seconds between progress lines (step, loss, rate, time left); 0: none.")
  return parser_


def _check(args) -> None:
  require_choice("--family", args.family, FAMILIES)
  from autoais.models.token_budget import DEVICES  # pylint: disable=import-outside-toplevel
  require_choice("--device", args.device, DEVICES)
  require_choice("--calibrate_metric", args.calibrate_metric, METRICS)
  for name in ("epochs", "batch_size"):
    if getattr(args, name) < 1:
      raise ConfigError(f"--{name} must be positive")
  for name in ("eval_every", "save_every", "max_input_tokens"):
    if getattr(args, name) is not None and getattr(args, name) < 1:
      raise ConfigError(f"--{name} must be positive")
  if not args.learning_rate > 0:
    raise ConfigError("--learning_rate must be positive")
  if args.lora_rank < 0 or args.seed < 0:
    raise ConfigError("--lora_rank and --seed must be 0 or more")
  if args.lora_rank:
    try:
      import peft  # pylint: disable=import-outside-toplevel,unused-import
    except ImportError as error:
      raise ConfigError("--lora_rank needs peft: pip install 'autoais-beam[finetune]'"
                        ) from error
  if args.device == "cuda":
    import torch  # pylint: disable=import-outside-toplevel
    if not torch.cuda.is_available():
      raise ConfigError("--device cuda: no CUDA device on this machine")
  if "://" in args.output_dir:
    raise ConfigError(f"--output_dir {args.output_dir}: finetune writes a local "
                      "directory (copy the model to gs:// afterwards)")


def _train_dirs(value: str):
  dirs = [part.strip() for part in value.split(",") if part.strip()]
  if not dirs:
    raise ConfigError("--train names no directory")
  for directory in dirs:
    if not os.path.isdir(directory):
      raise InputError(f"--train {directory}: not a directory (a training-data "
                       "output)")
  return dirs


def _base(args):
  """(local directory, its description for the card) of --base."""
  pinned = hub.pin(args.base, args.base_revision, "--base", "--base_revision")
  model = hub.pinned(pinned)
  try:
    checkpoints.model_files(pinned)
    local_dir = checkpoints.local_model_dir(pinned)
  except ModelError as error:
    raise ModelError(f"--base {args.base}: {error}") from error
  return local_dir, {"path": args.base, "resolved": pinned,
                     "revision": model.commit if model else None,
                     "weights_sha256": checkpoints.weights_checksum(local_dir)}


def _write_model(best_dir: str, output_dir: str, names) -> None:
  for name in names:
    temporary = os.path.join(output_dir, f"{name}.tmp-finetune")
    shutil.copyfile(os.path.join(best_dir, name), temporary)
    os.replace(temporary, os.path.join(output_dir, name))


def run(argv=None) -> int:
  logging.getLogger().setLevel(logging.INFO)
  args = argument_parser().parse_args(sys.argv[1:] if argv is None else argv)
  started, started_at = time.time(), utc_now()
  try:
    _check(args)
    dirs = _train_dirs(args.train)
    data = read_training_data(dirs, args.family)
    check_trainable(data, dirs)
    base_dir, base = _base(args)
    model_files = list(MODEL_FILES[args.family]) + tokenizer_file_names(base_dir)
    output = OutputDir(
        "finetune", args.output_dir, model_files + [CARD_JSON, CARD_MARKDOWN],
        reads={"--train": [os.path.join(entry["directory"], name)
                           for entry in data.described for name in entry["files"]]},
        read_dirs={"--base": base_dir})
    output.check()
    trainable = load_trainable(args.family, base_dir, seed=args.seed,
                               lora_rank=args.lora_rank, device=args.device,
                               max_input_tokens=args.max_input_tokens)
    settings = Settings(args.epochs, args.batch_size, args.learning_rate,
                        trainable.max_input_tokens, args.seed, args.lora_rank,
                        args.device, args.eval_every, args.save_every,
                        args.calibrate_metric, args.progress_interval)
    saved = Checkpoints(args.output_dir, fingerprint(settings, base, data, args.family))
    saved.resumable()
    output.claim()
  except (ConfigError, InputError, ModelError) as error:
    print(f"autoais finetune: error: {error}", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  try:
    with output.held():
      record = train(trainable, data, settings, saved)
      best = record["best"]
      _write_model(saved.best_path(record), args.output_dir, model_files)
      card = plain({
          "family": args.family, "base": base,
          "threshold": best["threshold"], "calibration": best["calibration"],
          # The scorers refuse another --max_input_tokens beside this threshold.
          "calibrated_max_input_tokens": trainable.scoring_max_input_tokens,
          "validation": best["validation"],
          "base_validation": record["base_evaluation"],
          "split_sizes": split_sizes(data), "training_data": data.described,
          "seed": args.seed,
          "steps": {"total": record["total_steps"], "per_epoch": record["steps_per_epoch"],
                    "best": best["step"], "eval_every": record["eval_every"],
                    "save_every": record["save_every"],
                    "resumed_from": record["resumed_from"]},
          "settings": {name: value for name, value in settings._asdict().items()
                       if name != "progress_interval"},
          "validation_history": record["history"],
          "started_at": started_at, "wall_seconds": round(time.time() - started, 3),
          "versions": software_versions()})
      write_text_atomically(os.path.join(args.output_dir, CARD_JSON), card_json(card))
      write_text_atomically(os.path.join(args.output_dir, CARD_MARKDOWN),
                            card_markdown(card))
      saved.remove()
  except Exception as error:  # pylint: disable=broad-except
    logging.exception("autoais finetune failed")
    print(f"autoais finetune: failed: {type(error).__name__}: {error}", file=sys.stderr)
    return EXIT_FAILED
  # The card's table of validation figures, then where the outputs are.
  print(next(part for part in card_markdown(card).split("\n\n")
             if part.startswith("| validation")) + "\n", file=sys.stdout)
  print(f"autoais finetune: outputs in {args.output_dir}: "
        f"{', '.join(model_files + [CARD_JSON, CARD_MARKDOWN])}", flush=True)
  return 0
