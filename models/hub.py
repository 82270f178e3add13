"""Models named as the field names them: a Hugging Face hub id (`org/name`).

    autoais evaluate ... --scorer t5 --model google/t5_xxl_true_nli_mixture \
        [--model_revision BRANCH|TAG|COMMIT]

A hub id is resolved with `huggingface_hub` into its cache in two steps: at
launch, `pin` resolves the revision to a commit (from the hub, or from the
cache's `refs/` offline or where the hub cannot be reached), and the model
travels to the workers as `org/name@<commit>`, so that every worker loads the
same files; on a worker, `snapshot_dir` downloads the files loading reads
(never pickle checkpoints) into the cache, once per machine. The cache is
read from the environment at each call (_cache_dir); a token is the
environment's (HF_TOKEN) or the cache's login, never a flag; a local
directory wins over an id it looks like. The contract: docs/scorers.md,
"Models by hub id".
"""
import os
import re
from typing import Dict, Iterable, NamedTuple, Optional

from autoais.schemas.errors import ModelError

# The hub's repository names: `org/name`, letters, digits, '.', '_', '-'.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_DEFAULT_REVISION = "main"


class HubModel(NamedTuple):
  """A hub model pinned to a commit; travels as the string `org/name@<commit>`."""
  repo_id: str
  commit: str

  def __str__(self) -> str:
    return f"{self.repo_id}@{self.commit}"


def is_hub_id(path: str) -> bool:
  """`org/name` that is not an existing local path and has no URI scheme."""
  return bool(_HUB_ID.match(path or "")) and "://" not in path and not os.path.exists(
      path) and ".." not in path and "--" not in path


def pinned(path: Optional[str]) -> Optional[HubModel]:
  """The HubModel of a pinned reference (`org/name@<commit>`), else None."""
  repo_id, _, commit = (path or "").partition("@")
  if _COMMIT.match(commit) and _HUB_ID.match(repo_id):
    return HubModel(repo_id, commit)
  return None


def _cache_dir() -> str:
  """huggingface_hub's cache directory, read from the environment now (its own
  constant is read once, when it is imported)."""
  if os.environ.get("HF_HUB_CACHE"):
    return os.environ["HF_HUB_CACHE"]
  home = os.environ.get("HF_HOME") or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
  return os.path.join(home, "hub")


def offline() -> bool:
  return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _repo_cache(repo_id: str) -> str:
  return os.path.join(_cache_dir(), "models--" + repo_id.replace("/", "--"))


def _where(repo_id: str) -> str:
  return f"the Hugging Face cache ({_repo_cache(repo_id)})"


def _hub_error(flag: str, repo_id: str, revision: str, error: Exception) -> ModelError:
  """A ModelError saying why the hub refused `repo_id` at `revision`."""
  from huggingface_hub import errors  # pylint: disable=import-outside-toplevel
  if isinstance(error, errors.GatedRepoError):
    why = ("is gated: accept its terms on the hub and set HF_TOKEN in the "
           "environment (of the workers too)")
  elif isinstance(error, errors.RevisionNotFoundError):
    why = f"has no revision {revision!r}"
  elif isinstance(error, errors.RepositoryNotFoundError):
    why = ("is not a model on the Hugging Face hub, or it is private and HF_TOKEN "
           "is not set (and it is not a local directory either)")
  else:
    why = f"could not be read from the hub: {error}"
  return ModelError(f"{flag} {repo_id}: {why}")


def _unreachable(error: Exception) -> bool:
  """True for errors of the network or the hub's service (not of the request)."""
  from huggingface_hub import errors  # pylint: disable=import-outside-toplevel
  if isinstance(error, (errors.RepositoryNotFoundError, errors.RevisionNotFoundError,
                        errors.GatedRepoError, errors.EntryNotFoundError)):
    return False
  status = getattr(getattr(error, "response", None), "status_code", None)
  return status is None or status >= 500 or status == 429


def _cached_commit(repo_id: str, revision: str) -> Optional[str]:
  if _COMMIT.match(revision):
    return revision if os.path.isdir(os.path.join(_repo_cache(repo_id), "snapshots",
                                                  revision)) else None
  try:
    with open(os.path.join(_repo_cache(repo_id), "refs", revision), encoding="utf-8") as f:
      commit = f.read().strip()
  except OSError:
    return None
  return commit if _COMMIT.match(commit) else None


def resolve(repo_id: str, revision: Optional[str], flag: str) -> HubModel:
  """`repo_id` at `revision` (a branch, tag or commit; default main) pinned to
  its commit: asked of the hub, else (offline, or the hub unreachable) read
  from the cache's refs/."""
  revision = revision or _DEFAULT_REVISION
  if not offline():
    from huggingface_hub import HfApi  # pylint: disable=import-outside-toplevel
    try:
      return HubModel(repo_id, HfApi().model_info(repo_id, revision=revision).sha)
    except Exception as error:  # pylint: disable=broad-except
      if not _unreachable(error):
        raise _hub_error(flag, repo_id, revision, error) from error
      cached = _cached_commit(repo_id, revision)
      if cached is None:
        # The message says what went wrong and what to do; the network's own
        # traceback (pages of huggingface_hub and urllib3) would bury it.
        raise ModelError(
            f"{flag} {repo_id}: the Hugging Face hub cannot be reached ({error}) and "
            f"{_where(repo_id)} has no revision {revision!r}: download the model "
            f"where the hub can be reached ({_download_command(repo_id, revision)}) "
            "into the cache this machine reads (HF_HOME), or name a local "
            "directory") from None
      return HubModel(repo_id, cached)
  cached = _cached_commit(repo_id, revision)
  if cached is None:
    raise ModelError(
        f"{flag} {repo_id}: HF_HUB_OFFLINE is set and {_where(repo_id)} has no "
        f"revision {revision!r}: download the model first "
        f"({_download_command(repo_id, revision)}) or unset HF_HUB_OFFLINE (or name a "
        "local directory)")
  return HubModel(repo_id, cached)


def _download_command(repo_id: str, revision: str) -> str:
  return (f"`hf download {repo_id}"
          f"{'' if revision == _DEFAULT_REVISION else f' --revision {revision}'}`")


def _snapshot_files(model: HubModel) -> Dict[str, int]:
  folder = os.path.join(_repo_cache(model.repo_id), "snapshots", model.commit)
  files = {}
  for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
    path = os.path.join(folder, name)
    if os.path.isfile(path):  # a broken link (blob missing) is not a file
      files[name] = os.path.getsize(path)
  return files


def list_files(model: HubModel, flag: str) -> Dict[str, int]:
  """{file name: size} of the commit's top-level files: the hub's listing, else
  (offline, or the hub unreachable) the files of its snapshot in the cache."""
  if not offline():
    from huggingface_hub import HfApi  # pylint: disable=import-outside-toplevel
    try:
      entries = HfApi().list_repo_tree(model.repo_id, revision=model.commit)
      return {entry.path: entry.size for entry in entries
              if "/" not in entry.path and hasattr(entry, "size")}
    except Exception as error:  # pylint: disable=broad-except
      if not _unreachable(error):
        raise _hub_error(flag, model.repo_id, model.commit, error) from error
  return _snapshot_files(model)


def file_path(model: HubModel, name: str, flag: str) -> str:
  """A local path of one (small) file of the commit, downloaded into the cache
  where it is not there yet."""
  from huggingface_hub import hf_hub_download  # pylint: disable=import-outside-toplevel
  try:
    return hf_hub_download(model.repo_id, name, revision=model.commit,
                           cache_dir=_cache_dir(), local_files_only=offline())
  except Exception as error:  # pylint: disable=broad-except
    raise ModelError(f"{flag} {model.repo_id}@{model.commit[:12]}: cannot read {name} "
                     f"from the hub or {_where(model.repo_id)}: {error}") from error


def snapshot_dir(model: HubModel, names: Iterable[str], flag: str) -> str:
  """The snapshot directory of the commit in the cache, holding every one of
  `names` (downloaded where missing; huggingface_hub's locks keep the worker
  processes of a machine from downloading a file twice)."""
  from huggingface_hub import snapshot_download  # pylint: disable=import-outside-toplevel
  names = sorted(set(names))
  try:
    folder = snapshot_download(model.repo_id, revision=model.commit, allow_patterns=names,
                               cache_dir=_cache_dir(), local_files_only=offline())
  except Exception as error:  # pylint: disable=broad-except
    raise ModelError(f"{flag} {model.repo_id}@{model.commit[:12]}: cannot download it "
                     f"into {_where(model.repo_id)}: {error}") from error
  missing = [name for name in names if not os.path.isfile(os.path.join(folder, name))]
  if missing:
    raise ModelError(f"{flag} {model.repo_id}@{model.commit[:12]}: {_where(model.repo_id)} "
                     f"lacks {', '.join(missing)} (an incomplete download? "
                     f"{'HF_HUB_OFFLINE is set' if offline() else 'the hub did not send them'})")
  return folder


def describe(path: Optional[str], revision: Optional[str], key: str,
             prefix: str) -> Dict[str, object]:
  """run.json's fields of a model reference `path` recorded under `key`: a hub
  model as it was named, with the revision asked for and the commit the run
  loaded (`{prefix}_revision`, `{prefix}_commit`); anything else as it is."""
  model = pinned(path)
  if model is None:
    return {key: path}
  return {key: model.repo_id, f"{prefix}_revision": revision or _DEFAULT_REVISION,
          f"{prefix}_commit": model.commit}


def pin(path: Optional[str], revision: Optional[str], flag: str,
        revision_flag: str) -> Optional[str]:
  """At launch: a hub id pinned to its commit (`org/name@<commit>`), anything
  else (a local or gs:// directory, None) as it is. A revision is refused for
  a directory: it would be ignored."""
  if path and pinned(path) is None and is_hub_id(path):
    return str(resolve(path, revision, flag))
  if revision:
    if not path:
      raise ModelError(f"{revision_flag} needs {flag}")
    if pinned(path) is None:
      raise ModelError(f"{revision_flag} is for a model named by its Hugging Face hub id "
                       f"(org/name); {flag} {path} is a directory, read as it is")
    raise ModelError(f"{flag} {path} already names its commit: drop {revision_flag}")
  return path
