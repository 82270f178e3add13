"""LettuceDetect (`--scorer lettucedetect`) as a Beam ModelHandler: a token
classifier (ModernBERT, EuroBERT, any `*ForTokenClassification` of two labels,
label 1 unsupported) that reads the passages, the question and the answer in
the prompt of its language (`--language`) and gives each answer token the
probability that it is unsupported.

An example's question and answer are checked_text's; passages that do not fit
beside the answer within `max_input_tokens` (4096, as the reference) are
grouped into chunks that do (LettuceDetectModel.chunks), a token taking its
largest probability over them. Runs of unsupported tokens are the spans, in
characters of the answer; the score is one minus the largest probability of
any answer token, so that scores rank answers without a span too. An answer
with no tokens, or too long to leave the prompt a token, is a ScoringFailure
(dead letter). The contract: docs/scorers.md, "LettuceDetect"."""
import string
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from autoais.models import checkpoints
from autoais.models.nli_classifier import CLASSIFIER_TOKENIZER_FILES
from autoais.models.token_budget import (DEFAULT_TOKEN_BUDGET, LocalModelHandler,
                                         TokenBudgetModel, check_device, check_dtype,
                                         load_weights)
from autoais.schemas import (LOCAL_FAILURE, QA_HYPOTHESIS, AttributionExample,
                             AttributionScore, ScoringFailure, UnsupportedSpan)
from autoais.schemas.errors import ModelError

DEFAULT_MAX_INPUT_TOKENS = 4096
UNSUPPORTED_LABEL_ID = 1
# LettuceDetect's prompts, as its model reads them: {language: (the word of
# "passage 1: ...", the prompt with a question, the prompt without one)}.
PROMPTS = {
    "en": ('passage',
           'Briefly answer the following question:\n${question}\nBear in mind that your '
           'response should be strictly based on the following ${num_passages} passages:\n'
           '${context}\nIn case the passages do not contain the necessary information to '
           'answer the question, please reply with: "Unable to answer based on given '
           'passages."\noutput:',
           'Summarize the following text:\n${text}\noutput:'),
    "de": ('Passage',
           'Beantworte die folgende Frage kurz:\n${question}\nBeachte, dass deine Antwort nur '
           'auf den folgenden ${num_passages} Passagen basieren soll:\n${context}\nFalls die '
           'Passagen nicht die notwendigen Informationen zur Beantwortung der Frage '
           'enthalten, antworte bitte mit: "Kann aufgrund der gegebenen Passagen nicht '
           'beantwortet werden."\nAusgabe:',
           'Fasse den folgenden Text zusammen:\n${text}\nAusgabe:\n'),
    "fr": ('passage',
           'Réponds brièvement à la question suivante :\n${question}\nNote que ta réponse '
           'doit être basée uniquement sur les ${num_passages} passages suivants :\n'
           '${context}\nSi les passages ne contiennent pas les informations nécessaires pour '
           'répondre à la question, réponds s\'il te plaît par : "Impossible de répondre sur '
           'la base des passages fournis."\nSortie : ',
           'Résume le texte suivant :\n${text}\nSortie : '),
    "es": ('pasaje',
           'Responde a la siguiente pregunta brevemente:\n${question}\nTen en cuenta que tu '
           'respuesta debe basarse únicamente en los siguientes ${num_passages} pasajes:\n'
           '${context}\nSi los pasajes no contienen la información necesaria para responder a '
           'la pregunta, por favor responde con: "No se puede responder con base en los '
           'pasajes proporcionados."\nSalida: ',
           'Resume el siguiente texto:\n${text}\nSalida: '),
    "it": ('brano',
           'Rispondi alla seguente domanda in modo breve:\n${question}\nTieni presente che la '
           'tua risposta deve basarsi solo sui seguenti ${num_passages} passaggi:\n'
           '${context}\nSe i passaggi non contengono le informazioni necessarie per '
           'rispondere alla domanda, per favore rispondi con: "Non può essere risposto in '
           'base ai passaggi forniti."\nRisposta:\n',
           'Riassumi il seguente testo:\n${text}\nRisposta: '),
    "pl": ('fragment',
           'Zwięźle odpowiedz na następujące pytanie:\n${question}\nPamiętaj, że Twoja '
           'odpowiedź powinna opierać się wyłącznie na następujących ${num_passages} '
           'fragmentach:\n${context}\nJeśli fragmenty nie zawierają informacji niezbędnych do '
           'udzielenia odpowiedzi na pytanie, odpowiedz: "Nie można odpowiedzieć na podstawie '
           'podanych fragmentów."\noutput: ',
           'Streść następujący tekst:\n${text}\nWynik: '),
    "cn": ('段落',
           '请简短回答以下问题：\n${question}\n请注意，您的回答应严格基于以下${num_passages}段落：\n${context}\n'
           '如果段落中不包含回答问题所需的信息，请回复："基于给定段落无法回答。"\n输出：\n',
           '请总结以下文本：\n${text}\n输出：\n'),
    "hu": ('szövegrészlet',
           'Röviden válaszolj az alábbi kérdésre:\n${question}\nVedd figyelembe, hogy a '
           'válaszod kizárólag az alábbi ${num_passages} szövegrészletre támaszkodjon:\n'
           '${context}\nHa a szövegrészletek nem tartalmazzák a kérdés megválaszolásához '
           'szükséges információt, válaszolj így: "Nem tudok válaszolni a megadott '
           'szövegrészletek alapján."\noutput:',
           'Foglalja össze az alábbi szöveget:\n${text}\noutput:\n\n\n'),
}
LANGUAGES = tuple(PROMPTS)


def prompt(passages: Sequence[str], question: Optional[str], language: str) -> str:
  """The prompt of `passages` (numbered from 1) and `question` (None: without one)."""
  word, with_question, without = PROMPTS[language]
  context = "\n".join(f"{word} {i + 1}: {p}" for i, p in enumerate(passages))
  if question is None:
    return string.Template(without).substitute(text=context)
  return string.Template(with_question).substitute(
      question=question, num_passages=len(passages), context=context)


def checked_text(example: AttributionExample) -> Tuple[Optional[str], str]:
  """(question or None, the text checked) of an example: its own question
  and its hypothesis as written where it carries one apart
  (AttributionExample.question: RAGTruth's QA responses); the question and
  the answer read back out of a QA hypothesis (schemas.QA_HYPOTHESIS) of the
  example's answer; else no question, the hypothesis checked (the prompt
  for text without a question)."""
  if example.question is not None:
    return example.question, example.hypothesis
  head, tail = QA_HYPOTHESIS.split("{question}")
  tail = tail.format(answer=example.answer)
  text = example.hypothesis
  if text.startswith(head) and text.endswith(tail) and len(text) >= len(head) + len(tail):
    return text[len(head):len(text) - len(tail)], example.answer
  return None, text


def check_detector(model_path: str, tokenizer_path: Optional[str]) -> None:
  """Launch-time checks (listing and config.json): a token classifier of two labels."""
  checkpoints.check_model_and_tokenizer(model_path, tokenizer_path,
                                        CLASSIFIER_TOKENIZER_FILES, hint="")
  config = checkpoints.read_model_json(model_path)
  names = [str(name) for name in config.get("architectures") or []]
  if not any(name.endswith("ForTokenClassification") for name in names) or len(
      config.get("id2label") or {0: 0, 1: 1}) != 2:
    raise ModelError(f"--model {model_path}: config.json's architectures "
                     f"({', '.join(names) or 'none'}) and labels are not a token classifier "
                     "of two labels: --scorer lettucedetect reads LettuceDetect checkpoints")


class EncodedAnswer(NamedTuple):
  """An example's model inputs: (ids, offsets, answer tokens, cut) of each
  chunk, or none and why (`failure`)."""
  windows: List[Tuple[List[int], List[Tuple[int, int]], int, bool]]
  failure: str = ""


class LettuceDetectModel(TokenBudgetModel):
  """A loaded LettuceDetect: chunks, per-token probabilities, spans, scores."""

  def __init__(self, model, tokenizer, device: str, max_input_tokens: int,
               token_budget: int, language: str):
    super().__init__(model, tokenizer, device, max_input_tokens, token_budget)
    self.language = language

  def _count(self, text: str) -> int:
    return len(self.tokenizer.input_ids([text], add_special_tokens=False)[0])

  def chunks(self, passages: Sequence[str], question: Optional[str],
             answer_tokens: int) -> List[List[str]]:
    """The passages grouped so that each group's prompt fits beside the answer."""
    room = self.max_input_tokens - answer_tokens - 3
    if self._count(prompt(passages, question, self.language)) <= room:
      return [list(passages)]
    room -= self._count(prompt([""], question, self.language))
    word, groups, used = PROMPTS[self.language][0], [], 0
    for i, passage in enumerate(passages):
      size = self._count(f"{word} {i + 1}: {passage}")
      if groups and used + 1 + size <= room:
        groups[-1].append(passage)
        used += 1 + size
      else:
        groups.append([passage])
        used = size
    return groups if room > 0 else [list(passages)]

  def encode_many(self, examples: Sequence[AttributionExample],
                  passages_of=None) -> List[EncodedAnswer]:
    """Each example's chunk inputs (`passages_of(example)`: its passages, by
    default the premise alone); none, with the reason, for an answer that
    cannot be scored."""
    encoded = []
    for example in examples:
      question, answer = checked_text(example)
      answer_tokens = self._count(answer)
      if answer_tokens == 0 or answer_tokens + 4 > self.max_input_tokens:
        encoded.append(EncodedAnswer([], f"lettucedetect: the answer has {answer_tokens} "
                                     f"tokens, the input {self.max_input_tokens}"))
        continue
      windows = []
      for group in self.chunks((passages_of or (lambda e: [e.premise]))(example), question,
                               answer_tokens):
        text = prompt(group, question, self.language)
        encoding = self.tokenizer(text, answer, truncation="only_first",
                                  max_length=self.max_input_tokens,
                                  return_offsets_mapping=True, verbose=False)
        ids = encoding["input_ids"]
        cut = (len(ids) == self.max_input_tokens
               and self._count(text) + answer_tokens + 3 > self.max_input_tokens)
        windows.append((ids, encoding["offset_mapping"], answer_tokens, cut))
      encoded.append(EncodedAnswer(windows))
    return encoded

  def score(self, examples: Sequence[AttributionExample], threshold: float = 0.5,
            passages_of=None) -> List[Union[AttributionScore, ScoringFailure]]:
    """Each example's score with its unsupported spans (see encode_many)."""
    encoded = self.encode_many(examples, passages_of)
    return self.window_scores(
        encoded, self.probabilities([w for item in encoded for w in item.windows]), threshold)

  def window_scores(self, encoded: Sequence[EncodedAnswer], probabilities,
                    threshold: float) -> List[Union[AttributionScore, ScoringFailure]]:
    """Each encoded example's score and spans from `probabilities` of all
    their windows in order; a ScoringFailure for one without windows."""
    scores, position = [], 0
    for item in encoded:
      count = len(item.windows)
      scores.append(self._detection(item.windows, probabilities[position:position + count],
                                    threshold) if count else
                    ScoringFailure(LOCAL_FAILURE, item.failure))
      position += count
    return scores

  @staticmethod
  def _detection(windows, probabilities, threshold: float) -> AttributionScore:
    ids, offsets, answer_tokens, _ = windows[0]
    start = len(ids) - answer_tokens - 1
    probability = np.stack([found[0] for found in probabilities]).max(axis=0)
    unsupported = probabilities[0][1] if len(windows) == 1 else probability >= 0.5
    base = offsets[start][0]
    spans, scored = [], []
    for k in range(answer_tokens):
      begin, end = offsets[start + k]
      if begin == end:
        continue
      scored.append(probability[k])
      if not unsupported[k]:
        spans.append(None)
      elif spans and spans[-1] is not None:
        spans[-1] = UnsupportedSpan(spans[-1].start, end - base,
                                    max(spans[-1].probability, float(probability[k])))
      else:
        spans.append(UnsupportedSpan(begin - base, end - base, float(probability[k])))
    score = 1.0 - float(max(scored)) if scored else 1.0
    return AttributionScore(score, score > threshold, len(windows),
                            any(window[3] for window in windows),
                            [span for span in spans if span is not None])

  def probabilities(self, inputs) -> List[Tuple[np.ndarray, np.ndarray]]:
    """(P(unsupported), argmax is unsupported) of each input's answer tokens."""
    torch = self._torch
    out: List[Any] = [None] * len(inputs)
    with torch.inference_mode():
      for batch in self._batches([len(item[0]) for item in inputs]):
        ids, mask = self._pad([inputs[i][0] for i in batch])
        with self.device_turn:
          logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
          chosen = (logits.argmax(dim=-1) == UNSUPPORTED_LABEL_ID).cpu().numpy()
          unsupported = torch.softmax(logits, dim=-1)[..., UNSUPPORTED_LABEL_ID].cpu().numpy()
        for row, i in enumerate(batch):
          length, answer_tokens = len(inputs[i][0]), inputs[i][2]
          where = slice(length - answer_tokens - 1, length - 1)
          out[i] = (unsupported[row, where].astype(np.float64), chosen[row, where])
    return out


def load_lettucedetect(model_path: str, dtype: str = "float32", device: str = "cpu",
                       max_input_tokens: Optional[int] = None,
                       token_budget: Optional[int] = None, *,
                       tokenizer_path: Optional[str] = None,
                       language: str = "en") -> LettuceDetectModel:
  """Loads a LettuceDetect checkpoint (transformers' own token classifier of
  its config.json, safetensors, never remote code)."""
  from transformers import AutoModelForTokenClassification  # pylint: disable=import-outside-toplevel
  check_dtype(dtype)
  check_device(device)
  check_detector(model_path, tokenizer_path)
  if language not in PROMPTS:
    raise ModelError(f"--language {language!r}: choose from {', '.join(LANGUAGES)}")
  _, tokenizer = checkpoints.open_tokenizer(model_path, tokenizer_path,
                                            CLASSIFIER_TOKENIZER_FILES)
  # A probability per answer token: the simulated device's marker is refused.
  model = load_weights(AutoModelForTokenClassification,
                       checkpoints.local_model_dir(model_path), dtype, device)
  return LettuceDetectModel(model, tokenizer, device,
                            max_input_tokens or DEFAULT_MAX_INPUT_TOKENS,
                            token_budget or DEFAULT_TOKEN_BUDGET[device], language)


class LettuceDetectModelHandler(LocalModelHandler):
  """RunInference handler of the lettucedetect family (see LocalModelHandler)."""

  metrics_namespace = "autoais_lettucedetect"
  load = staticmethod(load_lettucedetect)


def describe_lettucedetect(model_path: str, max_input_tokens: Optional[int],
                           tokenizer_path: Optional[str], language: str) -> Dict[str, Any]:
  """What run.json records of a LettuceDetect checkpoint, read on a worker
  without loading its weights."""
  local_dir = checkpoints.local_model_dir(model_path)
  tokenizer_dir = checkpoints.local_tokenizer_dir(model_path, tokenizer_path,
                                                  CLASSIFIER_TOKENIZER_FILES)
  config = checkpoints.read_model_json(local_dir)
  return {"model_type": config.get("model_type"), "architectures": config.get("architectures"),
          "unsupported_label_id": UNSUPPORTED_LABEL_ID, "language": language,
          "prompt": PROMPTS[language][1],
          "max_input_tokens": max_input_tokens or DEFAULT_MAX_INPUT_TOKENS,
          **checkpoints.checkpoint_checksums(local_dir, tokenizer_dir,
                                             tokenizer_path or model_path,
                                             CLASSIFIER_TOKENIZER_FILES + ("merges.txt",))}
