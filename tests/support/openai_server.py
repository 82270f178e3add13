"""Test-only: a fake OpenAI-compatible endpoint (what `vllm serve` exposes) on
127.0.0.1, answering one generated token with given top log-probs, with the
faults of tests/support/fault_server.py; and a tiny judge tokenizer with a
chat template.

    tokenizer = build_judge_tokenizer(directory)
    server = OpenAIServer(tokenizer, faults=["503", "malformed"])
    server.url    # http://127.0.0.1:PORT/v1
    ...
    server.close()

The server renders a chat request's messages with the tokenizer's chat
template (as vLLM does), so a chat and a completions request of one prompt
read the same text. Its answer's top log-probs are `top_logprobs(text)`
(default: `given_logprobs`, a function of the text alone, so retries get the
same numbers). Besides fault_server's faults: "malformed" (200, a body that is
not JSON) and "nologprobs" (200, a choice without log-probs). A prompt holding
`refuse_marker` is refused with 400 every time (as vLLM refuses a prompt
longer than its context), before any fault is taken. `bodies` keeps every
request's JSON, `authorizations` the Authorization headers seen.
"""
import json
import math
from typing import Callable, List, Optional, Tuple

from tests.support.fault_server import FaultHandler, FaultServer
from tests.support.scorers import hash_score
from tests.support.vocab import example_texts

MODEL = "bespokelabs/Bespoke-MiniCheck-7B"
# Qwen2's chat template, as Bespoke-MiniCheck-7B's tokenizer_config.json has it
# (its system-prompt default left out).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build_judge_tokenizer(directory) -> str:
  """A byte-level BPE tokenizer trained on the example texts, with the chat
  template and its special tokens, saved as published (tokenizer.json,
  tokenizer_config.json); returns the directory."""
  from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # pylint: disable=import-outside-toplevel
  from transformers import PreTrainedTokenizerFast  # pylint: disable=import-outside-toplevel
  specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
  tokenizer = Tokenizer(models.BPE())
  tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
  tokenizer.decoder = decoders.ByteLevel()
  tokenizer.train_from_iterator(example_texts(), trainers.BpeTrainer(
      vocab_size=800, special_tokens=specials,
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
  fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>")
  fast.chat_template = CHAT_TEMPLATE
  fast.save_pretrained(str(directory))
  return str(directory)


def given_logprobs(text: str) -> List[Tuple[str, float]]:
  """Five top tokens of a judge's first step, a function of the prompt text:
  "Yes" and "yes" (both read as support), " Yes" (a leading space: not read),
  "No" and "Maybe"; for about one prompt in five no "yes" of any case at all."""
  p = hash_score(text, "judge")
  q = hash_score(text, "spread")
  if p < 0.2:
    return [("No", math.log(0.7)), ("Maybe", math.log(0.1)), (" Yes", math.log(0.05)),
            ("no", math.log(0.04)), ("I", math.log(0.01))]
  return [("Yes", math.log(0.9 * p * (0.5 + q / 2))), ("No", math.log(0.9 * (1 - p))),
          ("yes", math.log(0.9 * p * (0.5 - q / 2))), (" Yes", math.log(0.02)),
          ("Maybe", math.log(0.01))]


class OpenAIServer(FaultServer):

  def __init__(self, tokenizer, model: str = MODEL,
               top_logprobs: Callable[[str], List[Tuple[str, float]]] = given_logprobs,
               refuse_marker: str = "REFUSE-ME", **options):
    self.tokenizer = tokenizer
    self.model = model
    self.top_logprobs = top_logprobs
    self.bodies: List[dict] = []
    self.authorizations = set()
    super().__init__(refuse_marker=refuse_marker, handler=_OpenAIHandler, **options)

  @property
  def url(self) -> str:
    return f"http://127.0.0.1:{self.server_address[1]}/v1"

  def prompt_text(self, route: str, body: dict) -> Optional[str]:
    if route == "/v1/chat/completions":
      return self.tokenizer.apply_chat_template(body["messages"],
                                                add_generation_prompt=True, tokenize=False)
    return body["prompt"]


def _choice(route: str, pairs: List[Tuple[str, float]], logprobs: bool) -> dict:
  token = max(pairs, key=lambda pair: pair[1])[0]
  if route == "/v1/chat/completions":
    content = [{"token": token, "logprob": max(lp for _, lp in pairs),
                "bytes": list(token.encode("utf-8")),
                "top_logprobs": [{"token": t, "logprob": lp,
                                  "bytes": list(t.encode("utf-8"))} for t, lp in pairs]}]
    return {"index": 0, "message": {"role": "assistant", "content": token},
            "logprobs": {"content": content} if logprobs else None,
            "finish_reason": "length"}
  return {"index": 0, "text": token, "finish_reason": "length",
          "logprobs": {"tokens": [token], "token_logprobs": [max(lp for _, lp in pairs)],
                       "top_logprobs": [dict(pairs)], "text_offset": [0]}
                      if logprobs else None}


class _OpenAIHandler(FaultHandler):

  server: OpenAIServer

  def do_GET(self):  # pylint: disable=invalid-name
    if self.path.rstrip("/") != "/v1/models":
      self._reply(404, {"error": {"message": f"no route {self.path}"}})
      return
    self._reply(200, {"object": "list", "data": [{"id": self.server.model,
                                                  "object": "model"}]})

  def do_POST(self):  # pylint: disable=invalid-name
    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
    route = self.path.rstrip("/")
    if route not in ("/v1/chat/completions", "/v1/completions"):
      self._reply(404, {"error": {"message": f"no route {self.path}"}})
      return
    if body.get("model") != self.server.model:
      self._reply(404, {"error": {"message": f"The model `{body.get('model')}` does "
                                             "not exist."}})
      return
    with self.server.lock:
      self.server.bodies.append(body)
      self.server.authorizations.add(self.headers.get("Authorization"))
    text = self.server.prompt_text(route, body)
    if self.server.refuse_marker in text:  # refused every time, before any fault
      self.server.log.append(("400", 1))
      self._reply(400, {"error": {"message": "This model's maximum context length is "
                                             "exceeded"}})
      return
    fault = self.server.next_fault()
    self.server.log.append((fault or "ok", 1))
    if fault == "malformed":
      payload = b'{"choices": [{"index": 0, "text": "Yes"'
      self.send_response(200)
      self.send_header("Content-Type", "application/json")
      self.send_header("Content-Length", str(len(payload)))
      self.end_headers()
      self.wfile.write(payload)
      return
    if fault != "nologprobs" and self.inject(fault):
      return
    self._reply(200, {"id": "fake", "object": "chat.completion" if "chat" in route
                      else "text_completion", "model": self.server.model,
                      "choices": [_choice(route, self.server.top_logprobs(text),
                                          fault != "nologprobs")]})
