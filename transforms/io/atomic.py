"""Output files that appear whole or not at all, and removing a directory tree.

A single-file output is written by one worker from a singleton element (so it is
written once, after its inputs are complete), to a temporary name first and then
renamed (`atomic_create`, `write_text_atomically`), so a failed job never leaves
a half-written file under the final name. `delete_tree` removes a directory
(local) or every object under a prefix (gs://).
"""
import contextlib
import os
import shutil
import uuid

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems


def _local_path(path: str):
  """The path on this machine's disk, or None for a remote file system."""
  if FileSystems.get_scheme(path) in (None, "file"):
    return path.removeprefix("file://")
  return None


@contextlib.contextmanager
def atomic_create(path: str):
  """A writable binary file that appears under `path` only once closed without
  error; until then it is a temporary file beside it."""
  temporary = f"{path}.tmp-{uuid.uuid4().hex}"
  sink = FileSystems.create(temporary)
  try:
    yield sink
  except BaseException:
    sink.close()
    FileSystems.delete([temporary])
    raise
  sink.close()
  local = _local_path(path)
  if local is not None:
    # One rename that replaces: a reader (another run checking the ledger) sees
    # the old file or the new one, never a moment with neither.
    os.replace(_local_path(temporary), local)
    return
  try:
    # gs:// and s3:// rename by copying over the destination.
    FileSystems.rename([temporary], [path])
  except BeamIOError:
    # A file system whose rename refuses an existing destination.
    if not FileSystems.exists(path):
      raise
    FileSystems.delete([path])
    FileSystems.rename([temporary], [path])


def write_text_atomically(path: str, text: str) -> None:
  with atomic_create(path) as sink:
    sink.write(text.encode("utf-8"))


def delete_tree(path: str) -> None:
  """Deletes a directory (local) or every object under a prefix (gs://)."""
  local = _local_path(path)
  if local is not None:
    shutil.rmtree(local, ignore_errors=True)
    return
  objects = FileSystems.match([path.rstrip("/") + "/**"])[0].metadata_list
  if objects:
    FileSystems.delete([metadata.path for metadata in objects])
