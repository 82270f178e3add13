"""How long a job takes to give up on a gs:// bucket it cannot use (not a test).

    .venv/bin/python bench/gcs_refusal.py [--case unreachable|refused|both]

Side by side, each in a fresh process and without credentials
(GOOGLE_APPLICATION_CREDENTIALS names a missing file, NO_GCE_CHECK):

  beam    what a job did before it checked gs:// paths at launch: Beam's
          FileSystems.match of `gs://bucket/*.csv` (credential discovery with
          Beam's retries, then the listing with google-cloud-storage's);
  autoais `autoais evaluate --predictions 'gs://bucket/*.csv' ...`, refused at
          launch (transforms/io/cloud_storage.py);
  startup the same command refused for a local file that does not exist: what
          starting the command costs, without Cloud Storage.

Cases: unreachable: Cloud Storage does not answer (STORAGE_EMULATOR_HOST is a
closed local port; on a machine without Google's network, unset it with
--real_endpoint to reach storage.googleapis.com by name); refused: a local
server answers every request 401 as GCS's JSON API does
(tests/support/refusing_gcs.py). Prints one JSON line: seconds, exit codes,
whether a traceback was printed, and autoais's time over Beam's.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.refusing_gcs import RefusingGcs  # pylint: disable=wrong-import-position

_BEAM_MATCH = ("from apache_beam.io.filesystems import FileSystems; "
               "FileSystems.match(['gs://bucket/*.csv'])")
_LIMIT_SECONDS = 600


def _closed_port_url() -> str:
  with socket.socket() as closed:
    closed.bind(("127.0.0.1", 0))
    return f"http://127.0.0.1:{closed.getsockname()[1]}"


def _timed(command, env):
  started = time.monotonic()
  result = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=_LIMIT_SECONDS, cwd=ROOT)
  return {"seconds": round(time.monotonic() - started, 1), "exit": result.returncode,
          "traceback": "Traceback" in result.stderr,
          "last_line": result.stderr.strip().splitlines()[-1][:300]}


def _evaluate(predictions, scratch):
  return [sys.executable, "-m", "autoais", "evaluate", "--predictions", predictions,
          "--gold", os.path.join(ROOT, "examples", "gold.jsonl"),
          "--output_dir", os.path.join(scratch, "out")]


def _case(endpoint, scratch):
  env = dict(os.environ, NO_GCE_CHECK="True", PYTHONPATH=ROOT,
             GOOGLE_APPLICATION_CREDENTIALS=os.path.join(scratch, "none.json"))
  env.pop("STORAGE_EMULATOR_HOST", None)
  if endpoint:
    env["STORAGE_EMULATOR_HOST"] = endpoint
  beam = _timed([sys.executable, "-c", _BEAM_MATCH], env)
  autoais = _timed(_evaluate("gs://bucket/*.csv", scratch), env)
  startup = _timed(_evaluate(os.path.join(scratch, "missing.csv"), scratch), env)
  return {"beam": beam, "autoais": autoais, "startup": startup,
          "autoais_over_beam": round(autoais["seconds"] / beam["seconds"], 3)}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--case", default="both", choices=("unreachable", "refused", "both"))
  parser.add_argument("--real_endpoint", action="store_true",
                      help="unreachable: storage.googleapis.com itself")
  args = parser.parse_args()
  results = {}
  with tempfile.TemporaryDirectory() as scratch:
    if args.case in ("unreachable", "both"):
      results["unreachable"] = _case(None if args.real_endpoint else _closed_port_url(),
                                     scratch)
    if args.case in ("refused", "both"):
      server = RefusingGcs(401)
      try:
        results["refused_401"] = _case(server.url, scratch)
      finally:
        server.close()
  print(json.dumps(results))


if __name__ == "__main__":
  main()
