"""The scorer names of `--scorer` (SPEC 3)."""

STRING_MATCH = "string-match"
T5 = "t5"
REMOTE = "remote"
VERTEX = "vertex"
NLI_CLASSIFIER = "nli-classifier"
LLM_JUDGE = "llm-judge"
MINICHECK = "minicheck"
SCORERS = (STRING_MATCH, T5, NLI_CLASSIFIER, MINICHECK, REMOTE, VERTEX, LLM_JUDGE)
# The scorers that run a model directory (--model) in the job's workers.
LOCAL_MODELS = (T5, NLI_CLASSIFIER, MINICHECK)
# --judge_api: the OpenAI-compatible APIs an llm-judge is asked through.
JUDGE_APIS = ("chat", "completions")
_ALL_BUT_STRING_MATCH = tuple(name for name in SCORERS if name != STRING_MATCH)
# Which scorers take each scorer flag (ScorerOptions' dests): a flag given with
# another scorer is refused, never ignored. --scorer, --threshold and
# --decision are every scorer's (decode is refused where it does not apply).
FLAG_SCORERS = {
    "model": LOCAL_MODELS,
    "model_revision": LOCAL_MODELS,
    "tokenizer": LOCAL_MODELS + (LLM_JUDGE,),
    "tokenizer_revision": LOCAL_MODELS + (LLM_JUDGE,),
    "positive_label": (NLI_CLASSIFIER,),
    "chunk_size": (MINICHECK, LLM_JUDGE),
    "dtype": LOCAL_MODELS,
    "device": LOCAL_MODELS,
    "max_input_tokens": LOCAL_MODELS,
    "token_budget": LOCAL_MODELS,
    "torch_threads": LOCAL_MODELS,
    "large_model": LOCAL_MODELS,
    "endpoint": (REMOTE,),
    "request_timeout": (REMOTE, LLM_JUDGE),
    "max_retries": (REMOTE, LLM_JUDGE),
    "retry_backoff": (REMOTE, LLM_JUDGE),
    "instances_per_request": (REMOTE, VERTEX),
    "endpoint_id": (VERTEX,),
    "location": (VERTEX,),
    "judge_url": (LLM_JUDGE,),
    "judge_model": (LLM_JUDGE,),
    "judge_api": (LLM_JUDGE,),
    "judge_api_key_env": (LLM_JUDGE,),
    "judge_concurrency": (LLM_JUDGE,),
    "score_cache": _ALL_BUT_STRING_MATCH,
}
