"""AutoAIS-Beam: Apache Beam jobs that score attributed question answering.

The package's layers are mapped into it from the repository's folders
(setup.py): `autoais.schemas`, `autoais.models`, `autoais.transforms`,
`autoais.beam_jobs`, `autoais.launch`.
"""
__version__ = "0.1.0"
