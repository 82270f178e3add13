"""The t5 family's splits for T5X users: each split's examples as TFRecords of
tf.train.Example protos (`inputs`, `targets`, `label`, `digest`), and
seqio_task.py, a module that registers them as a seqio Task.

    import seqio, seqio_task            # seqio_task.py of the output directory
    seqio_task.register(seqio.SentencePieceVocabulary("spiece.model"))
    task = seqio.get_mixture_or_task(seqio_task.TASK_NAME)

The protos are encoded here (a few fields of a fixed message: no TensorFlow
at run time); tests read them back with TensorFlow and seqio. Records follow
their split's Parquet table row for row, read one record batch at a time.
"""
import json
import struct
from typing import Dict, Tuple

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.tfrecordio import _TFRecordUtil

from autoais.schemas import SPLITS
from autoais.transforms.io.atomic import atomic_create, write_text_atomically

SEQIO_MODULE = "seqio_task.py"
_TEXT_FEATURES = ("inputs", "targets", "digest")


def tfrecord_name(split: str) -> str:
  return f"{split}.tfrecord"


def _varint(value: int) -> bytes:
  out = bytearray()
  while True:
    byte = value & 0x7F
    value >>= 7
    if value:
      out.append(byte | 0x80)
    else:
      out.append(byte)
      return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
  """A length-delimited protobuf field."""
  return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def tf_example(texts: Dict[str, str], integers: Dict[str, int]) -> bytes:
  """A serialized tf.train.Example: each text a BytesList of one value, each
  integer (not negative) an Int64List of one; features in name order."""
  features = []
  for name, value in sorted(list(texts.items()) + list(integers.items())):
    if isinstance(value, str):
      feature = _field(1, _field(1, value.encode("utf-8")))  # bytes_list.value
    else:
      feature = _field(3, _field(1, _varint(value)))  # int64_list.value, packed
    features.append(_field(1, _field(1, name.encode("utf-8")) + _field(2, feature)))
  return _field(1, b"".join(features))


def write_tfrecords(parquet_path: str, tfrecord_path: str) -> int:
  """Writes one record per row of a split table; returns the count."""
  written = 0
  with FileSystems.open(parquet_path,
                        compression_type=CompressionTypes.UNCOMPRESSED) as source, \
      atomic_create(tfrecord_path) as sink:
    table = pq.ParquetFile(source)
    for batch in table.iter_batches(columns=list(_TEXT_FEATURES) + ["label"]):
      columns = batch.to_pydict()
      for index in range(batch.num_rows):
        _TFRecordUtil.write_record(sink, tf_example(
            {name: columns[name][index] for name in _TEXT_FEATURES},
            {"label": columns["label"][index]}))
        written += 1
  return written


def seqio_module(task_name: str, counts: Dict[str, int]) -> str:
  """The text of seqio_task.py for splits of `counts` examples."""
  files = {split: tfrecord_name(split) for split in SPLITS}
  return f'''"""A seqio Task of the attribution examples in this directory, written by
`autoais training-data --family t5`: TRUE's text-to-text form, inputs
"premise: ... hypothesis: ..." and targets "1" (attributable) or "0".

    import seqio
    import seqio_task
    seqio_task.register(seqio.SentencePieceVocabulary("path/to/spiece.model"))
    task = seqio.get_mixture_or_task(seqio_task.TASK_NAME)
    dataset = task.get_dataset({{"inputs": 512, "targets": 4}}, split="train")

`data_dir` (default: this module's directory) may be a gs:// directory that
holds the same files.
"""
import os

import seqio
import tensorflow as tf

TASK_NAME = {task_name!r}
SPLIT_FILES = {json.dumps(files, indent=4)}
NUM_EXAMPLES = {json.dumps(counts, indent=4)}
FEATURES = {{
    "inputs": tf.io.FixedLenFeature([], tf.string),
    "targets": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "digest": tf.io.FixedLenFeature([], tf.string),
}}


def register(vocabulary, data_dir=None, name=TASK_NAME):
  """Adds the Task to seqio's registry (once: a name already there is
  replaced) and returns it; `vocabulary`: the model's seqio Vocabulary."""
  data_dir = data_dir or os.path.dirname(os.path.abspath(__file__))
  source = seqio.TFExampleDataSource(
      split_to_filepattern={{split: os.path.join(data_dir, path)
                            for split, path in SPLIT_FILES.items()}},
      feature_description=FEATURES, num_input_examples=NUM_EXAMPLES)
  output_features = {{"inputs": seqio.Feature(vocabulary, add_eos=True),
                     "targets": seqio.Feature(vocabulary, add_eos=True)}}
  seqio.TaskRegistry.remove(name)
  return seqio.TaskRegistry.add(
      name, source=source, output_features=output_features,
      preprocessors=[seqio.preprocessors.tokenize,
                     seqio.preprocessors.append_eos_after_trim],
      metric_fns=[])
'''


class _WriteT5XFilesFn(beam.DoFn):

  def __init__(self, output_dir: str, task_name: str):
    self._output_dir = output_dir
    self._task_name = task_name

  def process(self, unused_impulse, unused_stats):
    join = FileSystems.join
    counts = {split: write_tfrecords(join(self._output_dir, f"{split}.parquet"),
                                     join(self._output_dir, tfrecord_name(split)))
              for split in SPLITS}
    write_text_atomically(join(self._output_dir, SEQIO_MODULE),
                          seqio_module(self._task_name, counts))
    yield {"tfrecords": counts}


class WriteT5XFiles(beam.PTransform):
  """PBegin -> a singleton {"tfrecords": {split: records}}: each split's
  TFRecords and seqio_task.py, once the split tables are complete (`written`:
  the singleton that says so)."""

  def __init__(self, output_dir: str, task_name: str, written):
    super().__init__()
    self._output_dir = output_dir
    self._task_name = task_name
    self._written = written

  def expand(self, pbegin):
    return (pbegin
            | "StartT5XFiles" >> beam.Create([None])
            | "WriteTfRecords" >> beam.ParDo(
                _WriteT5XFilesFn(self._output_dir, self._task_name),
                beam.pvalue.AsSingleton(self._written)))


def t5x_outputs() -> Tuple[str, ...]:
  return tuple(tfrecord_name(split) for split in SPLITS) + (SEQIO_MODULE,)


