"""The training loop of `autoais finetune`: batches in an order fixed by the
seed, validation with the scorer's own scores, the threshold calibrated on the
validation split as `agreement --calibrate_on` calibrates it, the best
checkpoint kept, checkpoints to resume a killed run from, progress lines.

* Order: epoch e visits the train split in a permutation drawn from
  Random(f"{seed}/{e}"); a step is one batch (the epoch's last may be
  smaller). AdamW at a constant learning rate (the paper's schedule),
  gradients clipped at norm 1.
* Validation, at step 0 (the base), every --eval_every steps and at the end:
  every validation example scored as the family's scorer scores it
  (transforms/finetune/trainable.py), then transforms/stats/agreement.py's best_threshold
  (agreement's calibration: the cut between distinct scores that maximises
  --calibrate_metric, ties nearest 0.5, then lowest) and agreement_statistics
  at that threshold. The checkpoint kept is the evaluation with the highest
  validation balanced accuracy at its calibrated threshold (the earliest of
  equals), the base included.
* Checkpoints, every --save_every steps, in {output_dir}/_finetune_checkpoints:
  step-NNNNNNNN.safetensors (trained parameters, AdamW's state, torch's random
  state), best-NNNNNNNN/ (the best model so far, saved as the scorers load it)
  and state.json, written last, which names them and holds the evaluations so
  far and the run's fingerprint (its settings, base and data). A run whose
  directory holds a state.json of the same fingerprint resumes from it and
  ends with the weights an uninterrupted run ends with; one of another
  fingerprint is refused. Files the state does not name are removed when it
  is written; the directory goes once the model is written.
"""
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import time
from typing import Callable, Dict, List, NamedTuple, Optional

import numpy as np

from autoais.schemas.errors import ConfigError
from autoais.transforms.finetune.data import Example, TrainingData, pairs
from autoais.transforms.io.atomic import write_text_atomically
from autoais.transforms.stats import agreement as stats

CHECKPOINT_DIR = "_finetune_checkpoints"
STATE = "state.json"
STATE_FORMAT = "autoais-finetune-checkpoint/1"
_STEP_FILE = re.compile(r"^step-(\d{8})\.safetensors$")
_BEST_DIR = re.compile(r"^best-(\d{8})$")
DEFAULT_THRESHOLD = 0.5  # the tie-break of calibration, as agreement's default


class Settings(NamedTuple):
  epochs: int
  batch_size: int
  learning_rate: float
  max_input_tokens: Optional[int]
  seed: int
  lora_rank: int
  device: str
  eval_every: Optional[int]
  save_every: Optional[int]
  calibrate_metric: str
  progress_interval: float


def steps_per_epoch(n_train: int, batch_size: int) -> int:
  return math.ceil(n_train / batch_size)


def batch_at(step: int, n_train: int, settings: Settings) -> List[int]:
  """The train rows of step `step` (from 0)."""
  per_epoch = steps_per_epoch(n_train, settings.batch_size)
  epoch, position = divmod(step, per_epoch)
  order = list(range(n_train))
  random.Random(f"{settings.seed}/{epoch}").shuffle(order)
  return order[position * settings.batch_size:(position + 1) * settings.batch_size]


def evaluate(scores: List[float], rows: List[Example], metric: str) -> dict:
  """The calibrated threshold and the validation figures at it, by agreement's
  own code (transforms/stats/agreement.py)."""
  labels = [bool(row.label) for row in rows]
  counts = stats.ScoreCounts()
  counts.add_arrays(np.asarray(scores, dtype=np.float64), labels)
  chosen = stats.best_threshold(counts.flush(), metric, DEFAULT_THRESHOLD)
  at_threshold = stats.AgreementCounts()
  for score, label in zip(scores, labels):
    at_threshold.add(label, score > chosen["threshold"], score)
  figures = stats.agreement_statistics(at_threshold)
  return {"threshold": chosen["threshold"], "calibration": chosen,
          "validation": {name: figures[name] for name in (
              "n_rated", "n_human_attributable", "accuracy", "balanced_accuracy",
              "cohen_kappa", "roc_auc", "pr_auc", "predicted_ais", "human_ais")}}


def fingerprint(settings: Settings, base: dict, data: TrainingData, family: str) -> str:
  """What a resumed run must share with the run it resumes."""
  kept = settings._asdict()
  for name in ("save_every", "progress_interval"):
    kept.pop(name)
  text = json.dumps({"family": family, "settings": kept, "base": base,
                     "data": [[entry["files"][name]["sha256"] for name in sorted(
                         entry["files"])] for entry in data.described]},
                    sort_keys=True)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Checkpoints:
  """The checkpoint directory of a run (see the module docstring)."""

  def __init__(self, output_dir: str, fingerprint_: str):
    self.directory = os.path.join(output_dir, CHECKPOINT_DIR)
    self._fingerprint = fingerprint_

  def _path(self, name: str) -> str:
    return os.path.join(self.directory, name)

  def resumable(self) -> Optional[dict]:
    """The state to resume from, None where there is none; ConfigError where
    it is another run's."""
    path = self._path(STATE)
    if not os.path.exists(path):
      return None
    try:
      with open(path, encoding="utf-8") as f:
        state = json.load(f)
    except (OSError, ValueError) as error:
      raise ConfigError(f"{path}: unreadable checkpoint state ({error}); remove "
                        f"{self.directory} to start afresh") from error
    if state.get("format") != STATE_FORMAT or state.get("fingerprint") != self._fingerprint:
      raise ConfigError(
          f"{path} holds the checkpoints of another `autoais finetune` run (other "
          "flags, base or data): remove it to start afresh, or choose another "
          "--output_dir (nothing was written)")
    return state

  def load_tensors(self, state: dict) -> Dict[str, object]:
    from safetensors.torch import load_file  # pylint: disable=import-outside-toplevel
    return load_file(self._path(state["checkpoint"]))

  def best_dir(self, step: int) -> str:
    return self._path(f"best-{step:08d}")

  def save_best(self, step: int, save: Callable[[str], List[str]]) -> str:
    directory = self.best_dir(step)
    if os.path.exists(directory):
      shutil.rmtree(directory)
    save(directory)
    return os.path.basename(directory)

  def commit(self, step: int, tensors, state: dict) -> None:
    """Writes step's tensors, then the state naming them; removes what the
    state no longer names."""
    from safetensors.torch import save_file  # pylint: disable=import-outside-toplevel
    os.makedirs(self.directory, exist_ok=True)
    name = f"step-{step:08d}.safetensors"
    temporary = self._path(name + ".tmp")
    save_file(tensors, temporary)
    os.replace(temporary, self._path(name))
    state = dict(state, format=STATE_FORMAT, fingerprint=self._fingerprint,
                 checkpoint=name, step=step)
    write_text_atomically(self._path(STATE), json.dumps(state, indent=2) + "\n")
    self._clean(state)

  def _clean(self, state: dict) -> None:
    kept = {state.get("checkpoint"), (state.get("best") or {}).get("dir")}
    for name in os.listdir(self.directory):
      if name in kept:
        continue
      path = self._path(name)
      if _STEP_FILE.match(name) or name.endswith(".safetensors.tmp"):
        os.unlink(path)
      elif _BEST_DIR.match(name):
        shutil.rmtree(path)

  def best_path(self, state: dict) -> str:
    return self._path(state["best"]["dir"])

  def remove(self) -> None:
    """Once the model is written: the files of this run only, then the
    directory if nothing else is left in it."""
    if not os.path.isdir(self.directory):
      return
    for name in os.listdir(self.directory):
      path = self._path(name)
      if name == STATE or _STEP_FILE.match(name) or name.endswith(".safetensors.tmp"):
        os.unlink(path)
      elif _BEST_DIR.match(name):
        shutil.rmtree(path)
    if not os.listdir(self.directory):
      os.rmdir(self.directory)


def plain(value):
  """JSON's own types of a value holding numpy numbers."""
  if isinstance(value, dict):
    return {key: plain(item) for key, item in value.items()}
  if isinstance(value, (list, tuple)):
    return [plain(item) for item in value]
  if isinstance(value, np.generic):
    return value.item()
  return value


def _duration(seconds: float) -> str:
  seconds = int(round(seconds))
  if seconds >= 3600:
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
  if seconds >= 60:
    return f"{seconds // 60}m {seconds % 60:02d}s"
  return f"{seconds}s"


class _Progress:
  """Lines on stderr every `interval` seconds: the step, the loss, the rate and
  the time left (the steps and evaluations to come at this run's own pace)."""

  def __init__(self, total_steps: int, evaluations_left: Callable[[int], int],
               interval: float):
    self._total = total_steps
    self._evaluations_left = evaluations_left
    self._interval = interval
    self._step_seconds: List[float] = []
    self._eval_seconds: List[float] = []
    self._losses: List[float] = []
    self._last = time.monotonic()

  def stepped(self, step: int, seconds: float, loss: float) -> None:
    self._step_seconds.append(seconds)
    self._losses.append(loss)
    if self._interval and time.monotonic() - self._last >= self._interval:
      self.line(step)

  def evaluated(self, seconds: float) -> None:
    self._eval_seconds.append(seconds)

  def time_left(self, step: int) -> float:
    per_step = float(np.mean(self._step_seconds[-50:])) if self._step_seconds else 0.0
    per_eval = float(np.mean(self._eval_seconds)) if self._eval_seconds else 0.0
    return (self._total - step) * per_step + self._evaluations_left(step) * per_eval

  def line(self, step: int) -> None:
    self._last = time.monotonic()
    loss = float(np.mean(self._losses[-20:])) if self._losses else float("nan")
    rate = (1.0 / float(np.mean(self._step_seconds[-50:]))
            if self._step_seconds else 0.0)
    print(f"autoais finetune: step {step}/{self._total} | loss {loss:.4f} | "
          f"{rate:.2f} steps/s | about {_duration(self.time_left(step))} left",
          file=sys.stderr, flush=True)


def train(trainable, data: TrainingData, settings: Settings,
          checkpoints: Checkpoints) -> dict:
  """Trains `trainable` (transforms/finetune/trainable.py) on the train split; returns the
  run's record: the evaluations, the best one, the steps; the best model is in
  checkpoints.best_path(record)."""
  import torch  # pylint: disable=import-outside-toplevel
  train_rows = data.splits["train"]
  validation = data.splits["validation"]
  validation_pairs = pairs(validation)
  per_epoch = steps_per_epoch(len(train_rows), settings.batch_size)
  total = settings.epochs * per_epoch
  eval_every = settings.eval_every or per_epoch
  save_every = settings.save_every or eval_every
  optimizer = torch.optim.AdamW(trainable.parameters(), lr=settings.learning_rate,
                                weight_decay=0.0)
  state = checkpoints.resumable()
  step, history, best, base_evaluation = 0, [], None, None
  if state is not None:
    trainable.restore(checkpoints.load_tensors(state), optimizer)
    step, history, best = state["step"], state["history"], state["best"]
    recent_losses = state["recent_losses"]
    base_evaluation = state["base_evaluation"]
    print(f"autoais finetune: resuming from step {step} of {total} "
          f"({os.path.join(checkpoints.directory, state['checkpoint'])})",
          file=sys.stderr, flush=True)

  def evaluations_left(at: int) -> int:
    return len([s for s in range(at + 1, total + 1) if s % eval_every == 0 or s == total])

  progress = _Progress(total, evaluations_left, settings.progress_interval)

  def validate(at: int, loss: Optional[float]):
    nonlocal best, base_evaluation
    started = time.monotonic()
    result = evaluate(trainable.scores(validation_pairs), validation,
                      settings.calibrate_metric)
    progress.evaluated(time.monotonic() - started)
    entry = {"step": at, "train_loss": loss, "threshold": result["threshold"],
             **{name: result["validation"][name] for name in
                ("balanced_accuracy", "accuracy", "roc_auc")}}
    history.append(plain(entry))
    if at == 0:
      base_evaluation = plain(dict(result["validation"], threshold=result["threshold"]))
    if best is None or entry["balanced_accuracy"] > best["balanced_accuracy"]:
      best = plain(dict(result, step=at, balanced_accuracy=entry["balanced_accuracy"],
                        dir=checkpoints.save_best(at, trainable.save)))
    print(f"autoais finetune: step {at}/{total}: validation balanced accuracy "
          f"{entry['balanced_accuracy']:.4f} at threshold {entry['threshold']:.4g} "
          f"(best {best['balanced_accuracy']:.4f}, step {best['step']})",
          file=sys.stderr, flush=True)

  if state is None:
    validate(0, None)
    recent_losses = []
  recent: List[float] = list(recent_losses)
  while step < total:
    started = time.monotonic()
    batch = [train_rows[i] for i in batch_at(step, len(train_rows), settings)]
    loss = trainable.loss([(row.premise, row.hypothesis, row.label) for row in batch])
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable.parameters(), 1.0)
    optimizer.step()
    step += 1
    recent.append(float(loss.detach()))
    progress.stepped(step, time.monotonic() - started, recent[-1])
    if step % eval_every == 0 or step == total:
      validate(step, float(np.mean(recent)))
      recent = []
    if step % save_every == 0 and step < total:
      checkpoints.commit(step, trainable.checkpoint_tensors(optimizer),
                         plain({"history": history, "best": best,
                                "recent_losses": recent,
                                "base_evaluation": base_evaluation}))
  progress.line(step)
  return {"history": history, "best": best, "base_evaluation": base_evaluation,
          "total_steps": total,
          "steps_per_epoch": per_epoch, "eval_every": eval_every,
          "save_every": save_every, "resumed_from": None if state is None
          else state["step"]}
