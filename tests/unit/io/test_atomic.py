"""Files written whole: a reader never sees the old file missing or the new one in part."""
import os
import sys
import threading

import pytest

from autoais.transforms.io.atomic import atomic_create, write_text_atomically


def test_a_reader_always_finds_the_old_or_the_new_file_whole(tmp_path):
  # The output directory's ledger is rewritten by a heartbeat while other runs
  # read it to see whether the directory is held; a moment without the file would
  # read as "free". The writer rewrites it many times while a reader keeps reading.
  path = tmp_path / "ledger.json"
  versions = [f"version {i}\n" * 200 for i in range(300)]
  write_text_atomically(str(path), versions[0])
  done = threading.Event()
  seen, missing, partial = set(), [], []

  def read():
    while not done.is_set():
      try:
        text = path.read_text()
      except FileNotFoundError:
        missing.append(1)
        continue
      if text not in versions:
        partial.append(text[:40])
      seen.add(text)

  # Threads switch every microsecond, not every 5 ms, so the reader runs inside
  # the writer's steps (a delete, then a rename, showed a missing file in CI).
  interval = sys.getswitchinterval()
  sys.setswitchinterval(1e-6)
  reader = threading.Thread(target=read)
  reader.start()
  try:
    for text in versions[1:]:
      write_text_atomically(str(path), text)
  finally:
    done.set()
    reader.join()
    sys.setswitchinterval(interval)
  assert not missing and not partial
  assert len(seen) > 1  # the reader did read while the file changed
  assert path.read_text() == versions[-1]
  assert os.listdir(tmp_path) == ["ledger.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
  path = tmp_path / "summary.json"
  write_text_atomically(str(path), "old\n")
  with pytest.raises(RuntimeError):
    with atomic_create(str(path)) as sink:
      sink.write(b"half of the new")
      raise RuntimeError("the job failed here")
  assert path.read_text() == "old\n"
  assert os.listdir(tmp_path) == ["summary.json"]

