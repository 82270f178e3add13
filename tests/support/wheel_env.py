"""The wheel installed into a fresh virtualenv, as a user installs it, for
tests/deploy (test_packaging: every module from the wheel; test_newcomer: the
README's commands in a new shell).

    wheel, python, fresh_site = install_wheel(tmp_path)

The wheel is built from a copy of the tracked tree (the build leaves nothing
in the checkout) and installed with pip into a virtualenv made with `venv`
(its `bin/activate` and the `autoais` console script included). The
third-party dependencies are not installed again (torch, Beam and TensorFlow
are 5 GB and minutes): the fresh environment reaches the test environment's
site-packages through a path entry, whose own .pth files (the editable
install of this checkout among them) are not run, so the project's modules
come from the wheel alone.
"""
import pathlib
import site
import subprocess
import sys
import sysconfig

from tests.support.paths import PROJECT_ROOT


def install_wheel(root: pathlib.Path):
  """(wheel, python of the fresh virtualenv, its site-packages) under `root`."""
  # A copy of the tracked tree, so that the build leaves nothing in the checkout.
  source = root / "source"
  source.mkdir(parents=True)
  tracked = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
  for name in filter(None, tracked):
    if (PROJECT_ROOT / name).is_file():
      target = source / name
      target.parent.mkdir(parents=True, exist_ok=True)
      target.write_bytes((PROJECT_ROOT / name).read_bytes())
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                  "--no-build-isolation", "-q", "-w", str(root / "dist"), str(source)],
                 check=True, cwd=root)
  (wheel,) = (root / "dist").glob("autoais_beam-*.whl")
  environment = root / "venv"
  subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)],
                 check=True)
  python = environment / "bin" / "python"
  fresh_site = pathlib.Path(subprocess.run(
      [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
      check=True, capture_output=True, text=True).stdout.strip())
  # The dependencies: the test environment's site-packages as a plain path entry.
  # A path line in a .pth file is not itself a site directory, so the .pth files
  # there (the editable install of this checkout among them) are not run.
  # (With the site-packages directories that this environment itself reaches
  # through a path entry, as a virtualenv layered on another one does.)
  dependencies = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]]
                  + [p for p in sys.path if p.endswith("site-packages")]
                  if pathlib.Path(p).is_dir()]
  (fresh_site / "dependencies.pth").write_text("\n".join(dict.fromkeys(dependencies))
                                              + "\n", encoding="utf-8")
  subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                  "--no-deps", "--no-index", "-q", str(wheel)], check=True, cwd=root)
  return wheel, python, fresh_site
