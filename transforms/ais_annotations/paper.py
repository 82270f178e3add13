"""The AIS paper's printed human-evaluation tables, the one place they live.

Source: Rashkin, Nikolaev, Lamm, Aroyo, Collins, Das, Petrov, Tomar, Turc and
Reitter, "Measuring Attribution in Natural Language Generation Models",
Computational Linguistics 49(4), 2023: Tables 3 (QReCC), 4 (Wizard of
Wikipedia), 5 (CNN/DM) and 6 (ToTTo), typed in from the paper (sections
5.1-5.4).

Each cell is the string the paper prints (one decimal, percent). `*` in the
paper ("significantly lower than the highest score in the column, p < 0.01")
is the `*_mark` flag. Flag is printed only in Tables 4 and 6, and is never
marked. The paper does not name its significance test.

Columns (paper §4.1): Flag = flagged outputs / outputs; Int = interpretable /
outputs not flagged; AIS = interpretable and attributable / interpretable.

Release names: each paper row is matched to the `model-name` of the released
`ann_*.csv` (google-research-datasets/AIS). The matches are read off the
paper's prose (pretrained-only T5 = `*-pretrained`, the fine-tuned model
without evidence = `*-no-evidence`) and, for ToTTo's "Reference", by which
reference set the printed AIS fits: the release has two, `reference-final`
(AIS 91.0 as released, as printed) and `reference-original` (32.7); the paper
prints one row, so `reference-original` has no paper values.
"""
from typing import Dict, NamedTuple, Optional, Tuple

PAPER = ("Rashkin et al., Measuring Attribution in Natural Language Generation "
         "Models, Computational Linguistics 49(4), 2023 (seed 003)")
SAMPLED_ITEMS = 200  # "we sampled 200 examples per model" (§5.2-5.4)
SIGNIFICANCE_LEVEL = 0.01  # "with p < 0.01"


class PaperRow(NamedTuple):
  model: str  # model-name in the release
  label: str  # the row as the paper prints it
  flag: Optional[str]  # None where the table has no Flag column
  int: str
  int_mark: bool
  ais: str
  ais_mark: bool


class PaperTable(NamedTuple):
  number: int
  title: str
  rows: Tuple[PaperRow, ...]

  @property
  def has_flag(self) -> bool:
    return self.rows[0].flag is not None


def _row(model, label, flag, int_cell, ais_cell) -> PaperRow:
  """A row from cells as printed: "43.0*" is 43.0 with the significance mark."""
  return PaperRow(model, label, flag, int_cell.rstrip("*"), int_cell.endswith("*"),
                  ais_cell.rstrip("*"), ais_cell.endswith("*"))


# Keyed by the data set name of the release file: ann_{name}.csv.
TABLES: Dict[str, PaperTable] = {
    "qrecc": PaperTable(3, "QReCC answer generation (Table 3)", (
        _row("t5-small-pretrained", "T5-PT (with Evidence), Small", None, "43.0*", "82.6"),
        _row("t5-base-pretrained", "T5-PT (with Evidence), Base", None, "47.0*", "69.1*"),
        _row("t5-small-no-evidence", "T5-FT (no Evidence), Small", None, "57.8*", "25.2*"),
        _row("t5-base-no-evidence", "T5-FT (no Evidence), Base", None, "59.8*", "21.8*"),
        _row("t5-small", "T5-FT (with Evidence), Small", None, "99.0", "87.9"),
        _row("t5-base", "T5-FT (with Evidence), Base", None, "98.0", "87.2"),
        _row("qrecc-reference", "Reference", None, "99.0", "87.8"),
    )),
    "wow": PaperTable(4, "Wizard of Wikipedia answer generation (Table 4)", (
        _row("wow-dinan_et_al", "WoW Baseline (Dinan et al. 2019)", "4.0", "84.4*", "19.8*"),
        _row("wow-dodeca", "Dodeca (Shuster et al. 2020)", "8.5", "100.0", "60.1*"),
        _row("wow-t5", "T5 (Raffel et al. 2020)", "5.5", "98.4", "39.8*"),
        _row("wow-controlled_t5", "T5 (with Controls) (Rashkin et al. 2021)", "7.5",
             "99.5", "92.4"),
        _row("wow-reference", "Reference", "4.0", "100.0", "15.6*"),
    )),
    "cnn_dm": PaperTable(5, "CNN/DM summarization (Table 5)", (
        _row("matchsum", "MatchSum (Zhong et al. 2020), extractive", None, "90.0", "99.4"),
        _row("pointer", "Pointer-Gen (See, Liu, and Manning 2017), hybrid", None, "90.0",
             "97.8"),
        _row("bigbird", "BigBird (Zaheer et al. 2020), abstractive", None, "90.0", "87.2*"),
        _row("reference", "Reference", None, "86.0", "54.1*"),
    )),
    "totto": PaperTable(6, "ToTTo table-to-text (Table 6)", (
        _row("ByT5-base", "ByT5-Base", "0.0", "78.9*", "88.5"),
        _row("ByT5-xl", "ByT5-XL", "0.0", "79.5*", "86.2"),
        _row("T5-small", "T5-Small", "3.0", "86.5", "88.6"),
        _row("T5-base", "T5-Base", "5.0", "91.1", "86.6"),
        _row("T5-xl", "T5-XL", "6.0", "89.4", "85.1*"),
        _row("reference-final", "Reference", "0.0", "83.9", "91.0"),
    )),
}


def paper_row(dataset: str, model: str) -> Optional[PaperRow]:
  table = TABLES.get(dataset)
  if table is None:
    return None
  for row in table.rows:
    if row.model == model:
      return row
  return None
