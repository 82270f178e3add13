"""Vectara's HHEM-2.1-open reference code (../shared/reference/hhem), run as
it is for parity tests: its module imported by path, its hub lookups of the
foundation (AutoConfig, AutoTokenizer) pointed at a local directory.

Its model class is built with its own constructor and given the published
weights file as transformers 4's from_pretrained gave it them (the state dict
as saved: the encoder's embedding tied to the shared one). Its
from_pretrained cannot run under transformers 5: the class never calls
post_init, which transformers 5's loading needs (AttributeError
'all_tied_weights_keys'), as users of the published remote code report.
"""
import importlib.util
import os

from tests.support.paths import shared_reference


class _Local:
  """A transformers Auto class whose from_pretrained reads `directory`
  whatever hub name it is given."""

  def __init__(self, auto_class, directory):
    self._auto, self._directory = auto_class, directory

  def from_pretrained(self, unused_name, **kwargs):
    return self._auto.from_pretrained(self._directory, **kwargs)


def reference_hhem(monkeypatch, model_dir: str, foundation_dir: str):
  """HHEM's HHEMv2ForSequenceClassification of `model_dir`, its foundation
  read from `foundation_dir`; its `predict(pairs)` is the reference's score."""
  import transformers  # pylint: disable=import-outside-toplevel
  from safetensors.torch import load_file  # pylint: disable=import-outside-toplevel
  path = shared_reference("hhem/modeling_hhem_v2.py")
  spec = importlib.util.spec_from_file_location("modeling_hhem_v2", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  for name in ("AutoConfig", "AutoTokenizer"):
    monkeypatch.setattr(module, name, _Local(getattr(transformers, name), foundation_dir))
  model = module.HHEMv2ForSequenceClassification(module.HHEMv2Config.from_pretrained(model_dir))
  result = model.load_state_dict(load_file(os.path.join(model_dir, "model.safetensors")),
                                 strict=False)
  embedding = model.t5.transformer.encoder.embed_tokens.weight
  assert not result.unexpected_keys
  assert result.missing_keys == ["t5.transformer.encoder.embed_tokens.weight"]
  assert embedding.data_ptr() == model.t5.transformer.shared.weight.data_ptr()  # tied
  return model
