"""FactCG's reference code (../shared/reference/factcg), run as it is for
parity tests: imported as a package by path, pytorch_lightning (needed only by
its own training checkpoints' GroundingModel) stubbed, its hub loading of
yaxili96/FactCG-DeBERTa-v3-Large pointed at a local directory, and NLTK's
sentence splitter (whose punkt data cannot be downloaded here) replaced by the
project's, in the module and inside nltk.word_tokenize, which FactCG counts
chunk sizes with."""
import sys
import types

from tests.support.paths import shared_reference


class _Local:
  """A transformers Auto class whose from_pretrained reads `directory`."""

  def __init__(self, auto_class, directory):
    self._auto, self._directory = auto_class, directory

  def from_pretrained(self, unused_name, **kwargs):
    return self._auto.from_pretrained(self._directory, **kwargs)


def reference_factcg(monkeypatch, model_dir: str, split):
  """FactCG's Inferencer over `model_dir`, sentences split by `split`; its
  `batch_inference(documents, claims)[0]` are the reference's scores."""
  import nltk  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  lightning = types.ModuleType("pytorch_lightning")
  lightning.LightningModule = type("LightningModule", (), {})
  monkeypatch.setitem(sys.modules, "pytorch_lightning", lightning)
  package = types.ModuleType("factcg")
  package.__path__ = [str(shared_reference("factcg/inference.py").parent)]
  for name in [name for name in sys.modules if name.split(".")[0] == "factcg"]:
    monkeypatch.delitem(sys.modules, name)
  monkeypatch.setitem(sys.modules, "factcg", package)
  from factcg import inference  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(inference, "sent_tokenize", split)
  monkeypatch.setattr(nltk.tokenize, "sent_tokenize",
                      lambda text, language="english": split(text))
  for name in ("AutoConfig", "AutoTokenizer", "AutoModelForSequenceClassification"):
    monkeypatch.setattr(inference, name, _Local(getattr(transformers, name), model_dir))
  return inference.Inferencer(verbose=False)
