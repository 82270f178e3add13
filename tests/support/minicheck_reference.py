"""MiniCheck's reference modules (../shared/reference/minicheck), imported for
parity tests as they are, without running the package's __init__ (it downloads
NLTK's punkt, which cannot be fetched here), with `sent_tokenize` pointed at
the splitter the test names."""
import sys
import types

from tests.support.paths import shared_reference


def import_minicheck(monkeypatch, split):
  """(inference, utils) of MiniCheck, `sent_tokenize` replaced by `split` in
  its inference module and in the nltk it imported."""
  directory = shared_reference("minicheck/inference.py").parent
  package = types.ModuleType("minicheck")
  package.__path__ = [str(directory)]
  for name in [name for name in sys.modules if name.split(".")[0] == "minicheck"]:
    monkeypatch.delitem(sys.modules, name)
  monkeypatch.setitem(sys.modules, "minicheck", package)
  from minicheck import inference, utils  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(inference, "sent_tokenize", split)
  monkeypatch.setattr(inference.nltk, "sent_tokenize", split)
  return inference, utils
