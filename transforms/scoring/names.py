"""The scorer names of `--scorer` (SPEC 3)."""

STRING_MATCH = "string-match"
T5 = "t5"
REMOTE = "remote"
VERTEX = "vertex"
NLI_CLASSIFIER = "nli-classifier"
LLM_JUDGE = "llm-judge"
MINICHECK = "minicheck"
HHEM = "hhem"
FACTCG = "factcg"
LETTUCEDETECT = "lettucedetect"
# --language: the languages LettuceDetect ships prompts in (models/lettucedetect.py).
LETTUCEDETECT_LANGUAGES = ("en", "de", "fr", "es", "it", "pl", "cn", "hu")
# --judge_api: the OpenAI-compatible APIs an llm-judge is asked through.
JUDGE_APIS = ("chat", "completions")
