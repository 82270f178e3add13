"""The docs' commands run once a session for tests/deploy/test_docs.py and
test_newcomer.py (tests/support/example_runs.py)."""
import pytest

from tests.deploy.test_docs import (FINETUNE_BASE, INLINE, build_finetune_base,
                                    example_pages, make_run_commands, page_commands,
                                    readme_setup_lines)
from tests.support.example_runs import has_embedding_model, run_examples


@pytest.fixture(scope="session")
def example_runs(tmp_path_factory):
  """tests/support/example_runs.py's run of the `make run` recipe, the
  evaluate Example on rows with their passage, and every page's Example."""
  commands = make_run_commands() + [
      command for command in page_commands("evaluate") if INLINE in command] + [
          command for page in example_pages() for command in page_commands(page)]

  def keep(python, command):
    # sck's Example embeds with the sck extra's model: run where it is installed.
    return not command.startswith("autoais sck") or has_embedding_model(python)

  return run_examples(tmp_path_factory.mktemp("examples"), readme_setup_lines(), commands,
                      prepare=lambda clone: build_finetune_base(clone / FINETUNE_BASE),
                      keep=keep)
