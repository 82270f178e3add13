"""Output files that appear whole or not at all, and removing a directory tree.

A single-file output is written by one worker from a singleton element (so it is
written once, after its inputs are complete), to a temporary name first and then
renamed (`atomic_create`, `write_text_atomically`), so a failed job never leaves
a half-written file under the final name. `delete_tree` removes a directory
(local) or every object under a prefix (gs://).
"""
import contextlib
import shutil
import uuid

from apache_beam.io.filesystems import FileSystems


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
  if FileSystems.exists(path):
    FileSystems.delete([path])
  FileSystems.rename([temporary], [path])


def write_text_atomically(path: str, text: str) -> None:
  with atomic_create(path) as sink:
    sink.write(text.encode("utf-8"))


def delete_tree(path: str) -> None:
  """Deletes a directory (local) or every object under a prefix (gs://)."""
  if FileSystems.get_scheme(path) in (None, "file"):
    shutil.rmtree(path.removeprefix("file://"), ignore_errors=True)
    return
  objects = FileSystems.match([path.rstrip("/") + "/**"])[0].metadata_list
  if objects:
    FileSystems.delete([metadata.path for metadata in objects])
