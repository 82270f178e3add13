"""The scorer families of `--scorer` and their flags, as one table (FAMILIES,
gathered from the Family each family module declares) and what is made from
it: the flags with their help (scorer_flags), the families that take each flag
(FLAG_SCORERS, for the refusal of any other), and a family's Scorer
(make_scorer). beam_jobs/options.py's ScorerOptions, the Flex Template
metadata (launch/metadata.py) and `autoais serve`'s parser add the flags
scorer_flags gives them.

The family modules import their models (and with them Beam's RunInference,
which imports torch) in the functions that use them: a job's --help and a
string-match run import no model stack.
"""
from typing import Dict, Iterable, NamedTuple, Tuple

from autoais.transforms.scoring import (factcg, hhem, hosted, lettucedetect, llm_judge,
                                        minicheck,
                                        nli_classifier, string_match, t5)
from autoais.transforms.scoring.flags import COMMON, Family, Flag
from autoais.transforms.scoring.names import STRING_MATCH

FAMILIES: Dict[str, Family] = {family.name: family for family in (
    string_match.FAMILY, t5.FAMILY, nli_classifier.FAMILY, minicheck.FAMILY,
    hhem.FAMILY, factcg.FAMILY, lettucedetect.FAMILY, hosted.REMOTE_FAMILY,
    hosted.VERTEX_FAMILY, llm_judge.FAMILY)}
SCORERS = tuple(FAMILIES)
SERVED = tuple(name for name, family in FAMILIES.items() if family.serve)

# Which families take each scorer flag, in --scorer's order (the refusal's words).
FLAG_SCORERS: Dict[str, Tuple[str, ...]] = {
    flag.name: tuple(name for name, family in FAMILIES.items()
                     if any(taken.name == flag.name for taken in family.flags))
    for family in FAMILIES.values() for flag in family.flags}


class ScorerFlag(NamedTuple):
  """A flag as a parser adds it: its declaration, with the help of every
  family that takes it."""
  flag: Flag
  help: str


def _scorer(families: Tuple[Family, ...], default: str) -> Flag:
  return Flag("scorer", "Attribution scorer",
              f"Attribution scorer (default {default}): " + ", ".join(
                  f"{family.name} ({family.summary})" for family in families) + ".",
              default=default, choices=tuple(family.name for family in families))


def scorer_flags(names: Iterable[str] = SCORERS, default: str = STRING_MATCH,
                 served: bool = False) -> Tuple[ScorerFlag, ...]:
  """--scorer (one of `names`, `default` where not given), then every flag of
  those families, once, in their order, each with its help ("For --scorer
  A / B: ..." for each text the families declare it with); `served`: the
  flags `autoais serve` takes only (Flag.served)."""
  families = tuple(FAMILIES[name] for name in names)
  declared: Dict[str, Flag] = {}
  helps: Dict[str, Dict[str, list]] = {}
  for family in families:
    for flag in family.flags:
      first = declared.setdefault(flag.name, flag)
      if first._replace(help="", served=False) != flag._replace(help="", served=False):
        raise ValueError(f"--{flag.name} is declared by two scorer families with "
                         f"different types, defaults, labels or checks: {first} and {flag}")
      helps.setdefault(flag.name, {}).setdefault(flag.help, []).append(family.name)
  scorer = _scorer(families, default)
  made = [ScorerFlag(scorer, scorer.help)]
  if not served:
    made += [ScorerFlag(flag, flag.help) for flag in COMMON]
  made += [ScorerFlag(flag, " ".join(f"For --scorer {' / '.join(takers)}: {text}"
                                     for text, takers in helps[name].items()))
           for name, flag in declared.items() if flag.served or not served]
  return tuple(made)


def add_scorer_flags(group, flags: Tuple[ScorerFlag, ...]) -> None:
  """Adds `flags` to argparse `group` (a parser or an argument group)."""
  for flag, help_text in flags:
    group.add_argument(f"--{flag.name}", type=flag.type, default=flag.default,
                       choices=flag.choices, help=help_text.replace("%", "%%"))


def make_scorer(name: str, threshold: float, **settings):
  """The Scorer of family `name` with `settings` (what its check_flags returns)."""
  return FAMILIES[name].scorer(threshold=threshold, **settings)
