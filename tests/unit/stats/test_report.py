"""report.html: self-contained (every image embedded, nothing fetched, no
script), every embedded image decodes, and it opens in headless Chromium without
console errors (skipped, with the reason, where Chromium is absent)."""
import shutil
import subprocess

import pytest
from PIL import Image

from autoais.beam_jobs import agreement
from tests.support.jobs import run_job
from tests.support.paths import shared_file
from tests.support.report_html import decoded_images

@pytest.fixture(scope="module")
def report(tmp_path_factory):
  output = tmp_path_factory.mktemp("report") / "out"
  paths = ",".join(str(shared_file(f"begin/begin_dev_{name}.tsv"))
                   for name in ("wow", "cmu"))
  assert run_job(agreement, "--input", paths, "--format", "begin",
                 "--output_dir", output) == 0
  return output / "report.html"


def test_embedded_images_decode(report):
  alts = [alt for alt, _ in decoded_images(report)]
  assert len(alts) == 5
  for expected in ("ranked", "against human AIS", "ROC", "Reliability", "by human label"):
    assert any(expected in alt for alt in alts), expected


def test_a_damaged_image_is_caught(report, tmp_path):
  page = report.read_text(encoding="utf-8")
  start = page.index("base64,") + len("base64,")
  damaged = tmp_path / "report.html"
  damaged.write_text(page[:start + 400] + page[start + 4000:], encoding="utf-8")
  with pytest.raises(Exception):
    decoded_images(damaged)


def test_opens_in_headless_chromium_without_console_errors(report, tmp_path):
  browser = shutil.which("chromium") or shutil.which("chromium-browser")
  if browser is None:
    pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
  screenshot = tmp_path / "report.png"
  result = subprocess.run(
      [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
       "--v=0", "--window-size=1200,3000", f"--screenshot={screenshot}",
       report.as_uri()], capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
  assert console == []
  assert Image.open(screenshot).size == (1200, 3000)
