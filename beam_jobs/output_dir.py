"""The one rule every job follows before it writes anything: no user file is lost.

    output = OutputDir("evaluate", options.output_dir, OUTPUT_FILES,
                       reads={"--predictions": files, "--gold": [gold]},
                       read_dirs={"--corpus": corpus_dir})
    work_dir = output.claim()   # ConfigError (exit 2) if the run could lose a file

A job names, up front, every file it writes into its output directory and every
file and directory it reads. `claim()` then refuses (ConfigError: the job exits 2
before writing anything) when

  * an input file lies in the output directory (at any depth): one of the job's
    output paths (or one of its temporary or scratch paths, or an earlier run's
    output that this run would remove) is named as such: `autoais evaluate
    --predictions ratings.csv --output_dir .` would overwrite its own input; any
    other would be read again, beside this run's outputs, by the next run over
    the same glob;
  * the output directory is, lies inside, or holds a directory the job reads (a
    corpus, a model, a score cache);
  * a file under one of the output names exists and no earlier run of the same job
    recorded it in this directory's ledger: autoais never overwrites a file it
    did not write;
  * the directory's ledger belongs to another job (a corpus directory is not an
    evaluation directory).

Otherwise it records the outputs and a fresh scratch directory in the ledger,
`_autoais_outputs.json`, *before* any output is written, then deletes what an
earlier run of the same job recorded there (its outputs, their temporary files,
its scratch directories), so that a failed or killed run never leaves a stale set
of files beside a new one, and a rerun with the same arguments can always clean up
after a killed one. Files the ledger does not name are never touched: a user's
notes in the output directory stay as they are.

Two runs into one directory at once would remove each other's scratch files and
mix their outputs, so the ledger also says which run is writing (`running`:
host, process id and start, last seen). `claim()` refuses while that run is
alive: on this host, while its process (same pid, same start) exists; from
another host, until it has not been seen for LEASE_EXPIRY_SECONDS (`run_job`
refreshes `last_seen` every HEARTBEAT_SECONDS while the pipeline runs, and clears
the entry when the run ends). A killed run's entry is stale: the next run takes
over. This is a guard, not a lock: two runs started within the same instant
can both pass it.
"""
import contextlib
import datetime
import json
import logging
import os
import re
import socket
import threading
import time
import uuid
from typing import Dict, List, Mapping, Optional, Sequence

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.schemas.errors import ConfigError
from autoais.transforms.io.atomic import delete_tree, write_text_atomically
from autoais.transforms.io.cloud_storage import write_refused

LEDGER = "_autoais_outputs.json"
LEDGER_FORMAT = "autoais-outputs/1"
SCRATCH_PREFIX = "_work-"
# atomic_create's temporary files: "{output}.tmp-{32 hex digits}".
_TEMPORARY = re.compile(r"\.tmp-[0-9a-f]{32}$")
_SCRATCH = re.compile(re.escape(SCRATCH_PREFIX) + r"[0-9a-f]{12}$")
HEARTBEAT_SECONDS = 60
LEASE_EXPIRY_SECONDS = 600


def _utc(seconds: float) -> str:
  return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(
      timespec="seconds")


def _process_start(pid: int) -> Optional[str]:
  """What tells this process from a later one with the same pid: the boot and
  the start time in clock ticks (Linux /proc); None where /proc is absent."""
  try:
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
      boot = f.read().strip()
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
      # Fields after the command name (which may hold spaces) in parentheses;
      # starttime is field 22, the 20th after the name.
      fields = f.read().rsplit(")", 1)[1].split()
    return f"{boot}:{fields[19]}"
  except (OSError, IndexError):
    return None


def _process_alive(pid: int, start: Optional[str]) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    pass  # exists, owned by another user
  except (OSError, OverflowError):
    return False
  return start is None or _process_start(pid) in (None, start)


def _is_local(path: str) -> bool:
  return FileSystems.get_scheme(path) in (None, "file")


def _resolved(path: str) -> str:
  """A canonical spelling of a path: symlinks, '.', '..' resolved for local
  paths; object-store URIs as given, without a trailing slash."""
  if _is_local(path):
    return os.path.realpath(path.removeprefix("file://"))
  return path.rstrip("/")


def _same_file(a: str, b: str) -> bool:
  """True if two paths name one file (hard links and case-insensitive file
  systems included where both exist)."""
  if _resolved(a) == _resolved(b):
    return True
  if _is_local(a) and _is_local(b):
    try:
      return os.path.samefile(a.removeprefix("file://"), b.removeprefix("file://"))
    except OSError:
      return False
  return False


def _inside(path: str, directory: str) -> bool:
  path, directory = _resolved(path), _resolved(directory)
  separator = os.sep if _is_local(directory) else "/"
  return path == directory or path.startswith(directory.rstrip(separator) + separator)


class OutputDir:
  """A job's output directory, claimed under the rule in the module docstring."""

  def __init__(self, job: str, path: str, outputs: Sequence[str],
               reads: Optional[Mapping[str, Sequence[str]]] = None,
               read_dirs: Optional[Mapping[str, Optional[str]]] = None,
               flag: str = "--output_dir"):
    for name in outputs:
      if not name or "/" in name or name in (LEDGER, ".", ".."):
        raise ValueError(f"output names are plain file names, got {name!r}")
    self.job = job
    self.path = path
    self.outputs = list(dict.fromkeys(outputs))
    self._reads = {flag_: list(paths) for flag_, paths in (reads or {}).items()}
    self._read_dirs = {flag_: d for flag_, d in (read_dirs or {}).items() if d}
    self._flag = flag
    self.scratch = None
    self._lease: Optional[dict] = None

  def join(self, name: str) -> str:
    return FileSystems.join(self.path, name)

  def check(self) -> None:
    """Checks the rule without writing anything (jobs call it before their other
    validations, so that a run that would overwrite its input says so first)."""
    self._checked_ledger()

  def claim(self) -> str:
    """Checks the rule, records this run in the ledger, removes what an earlier
    run of this job left; returns this run's scratch directory (not yet created)."""
    earlier = self._checked_ledger()
    scratch = f"{SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
    now = time.time()
    self._lease = {"run_id": uuid.uuid4().hex, "host": socket.gethostname(),
                   "pid": os.getpid(), "process_start": _process_start(os.getpid()),
                   "started": _utc(now), "last_seen": _utc(now)}
    # The ledger names everything this directory may hold of ours before anything
    # is deleted or written: a run killed at any point leaves a ledger from
    # which the next run can clean up.
    try:
      self._write_ledger(sorted(set(earlier["outputs"]) | set(self.outputs)),
                         sorted(set(earlier["scratch"]) | {scratch}), self._lease)
    except Exception as error:  # pylint: disable=broad-except
      # The first write of the run: a refusal is the configuration's (a bucket
      # that lists but takes no writes), found before anything was written.
      cause = write_refused(error)
      if cause is None:
        raise
      raise ConfigError(f"{self._flag} {self.path}: the write of {LEDGER} was "
                        f"refused ({cause}). Nothing was written.") from error
    self._delete_earlier(earlier)
    self._write_ledger(self.outputs, [scratch], self._lease)
    self.scratch = self.join(scratch)
    return self.scratch

  @contextlib.contextmanager
  def held(self):
    """While the run lasts: refreshes this run's `last_seen` in the ledger every
    HEARTBEAT_SECONDS; at the end (however it ends) clears the entry."""
    stop = threading.Event()

    def beat():
      while not stop.wait(HEARTBEAT_SECONDS):
        self._update_lease(keep=True)

    thread = threading.Thread(target=beat, name="autoais-lease", daemon=True)
    thread.start()
    try:
      yield self
    finally:
      stop.set()
      thread.join()
      self._update_lease(keep=False)

  def _update_lease(self, keep: bool) -> None:
    """Rewrites this run's entry (keep: with a fresh last_seen; else without
    it), unless another run has taken the directory over since."""
    if self._lease is None:
      return
    try:
      ledger = self._read_ledger()
      if (ledger["running"] or {}).get("run_id") != self._lease["run_id"]:
        return
      if keep:
        self._lease["last_seen"] = _utc(time.time())
      self._write_ledger(ledger["outputs"], ledger["scratch"],
                         self._lease if keep else None)
    except Exception as error:  # pylint: disable=broad-except
      # The run's outputs matter more than its entry: a stale entry only makes
      # the next run wait for it to expire.
      logging.warning("%s: could not update the ledger's running entry: %s",
                      self.join(LEDGER), error)

  def discard_scratch(self) -> None:
    """Removes this run's scratch directory (after a failed run; a complete run
    removes it as its last step)."""
    if self.scratch:
      delete_tree(self.scratch)

  # --------------------------------------------------------------------------

  def _checked_ledger(self) -> Dict[str, List[str]]:
    """Checks the rule; returns what the earlier run's ledger records."""
    self._check_directory()
    earlier = self._read_ledger()
    self._check_not_running(earlier["running"])
    # An earlier run's outputs are removed before this run writes: none may be
    # an input of this run either.
    self._check_inputs(self.outputs + earlier["outputs"] + [LEDGER])
    self._check_existing_outputs(earlier)
    return earlier

  def _check_directory(self) -> None:
    if _is_local(self.path):
      local = self.path.removeprefix("file://")
      if os.path.exists(local) and not os.path.isdir(local):
        raise ConfigError(f"{self._flag} {self.path}: is a file, not a directory")
    for flag, directory in self._read_dirs.items():
      if _inside(self.path, directory):
        raise ConfigError(
            f"{self._flag} {self.path} is inside {flag} {directory}: a job never "
            f"writes into a directory it reads. Choose another {self._flag} "
            "(nothing was written).")
      if _inside(directory, self.path):
        raise ConfigError(
            f"{self._flag} {self.path} holds {flag} {directory}: a job never "
            f"writes into a directory that holds its inputs. Choose another "
            f"{self._flag} (nothing was written).")

  def _check_not_running(self, running: Optional[dict]) -> None:
    if not running:
      return
    pid, host = running.get("pid"), running.get("host")
    try:
      seen = datetime.datetime.fromisoformat(str(running.get("last_seen"))).timestamp()
    except ValueError:
      seen = 0.0
    if host == socket.gethostname() and isinstance(pid, int):
      alive = pid != os.getpid() and _process_alive(pid, running.get("process_start"))
      how = "its process is alive"
    else:
      alive = time.time() - seen < LEASE_EXPIRY_SECONDS
      how = (f"it was last seen {running.get('last_seen')}; an entry not refreshed "
             f"for {LEASE_EXPIRY_SECONDS // 60} minutes is taken as a killed run's")
    if alive:
      raise ConfigError(
          f"{self._flag} {self.path}: another `autoais {self.job}` run is writing "
          f"here (host {host}, pid {pid}, started {running.get('started')}; {how}). "
          "Two runs into one directory would mix their outputs: wait for it to "
          f"end, or choose another {self._flag} (nothing was written).")
    logging.info("%s: the run recorded as writing here (host %s, pid %s) is gone; "
                 "this run cleans up after it", self.path, host, pid)

  def _forbidden(self, path: str, names: Sequence[str]) -> Optional[str]:
    """The name (of `names`, or a scratch directory) that an input path inside
    the output directory collides with, if any."""
    if _resolved(path) == _resolved(self.path):
      return None
    for name in names:
      candidate = self.join(name)
      if _same_file(path, candidate) or (
          _resolved(path).startswith(_resolved(candidate) + ".tmp-")):
        return name
    relative = _resolved(path)[len(_resolved(self.path)):].lstrip("/" + os.sep)
    if relative.startswith(SCRATCH_PREFIX):
      return relative.split("/")[0].split(os.sep)[0]
    return None

  def _check_inputs(self, names: Sequence[str]) -> None:
    """Refuses an input file inside the output directory, naming the output it
    collides with where it does (`names`: this run's and the earlier run's)."""
    for flag, paths in self._reads.items():
      for path in paths:
        if not _inside(path, self.path):
          continue
        name = self._forbidden(path, names)
        if name is None:
          raise ConfigError(
              f"{flag} {path} lies inside {self._flag} {self.path}: a job never "
              "writes into a directory that holds its inputs (the next run over "
              "the same files would read this run's outputs beside them). Choose "
              f"another {self._flag} (nothing was written).")
        if name in self.outputs or name == LEDGER or name.startswith(SCRATCH_PREFIX):
          what = f"is where `autoais {self.job}` writes its output {name}"
        else:
          what = (f"is {name}, an earlier `autoais {self.job}` run's output that "
                  "this run removes before it writes")
        raise ConfigError(
            f"{flag} {path} {what} ({self._flag} {self.path}): the run would "
            f"destroy its own input. Choose another {self._flag} (nothing was "
            "written).")

  def _read_ledger(self) -> Dict[str, List[str]]:
    path = self.join(LEDGER)
    if not FileSystems.exists(path):
      return {"outputs": [], "scratch": [], "running": None}
    try:
      with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        ledger = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as error:
      raise ConfigError(f"{path}: unreadable ledger ({error}); autoais does not "
                        "touch a directory it cannot account for") from error
    if not isinstance(ledger, dict) or ledger.get("format") != LEDGER_FORMAT:
      raise ConfigError(f"{path} was not written by autoais; choose another "
                        f"{self._flag} (nothing was written).")
    if ledger.get("job") != self.job:
      raise ConfigError(
          f"{self._flag} {self.path} holds the outputs of `autoais "
          f"{ledger.get('job')}` ({LEDGER}); give `autoais {self.job}` a directory "
          "of its own (nothing was written).")
    outputs = [name for name in ledger.get("outputs", [])
               if isinstance(name, str) and name and "/" not in name and name != LEDGER]
    scratch = [name for name in ledger.get("scratch", [])
               if isinstance(name, str) and _SCRATCH.match(name)]
    running = ledger.get("running")
    return {"outputs": outputs, "scratch": scratch,
            "running": running if isinstance(running, dict) else None}

  def _check_existing_outputs(self, earlier: Dict[str, List[str]]) -> None:
    recorded = set(earlier["outputs"])
    for name in self.outputs:
      if name not in recorded and FileSystems.exists(self.join(name)):
        raise ConfigError(
            f"{self._flag} {self.path}: {name} exists and no earlier `autoais "
            f"{self.job}` run recorded it in {LEDGER}; autoais never overwrites a "
            f"file it did not write. Move it or choose another {self._flag} "
            "(nothing was written).")

  def _write_ledger(self, outputs: Sequence[str], scratch: Sequence[str],
                    running: Optional[dict] = None) -> None:
    ledger = {
        "format": LEDGER_FORMAT,
        "job": self.job,
        "note": "Files autoais wrote here; a later run of the same job replaces "
                "them. autoais touches no other file in this directory.",
        "outputs": list(outputs),
        "scratch": list(scratch),
    }
    if running:
      ledger["running"] = running
    write_text_atomically(self.join(LEDGER), json.dumps(ledger, indent=2) + "\n")

  def _delete_earlier(self, earlier: Dict[str, List[str]]) -> None:
    stale = []
    for name in earlier["outputs"]:
      stale.append(self.join(name))
      leftovers = FileSystems.match([self.join(name) + ".tmp-*"])[0].metadata_list
      stale.extend(m.path for m in leftovers
                   if _TEMPORARY.search(m.path.rstrip("/")))
    stale = [path for path in stale if FileSystems.exists(path)]
    if stale:
      FileSystems.delete(stale)
    for name in earlier["scratch"]:
      delete_tree(self.join(name))
