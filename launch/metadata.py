"""The scorer parameters of the Flex Template metadata (launch/*_metadata.json),
made from the scorer families' table (transforms/scoring/registry.py): each
scoring job's file holds them where its first one stands; a job's own
parameters are written in its file by hand.

    python -m autoais.launch.metadata   # rewrites each file whose scorer parameters drifted

tests/deploy/test_launch.py fails while a file differs from what this makes.
"""
import json
import pathlib
import re
from typing import Any, Dict, List

from autoais.transforms.scoring.registry import scorer_flags

LAUNCH = pathlib.Path(__file__).resolve().parent
REGENERATE = "python -m autoais.launch.metadata"


def scorer_parameters() -> List[Dict[str, Any]]:
  """The template parameters of the scorer flags, in their --help order."""
  parameters = []
  for flag, help_text in scorer_flags():
    # A template's parameters are named without the dashes of the flags.
    parameter = {"name": flag.name, "label": flag.label,
                 "helpText": re.sub(r"--(?=[a-z])", "", help_text), "isOptional": True}
    regexes = flag.regexes or (
        (f"^({'|'.join(flag.choices)})$",) if flag.choices else ())
    if regexes:
      parameter["regexes"] = list(regexes)
    parameters.append(parameter)
  return parameters


def with_scorer_parameters(spec: Dict[str, Any]) -> Dict[str, Any]:
  """A template's metadata `spec` with its scorer parameters made now, where
  its first scorer parameter stands (a job that does not score has none)."""
  made = scorer_parameters()
  names = {parameter["name"] for parameter in made}
  parameters = spec["parameters"]
  first = next((index for index, parameter in enumerate(parameters)
                if parameter["name"] in names), None)
  if first is None:
    return spec
  own = [parameter for parameter in parameters if parameter["name"] not in names]
  return dict(spec, parameters=own[:first] + made + own[first:])


def metadata_files() -> List[pathlib.Path]:
  return sorted(LAUNCH.glob("*_metadata.json"))


def main() -> int:
  for path in metadata_files():
    spec = json.loads(path.read_text(encoding="utf-8"))
    made = with_scorer_parameters(spec)
    if made != spec:
      path.write_text(json.dumps(made, indent=2) + "\n", encoding="utf-8")
      print(f"rewrote {path.name}")
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
