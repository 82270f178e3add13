"""Models as Beam ModelHandlers (load_model, batched run_inference), importing
`schemas` only. Shared: checkpoints (checkpoint and tokenizer I/O, checks,
checksums, the tokenizer lock), token_budget (the loaded model and handler base
of the local families), hub (Hugging Face hub ids). One module per family:
t5_nli (T5 / mT5 NLI), nli_classifier, minicheck (with sentences), llm_judge,
remote (hosted models over HTTP and Vertex AI); serving (a model served to
concurrent requests) and embeddings (sentence embeddings for sck). The Beam
side of scoring (scorers by name, fan-out, cache, failures) is
transforms/scoring/.
"""
