"""Output files that appear whole or not at all, and removing a directory tree.

A single-file output is written by one worker from a singleton element (so it is
written once, after its inputs are complete), to a temporary name first and then
renamed (`atomic_create`, `write_text_atomically`), so a failed job never leaves
a half-written file under the final name. `delete_tree` removes a directory
(local) or every object under a prefix (gs://).
"""
import contextlib
import logging
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


def _close(sink, path: str) -> None:
  """Closes `sink` (written to `path`); if that fails, leaves it closed all the
  same and raises the failure."""
  try:
    sink.close()
  except BaseException:
    # A gs:// file (google-cloud-storage's BlobWriter) uploads in close() and
    # counts as closed only once the upload went through: a refused one stays
    # open, kept alive by this error's traceback, and io's finaliser calls
    # close() again when the garbage collector frees it, in whichever thread
    # that happens: a second upload, which against an endpoint gone by then is
    # retried for 2 minutes. terminate() is BlobWriter's way to give up: it
    # closes without uploading (cancelling the upload if one had begun).
    terminate = getattr(sink, "terminate", None)
    if terminate is not None and not sink.closed:
      try:
        terminate()
      except Exception as cancel:  # pylint: disable=broad-except
        # The close's failure stays the error raised (callers read its cause).
        logging.warning("%s: cancelling the upload failed too: %r", path, cancel)
    raise


@contextlib.contextmanager
def atomic_create(path: str):
  """A writable binary file that appears under `path` only once closed without
  error; until then it is a temporary file beside it."""
  temporary = f"{path}.tmp-{uuid.uuid4().hex}"
  sink = FileSystems.create(temporary)
  try:
    yield sink
  except BaseException:
    _close(sink, temporary)
    FileSystems.delete([temporary])
    raise
  _close(sink, temporary)
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
