"""run.json as a typed contract: a job's record type declares what it
receives, and a mismatch between that declaration, the dict the job gives
WriteRunRecord and the record's `fields` stops the job while its pipeline is
built (transforms/rows/run_record.py), not on a worker at the end of a run."""
import apache_beam as beam
import pytest

from autoais.beam_jobs import claims
from autoais.beam_jobs.parsing import parse_options
from tests.support.paths import EXAMPLES


def _build(tmp_path):
  options = parse_options(
      ["--input", str(EXAMPLES / "claims" / "expertqa.jsonl"), "--output_dir",
       str(tmp_path / "out")], claims.ClaimsOptions)
  return claims.build_pipeline(beam.Pipeline(options=options), options)


def test_claims_builds_with_its_declared_record(tmp_path):
  assert _build(tmp_path) is not None


def test_a_record_declaration_that_misses_a_name_fails_at_build_pipeline(
    tmp_path, monkeypatch):
  values = tuple(name for name in claims._ClaimsRecord.values if name != "summary")  # pylint: disable=protected-access
  monkeypatch.setattr(claims._ClaimsRecord, "values", values)  # pylint: disable=protected-access
  with pytest.raises(TypeError, match=r"given \['summary'\] that _ClaimsRecord does not declare"):
    _build(tmp_path)
  assert not (tmp_path / "out" / "run.json").exists()


def test_a_record_whose_fields_take_another_name_fails_at_build_pipeline(
    tmp_path, monkeypatch):
  fields = claims._ClaimsRecord.fields  # pylint: disable=protected-access

  def misnamed(self, read_counts, written, dead, summaries, scorer_stats, model_info):
    return fields(self, read_counts, written, dead, summaries, scorer_stats, model_info)

  monkeypatch.setattr(claims._ClaimsRecord, "fields", misnamed)  # pylint: disable=protected-access
  with pytest.raises(TypeError, match=r"_ClaimsRecord\.fields"):
    _build(tmp_path)
