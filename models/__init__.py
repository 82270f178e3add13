"""Models as Beam ModelHandlers (load_model, batched run_inference), importing
`schemas` only: t5_nli (T5 / mT5 NLI), embeddings (sentence embeddings for sck),
remote (hosted models over HTTP and Vertex AI); testing builds tiny T5 fixtures.
The Beam side of scoring (scorers by name, fan-out, cache, failures) is
transforms/scoring/.
"""
