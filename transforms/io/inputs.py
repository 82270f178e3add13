"""Input files, for every reader: the files a pattern names (`match_files`), their
format by suffix (`data_format`), opening them, decompressed by their suffix
(`open_input`, `open_parquet`), and the launch checks that refuse a file no reader
could use (`check_input_file`, `check_text_file`). Paths are anything Beam's
`FileSystems` opens: local paths, `gs://` URIs, `.gz` files. A file that cannot be
opened or read raises `InputError` naming it.
"""
import bz2
import gzip
import io
import lzma
import os
import shutil
import tempfile
import zlib
from typing import BinaryIO, List

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.schemas.errors import InputError

# Python's own decompressors (C speed, proper io objects); other suffixes Beam
# knows (.deflate, .zst) go through Beam's CompressedFile.
_DECOMPRESSORS = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile,
                  ".lzma": lzma.LZMAFile}
_BEAM_COMPRESSED = {".deflate": CompressionTypes.DEFLATE, ".zst": CompressionTypes.ZSTD}
_COMPRESSED_SUFFIXES = tuple(_DECOMPRESSORS) + tuple(_BEAM_COMPRESSED)
# What a damaged compressed or Parquet file raises while it is read (bz2 and
# pyarrow say OSError). Reads of plain files catch none of these: an I/O error
# there is the storage's, for the runner to retry, not the file's.
DAMAGED_DATA_ERRORS = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile,
                       pa.ArrowException, OSError, ValueError)
_READ_BUFFER_BYTES = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


def data_format(path: str) -> str:
  """'csv', 'jsonl' or 'parquet', from the file name (compression suffix aside)."""
  name = _compression_suffix(path)[0].lower()
  if name.endswith(".csv"):
    return "csv"
  if name.endswith((".jsonl", ".json", ".ndjson")):
    return "jsonl"
  if name.endswith((".parquet", ".pq")):
    return "parquet"
  raise InputError(
      f"{path}: unknown file format (expected .csv, .jsonl or .parquet, "
      "optionally compressed: " + ", ".join(_COMPRESSED_SUFFIXES) + ")")


def _compression_suffix(path: str):
  """(path without its compression suffix, the suffix or '')."""
  lowered = path.lower()
  for suffix in _COMPRESSED_SUFFIXES:
    if lowered.endswith(suffix):
      return path[:-len(suffix)], suffix
  return path, ""


def uncompressed_name(path: str) -> str:
  """The path without its compression suffix (what names its format)."""
  return _compression_suffix(path)[0]


def system_name_from_path(path: str) -> str:
  """The file stem, the default system name of a predictions file."""
  name = _compression_suffix(os.path.basename(path.rstrip("/")))[0]
  return os.path.splitext(name)[0]


def match_files(pattern: str) -> List[str]:
  """Expands a path, glob or comma-separated list of them to sorted paths.

  A path that names a directory is returned as is, for check_input_file to
  refuse with a clear message.
  """
  paths = []
  for part in (p.strip() for p in pattern.split(",")):
    if not part:
      continue
    results = FileSystems.match([part])[0].metadata_list
    paths.extend(m.path for m in results if not m.path.endswith("/"))
  return sorted(set(paths))


class _InputStream(io.RawIOBase):
  """The (decompressed) bytes of an input file. A read that fails because the
  data is damaged (a truncated gzip, say) raises InputError naming the file."""

  def __init__(self, path: str, source, closeables, damage_errors):
    super().__init__()
    self._path = path
    self._source = source
    self._closeables = closeables
    self._damage_errors = damage_errors

  def readable(self):
    return True

  def readinto(self, buffer):
    try:
      data = self._source.read(len(buffer))
    except self._damage_errors as error:
      raise InputError(f"{self._path}: unreadable data ({type(error).__name__}: "
                       f"{error}): a truncated or damaged file?") from error
    buffer[:len(data)] = data
    return len(data)

  def close(self):
    if not self.closed:
      for closeable in self._closeables:
        closeable.close()
    super().close()


def _open_raw(path: str):
  try:
    if _is_local_directory(path):
      raise IsADirectoryError(path)
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
  except IsADirectoryError as error:
    raise InputError(f"{path}: is a directory; give a file, a glob such as "
                     f"'{path.rstrip('/')}/*', or a comma-separated list") from error
  except PermissionError as error:
    raise InputError(f"{path}: cannot be read (permission denied)") from error
  except FileNotFoundError as error:
    raise InputError(f"{path}: no such file") from error
  except (OSError, IOError) as error:
    raise InputError(f"{path}: cannot be opened: {error}") from error


def _is_local_directory(path: str) -> bool:
  return (FileSystems.get_scheme(path) in (None, "file") and
          os.path.isdir(path.removeprefix("file://")))


def open_input(path: str) -> BinaryIO:
  """A buffered binary reader of an input file, local or gs://, decompressed by
  its suffix. Opening and reading raise InputError naming the file."""
  raw = _open_raw(path)
  suffix = _compression_suffix(path)[1]
  if suffix == ".gz":
    # GzipFile leaves the file object it reads open: both are closed with the stream.
    source = gzip.GzipFile(fileobj=raw, mode="rb")
    closeables = [source, raw]
  elif suffix in _DECOMPRESSORS:
    source = _DECOMPRESSORS[suffix](raw, mode="rb")
    closeables = [source, raw]
  elif suffix in _BEAM_COMPRESSED:
    raw.close()
    source = FileSystems.open(path, compression_type=_BEAM_COMPRESSED[suffix])
    closeables = [source]
  else:
    source, closeables = raw, [raw]
  damage_errors = DAMAGED_DATA_ERRORS if suffix else ()
  return io.BufferedReader(_InputStream(path, source, closeables, damage_errors),
                           buffer_size=_READ_BUFFER_BYTES)


def open_parquet(path: str) -> pq.ParquetFile:
  """A Parquet file (seekable: a compressed one is spooled to a local temporary
  file first). A file whose footer cannot be read raises InputError."""
  if _compression_suffix(path)[1]:
    spool = tempfile.TemporaryFile()
    with open_input(path) as source:
      shutil.copyfileobj(source, spool, _READ_BUFFER_BYTES)
    spool.seek(0)
    binary = spool
  else:
    binary = _open_raw(path)
  try:
    return pq.ParquetFile(binary)
  except DAMAGED_DATA_ERRORS as error:
    binary.close()
    raise InputError(f"{path}: not a readable Parquet file ({error}): a truncated "
                     "or damaged file?") from error


def check_input_file(path: str) -> None:
  """Refuses (InputError) a file no reader could use: a directory, a missing or
  unreadable file, an empty one, a compressed file whose start does not
  decompress, UTF-16/32 text, a Parquet file without a readable footer. Cheap:
  it reads the first 64 KiB (and a Parquet footer), never the whole file.
  Damage further in is found while the job reads and also stops it, naming the
  file."""
  fmt = data_format(path)
  if fmt == "parquet":
    open_parquet(path).close()
    return
  check_text_file(path)


def check_text_file(path: str) -> None:
  """check_input_file for a text file of any format (a TREC run, a TSV): refuses
  a directory, a missing, unreadable or empty file, UTF-16/32 text."""
  with open_input(path) as binary:
    head = binary.read(65536)
  if not head.removeprefix(UTF8_BOM).strip():
    raise InputError(f"{path}: is empty" + (
        " (after decompression)" if _compression_suffix(path)[1] else ""))
  if head.startswith(_UTF16_32_BOMS):
    raise InputError(f"{path}: is UTF-16 or UTF-32 text; autoais reads UTF-8 "
                     "(convert it, e.g. with iconv -t UTF-8)")
