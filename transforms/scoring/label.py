"""The scorer named where people read a run's figures (issue 46): what an
attribution figure is called, and which scorer, model and revision made it.

    measure_name(block)   # "AutoAIS" (a model scored), "string-match" (the baseline)
    scorer_id(block)      # "t5 google/t5_xxl_true_nli_mixture@<commit>": a table's cell
    scored_by(block)      # "Scored by: ...", the line a page or console starts with

`block` is a scorer's run.json block (Scorer.describe(), or run.json's `scorer`
as compare reads it), so the words come from the same fields run.json records.
    named_figures(x, measure) # a schema, dict or name with `autoais` named as the
                              # run's figure: `string_match` for the baseline

The string-match baseline is never called AutoAIS: a table that quotes it as
AutoAIS reports a baseline as the model-based figure. So the summaries'
figure columns and JSON keys (`autoais`, `autoais_ci_low`, `macro_autoais`,
compare's `autoais_change`, ...) are written `string_match...` for a
string-match run (`attribution...` where compare sets one beside a model's);
the per-row decision keeps the Attributed QA release's column name
`auto_ais` (docs/scorers.md#which-scorer-made-a-figure).
"""
from typing import Any, Dict, Optional

import pyarrow as pa

from autoais.transforms.scoring.names import LLM_JUDGE, REMOTE, STRING_MATCH, VERTEX

AUTOAIS = "AutoAIS"
# How the baseline decides, said beside its name (SPEC 5.4).
_BASELINE = "the answer's normalised tokens found in the passage; no model"


def family(block: Optional[Dict[str, Any]]) -> str:
  block = block or {}
  return str(block.get("family") or block.get("name") or "unknown")


def measure_name(block: Optional[Dict[str, Any]]) -> str:
  """What an attribution figure of the run is called: the baseline's name for
  string-match, AutoAIS for a model."""
  return STRING_MATCH if family(block) == STRING_MATCH else AUTOAIS


# The figure's name as the code makes a summary's columns and keys (a model's
# run writes them so); named_figures renames it after the run's measure.
FIGURE = "autoais"


def named_figures(value, measure: str):
  """`value` (a pyarrow schema, a dict, nested, or a list of them, or a column
  name) with the figure's name in its field names, keys and names made the
  `measure`'s (measure_name, compared_measure): `autoais_ci_low` becomes
  `string_match_ci_low` for the baseline, stays for a model. Values other
  than names are kept."""
  name = measure.lower().replace("-", "_")
  if name == FIGURE:
    return value
  if isinstance(value, str):
    return value.replace(FIGURE, name)
  if isinstance(value, pa.Schema):
    return pa.schema([field.with_name(named_figures(field.name, measure))
                      for field in value], metadata=value.metadata)
  if isinstance(value, dict):
    return {named_figures(key, measure) if isinstance(key, str) else key:
            named_figures(item, measure) if isinstance(item, (dict, list)) else item
            for key, item in value.items()}
  if isinstance(value, list):
    return [named_figures(item, measure) if isinstance(item, (dict, list)) else item
            for item in value]
  raise TypeError(f"cannot name the figures of a {type(value).__name__}")


def _model_reference(block: Dict[str, Any]) -> Optional[str]:
  """The model as the user named it: a hub id pinned to the commit the run
  loaded, a directory, an endpoint, or an LLM judge at its URL."""
  name = family(block)
  if name in (REMOTE, VERTEX):
    return block.get("endpoint")
  if name == LLM_JUDGE:
    return f"{block.get('judge_model')} at {block.get('judge_url')}"
  model = block.get("model")
  if not model:
    return None
  commit = block.get("model_commit")
  return f"{model}@{commit}" if commit else str(model)


def scorer_id(block: Optional[Dict[str, Any]]) -> str:
  """The scorer and its model in a few words (a table's cell):
  `string-match`, `t5 google/t5_xxl_true_nli_mixture@<commit>`,
  `t5 /models/true`."""
  block = block or {}
  model = _model_reference(block)
  return family(block) if model is None else f"{family(block)} {model}"


def compared_measure(baseline: Optional[Dict[str, Any]],
                     candidate: Optional[Dict[str, Any]]) -> str:
  """What compare calls the attribution figures of two runs: their common name,
  or "attribution" where one run's scorer is the baseline and the other's a
  model."""
  names = {measure_name(baseline), measure_name(candidate)}
  return names.pop() if len(names) == 1 else "attribution"


def compared_scorer_id(baseline: Optional[Dict[str, Any]],
                       candidate: Optional[Dict[str, Any]]) -> str:
  """compare_systems.csv's `scorer` cell: the scorer of both runs, or each's."""
  if scorer_id(baseline) == scorer_id(candidate):
    return scorer_id(candidate)
  return f"baseline: {scorer_id(baseline)}; candidate: {scorer_id(candidate)}"


def scored_by(block: Optional[Dict[str, Any]]) -> str:
  """One sentence naming what made the run's attribution figures, for the top
  of a page and the console (the decision rule is each page's own to say)."""
  block = block or {}
  name = family(block)
  if name == STRING_MATCH:
    return (f"Scored by: {STRING_MATCH}, the baseline ({_BASELINE}); its figures are "
            f"not {AUTOAIS}.")
  parts = [f"Scored by: {name}"]
  model = block.get("model")
  if block.get("model_commit"):
    parts.append(f"model {model} at commit {block['model_commit']} (revision "
                 f"{block.get('model_revision')})")
  elif model:
    parts.append(f"model {model} (a directory: the checksum of its weights is in "
                 "run.json)")
  elif _model_reference(block):
    parts.append(_model_reference(block))
  return ", ".join(parts) + "."


def scorer_naming(block: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  """A summary JSON's fields naming the run's scorer: the block as the flags
  gave it, and the sentence (scored_by)."""
  return {"scorer": block, "scored_by": scored_by(block)}
