"""A simulated accelerator, for benches and tests on a machine without one.

A model directory holding MARKER, `{"rate": RATE, "record": FILE}`, loads as
its family loads it (t5, nli-classifier, minicheck: the same checks,
tokenisation, windows, token-budget batches and padding), but each padded
batch goes to a SimulatedDevice instead of the torch model: it waits, the
GIL released as a CUDA call releases it (time.sleep), for the time the card
of RATES takes for the batch's padded tokens, and answers a score of each
input's ids alone. Each batch's busy interval is kept, and appended to
`record` (optional; one JSON line per batch from every worker process):
busy_share() is the share of the scoring window in which it was busy.

A file in the model directory, not a scorer flag: it reaches every job and
runner that loads the model (workers read the directory, not the launcher's
flags) without a flag in every family's table; never ignored: run.json's
model description names it, and what it cannot simulate is refused
(`--device cuda`, `--decision decode`, a family whose model's outputs are not
one score per input, lettucedetect's: token_budget.load_weights refuses the
marker for every family that does not take it; an unknown rate or key).
"""
import json
import os
import threading
import time
from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np

from autoais.schemas.errors import ModelError

MARKER = "autoais_simulated_device.json"


class Rate(NamedTuple):
  tokens: int  # padded tokens of the measured batch
  seconds: float  # the card's time for that batch
  source: str  # where the figure was measured


# The GPU rates measured by bench/gpu_families.py (bench/README.md, "On a
# GPU"; bfloat16, weights random at the published shapes), scaled linearly
# by a batch's padded tokens.
RATES: Dict[str, Rate] = {
    "h100-true-11b": Rate(64 * 256, 1.007, "H100, TRUE (T5-11B), 64 x 256 tokens: 1,007 ms"),
    "h100-flan-t5-large": Rate(233, 1 / 635, "H100, the t5 handler's model calls alone: "
                               "635 pairs/s of 233 pieces"),
    "h200-flan-t5-large": Rate(298, 1 / 513, "H200, the t5 handler's model calls alone: "
                               "513 pairs/s of 298 pieces"),
    "h100-roberta-large": Rate(64 * 256, 0.023, "H100, RoBERTa-large, 64 x 256 tokens: 23 ms"),
    "h100-deberta-v3-large": Rate(64 * 256, 0.084, "H100, DeBERTa-v3-large, 64 x 256 "
                                  "tokens: 84 ms"),
}


def read_marker(local_dir: str) -> Optional[Dict[str, Any]]:
  """The marker of a local model directory, checked; None where it has none."""
  path = os.path.join(local_dir, MARKER)
  if not os.path.exists(path):
    return None
  try:
    with open(path, encoding="utf-8") as f:
      marker = json.load(f)
  except ValueError as error:
    raise ModelError(f"{path}: not JSON: {error}") from error
  if not isinstance(marker, dict) or marker.get("rate") not in RATES:
    raise ModelError(f"{path}: 'rate' must be one of {', '.join(RATES)} "
                     f"(the simulated accelerator's measured rates), not "
                     f"{marker.get('rate') if isinstance(marker, dict) else marker!r}")
  unknown = set(marker) - {"rate", "record"}
  if unknown:
    raise ModelError(f"{path}: unknown keys {sorted(unknown)} (known: rate, record)")
  return marker


def describe(local_dir: str) -> Dict[str, Any]:
  """What run.json records of a simulated device ({} where none)."""
  marker = read_marker(local_dir)
  if marker is None:
    return {}
  rate = RATES[marker["rate"]]
  return {"simulated_device": {"rate": marker["rate"],
                               "padded_tokens_per_s": round(rate.tokens / rate.seconds),
                               "source": rate.source}}


class SimulatedDevice:
  """Waits for a batch's padded tokens at a rate, GIL released; records its
  busy intervals (shared by a worker's threads: one device)."""

  def __init__(self, rate: str, record: Optional[str] = None):
    self.rate = RATES[rate]
    self._record = record
    self._lock = threading.Lock()
    self.intervals: List[tuple] = []

  def seconds(self, padded_tokens: int) -> float:
    return padded_tokens * self.rate.seconds / self.rate.tokens

  def run(self, ids, mask) -> np.ndarray:
    """P(supported) of each row of the padded batch (torch tensors): a
    deterministic value of its unpadded ids, after the batch's device time."""
    ids, mask = ids.cpu().numpy(), mask.cpu().numpy()
    # One device: a batch waits for the one before it, as kernels queue on a GPU.
    with self._lock:
      seconds = self.seconds(ids.size)
      start = time.monotonic()
      # The device is done at `end`, whenever this thread gets the GIL back
      # after the sleep: the busy interval is the batch's time, not the wait
      # for the host that follows it.
      end = start + seconds
      time.sleep(seconds)
      self.intervals.append((start, end))
      if self._record:
        with open(self._record, "a", encoding="utf-8") as f:
          f.write(json.dumps({"start": start, "end": end, "tokens": int(ids.size),
                              "pid": os.getpid()}) + "\n")
    weights = np.arange(1, ids.shape[1] + 1, dtype=np.int64)
    return ((ids * mask * weights).sum(axis=1) % 101) / 100.0

  def busy_share(self) -> float:
    return _busy_share(self.intervals)


def busy_share(record: str) -> float:
  """The share of the scoring window in which a device was busy, from a
  record file (every process's batches)."""
  with open(record, encoding="utf-8") as f:
    intervals = [(line["start"], line["end"]) for line in map(json.loads, f)]
  return _busy_share(intervals)


def _busy_share(intervals) -> float:
  """Busy time (overlapping intervals counted once) over the window from the
  first start to the last end."""
  if not intervals:
    return 0.0
  busy, covered = 0.0, float("-inf")
  for start, end in sorted(intervals):
    busy += max(0.0, end - max(start, covered))
    covered = max(covered, end)
  window = covered - min(start for start, _ in intervals)
  return busy / window if window > 0 else 1.0


def simulated(local_dir: str, device: str) -> Optional[SimulatedDevice]:
  """The SimulatedDevice a model directory asks for, or None; refused on a
  real accelerator (the simulation is the device)."""
  marker = read_marker(local_dir)
  if marker is None:
    return None
  if device != "cpu":
    raise ModelError(f"--model {local_dir}: it holds {MARKER} (a simulated device) and "
                     f"--device {device} asks for a real one; remove one of them")
  return SimulatedDevice(marker["rate"], marker.get("record"))
