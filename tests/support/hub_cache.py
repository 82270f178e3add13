"""A Hugging Face hub cache laid out as huggingface_hub writes it, offline.

    commit = add_to_hub_cache(hf_home, "org/tiny-t5", model_dir, refs=("main",))

Under `hf_home/hub/models--org--tiny-t5/`:

* `blobs/<etag>`: each file's bytes once, named as the hub's ETag names it: the
  sha256 of the content for files stored in Git LFS (the hub's default
  .gitattributes puts *.safetensors, *.model, *.bin, ... there), the git blob
  sha1 (`sha1("blob <size>\\0" + bytes)`) for the others (JSON, text);
* `snapshots/<commit>/<file>`: a relative link `../../blobs/<etag>` per file of
  the commit;
* `refs/<revision>`: the commit a branch or tag names, 40 hex digits, no newline.

What is not rebuilt: `.no_exist/` (files the hub lacks) and the `trees/`
listings that online downloads leave; huggingface_hub reads neither when it
resolves a cached revision offline. The commit id is made up (sha1 of the
files' etags), as a fixture cannot ask the hub for one.
"""
import hashlib
import os
import pathlib
from typing import Iterable, Optional

# The extensions the hub's default .gitattributes stores in Git LFS (the ones a
# checkpoint holds).
_LFS_SUFFIXES = (".safetensors", ".model", ".bin", ".h5", ".msgpack", ".pt", ".pth",
                 ".ckpt", ".onnx", ".ot", ".pkl")


def _etag(name: str, data: bytes) -> str:
  if name.endswith(_LFS_SUFFIXES):
    return hashlib.sha256(data).hexdigest()
  return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def repo_cache(hf_home, repo_id: str) -> pathlib.Path:
  return pathlib.Path(hf_home) / "hub" / ("models--" + repo_id.replace("/", "--"))


def add_to_hub_cache(hf_home, repo_id: str, model_dir, refs: Iterable[str] = ("main",),
                     skip: Iterable[str] = (), commit: Optional[str] = None) -> str:
  """Adds the top-level files of `model_dir` (but `skip`) to the cache as one
  commit of `repo_id`, names it by each of `refs`, and returns the commit."""
  root = repo_cache(hf_home, repo_id)
  files = {path.name: path.read_bytes() for path in sorted(pathlib.Path(model_dir).iterdir())
           if path.is_file() and path.name not in set(skip)}
  etags = {name: _etag(name, data) for name, data in files.items()}
  commit = commit or hashlib.sha1("".join(sorted(etags.values())).encode()).hexdigest()
  (root / "blobs").mkdir(parents=True, exist_ok=True)
  snapshot = root / "snapshots" / commit
  snapshot.mkdir(parents=True, exist_ok=True)
  for name, data in files.items():
    blob = root / "blobs" / etags[name]
    if not blob.exists():
      blob.write_bytes(data)
    os.symlink(os.path.join("..", "..", "blobs", etags[name]), snapshot / name)
  (root / "refs").mkdir(exist_ok=True)
  for ref in refs:
    (root / "refs" / ref).write_text(commit, encoding="utf-8")
  return commit
