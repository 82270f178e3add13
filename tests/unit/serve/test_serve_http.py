"""`autoais serve`'s HTTP side and batcher in process (serve/http.py,
serve/batching.py), with a stand-in model the test holds busy for as long as it
needs (tests/support/served_models.py): limits, batching across requests,
deadline and client cancellation, readiness apart from liveness, metrics, drain.
No test depends on how fast the machine is: where one needs the model busy
while something happens, the model waits to be released; where it needs
requests to share a batch, the batcher waits for all of them."""
import asyncio
import json
import threading
import time

import aiohttp
import aiohttp.web
import pytest
from aiohttp.test_utils import TestClient, TestServer

from autoais.schemas import AttributionExample
from autoais.serve.batching import (ENCODE_GROUP_CHARS, ENCODE_GROUP_INSTANCES, Batcher,
                                    Limits, Overloaded, ServedModel, encode_groups)
from autoais.schemas.errors import BadRequest
from tests.support.served_models import FakeWindowModel, expected_score
from autoais.serve import http


# The bound of every wait on the service, in seconds (never reached unless a
# test fails).
WAIT_S = 60


def _service(held=False, **options):
  settings = options.pop("settings", http.Settings())
  inner = FakeWindowModel(held)
  service = http.NliService(ServedModel(inner, "fake"), {"name": "fake"}, settings,
                            **options)
  return service, inner


def _run(service, scenario):
  """Runs `scenario(client)` against the service's app on 127.0.0.1."""
  async def main():
    async with TestClient(TestServer(service.app())) as client:
      return await scenario(client)
  try:
    return asyncio.run(main())
  finally:
    service.close()


def _body(pairs):
  return {"instances": [{"premise": p, "hypothesis": h} for p, h in pairs]}


async def _until(condition):
  """Polls `condition()` on the event loop until it holds (at most WAIT_S)."""
  deadline = time.monotonic() + WAIT_S
  while not condition() and time.monotonic() < deadline:
    await asyncio.sleep(0.01)


async def _started(inner):
  """Waits until the model has begun a call."""
  await asyncio.get_running_loop().run_in_executor(None, inner.started.wait, WAIT_S)


async def _post(client, payload, **kwargs):
  data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
  response = await client.post("/predict", data=data,
                               headers={"Content-Type": "application/json"}, **kwargs)
  return response.status, await response.json()


def test_concurrent_requests_share_batches_and_get_their_own_scores():
  # The six requests hold 42 windows: the batcher waits for all of them, however
  # slowly they arrive.
  service, inner = _service(max_wait=WAIT_S, max_batch_windows=42)
  requests = [[(f"premise {r}.{i}|window {i}", f"hypothesis {r}") for i in range(r + 1)]
              for r in range(6)]

  async def scenario(client):
    return await asyncio.gather(*[_post(client, _body(pairs)) for pairs in requests])

  answers = _run(service, scenario)
  for pairs, (status, body) in zip(requests, answers):
    assert status == 200
    assert [p["nli_score"] for p in body["predictions"]] == [
        expected_score(p, h) for p, h in pairs]
    assert all(p["n_windows"] == 2 and p["truncated"] for p in body["predictions"])
  # Six requests arriving within the wait: fewer model calls than requests.
  assert len(inner.calls) < len(requests)
  stats = service.batcher.snapshot()
  assert stats.requests == 6 and stats.batches == len(inner.calls)
  assert max(int(size) for size in stats.requests_per_batch) > 1


def test_one_request_at_a_time_is_not_batched_with_others():
  service, inner = _service(max_wait=0.0, max_batch_windows=1)

  async def scenario(client):
    return await asyncio.gather(*[_post(client, _body([(f"p{i}", "h")]))
                                  for i in range(4)])

  assert [status for status, _ in _run(service, scenario)] == [200] * 4
  assert [len(call) for call in inner.calls] == [1, 1, 1, 1]


def test_limits_are_checked_before_any_scoring():
  settings = http.Settings(limits=Limits(max_instances=3, max_instance_chars=100,
                                         max_instance_windows=2, max_request_windows=4),
                           max_body_bytes=10_000, max_json_depth=8)
  service, inner = _service(settings=settings)

  async def scenario(client):
    results = {
        "instances": await _post(client, _body([("p", "h")] * 4)),
        "chars": await _post(client, _body([("p", "h"), ("x" * 101, "h")])),
        "windows": await _post(client, _body([("a|b|c", "h")])),
        "request_windows": await _post(client, _body([("a|b", "h")] * 3)),
        "bytes": await _post(client, b"{" + b" " * 10_001 + b"}"),
        "depth": await _post(client, b"[" * 9 + b"]" * 9),
        "brackets_in_strings": await _post(client, _body([("[[[[[[[[[[", "{{{{{{{{{")])),
        "not_json": await _post(client, b"{nope"),
        "field": await _post(client, {"instances": [{"premise": "p", "hypothesis": 3}]}),
    }
    response = await client.post("/predict", data=b"{}", chunked=True)
    results["no_length"] = response.status, await response.json()
    return results

  results = _run(service, scenario)
  assert results["instances"] == (413, {"error": "4 instances: at most 3 a request "
                                        "(--max_instances)"})
  assert results["chars"] == (413, {"error": (
      "instance 1: 102 characters of premise and hypothesis: at most 100 an instance "
      "(--max_instance_chars)")})
  assert results["windows"][0] == 413 and results["windows"][1]["error"].startswith(
      "instance 0: its premise needs 3 windows")
  assert "(--max_instance_windows)" in results["windows"][1]["error"]
  assert results["request_windows"][0] == 413
  assert results["request_windows"][1]["error"].startswith(
      "instance 2: the request needs more than 4 model inputs")
  assert results["bytes"] == (413, {"error": "10003 bytes: at most 10000 a request "
                                    "(--max_body_bytes)"})
  assert results["depth"] == (400, {"error": "the body nests arrays and objects 9 deep: "
                                    "at most 8 (--max_json_depth)"})
  assert results["brackets_in_strings"][0] == 200
  assert results["not_json"][0] == 400
  assert results["not_json"][1]["error"].startswith("the body is not JSON")
  assert results["field"] == (400, {"error": "instance 0: field 'hypothesis' must be "
                                    "a string"})
  assert results["no_length"][0] == 411
  # Only the two valid requests reached the model.
  assert sorted(len(call) for call in inner.calls) == [1]


def test_a_request_is_tokenised_in_groups_and_refused_within_one_group_past_a_limit():
  def example(premise):
    return AttributionExample(premise, "h", "", "")

  # Groups cover the request in order: at most ENCODE_GROUP_INSTANCES instances,
  # and ENCODE_GROUP_CHARS characters unless one instance alone is longer.
  sizes = [10, 30_000, 30_000, 30_000, 200_000, 5] + [1] * 70
  examples = [example("p" * (size - 1)) for size in sizes]
  groups = list(encode_groups(examples))
  assert [start for start, _ in groups] == [0, 3, 4, 5, 37, 69]
  assert [item for _, group in groups for item in group] == examples
  for _, group in groups:
    chars = sum(len(item.premise) + len(item.hypothesis) for item in group)
    assert len(group) <= ENCODE_GROUP_INSTANCES
    assert chars <= ENCODE_GROUP_CHARS or len(group) == 1

  inner = FakeWindowModel()
  served = ServedModel(inner, "fake")
  request = [example(f"a|b{i}") for i in range(100)]
  encoded = served.encode(request, Limits(max_instances=100, max_request_windows=200))
  assert encoded == FakeWindowModel().encode_many(request)
  assert [len(call) for call in inner.encoded] == [32, 32, 32, 4]

  # Refused at instance 40 (its windows pass 80): tokenised no further than the
  # group that holds it, not the request's last instance.
  inner.encoded.clear()
  with pytest.raises(BadRequest) as refused:
    served.encode(request, Limits(max_instances=100, max_request_windows=80))
  assert str(refused.value).startswith("instance 40: the request needs more than 80")
  assert sum(len(call) for call in inner.encoded) == 64


def test_json_depth_of_parsed_bodies_and_of_bodies_the_parser_refuses():
  assert http.json_depth({"instances": [{"premise": "[[[{{", "h": "]"}]}) == 3
  assert http.json_depth([[], [[[]]], {"a": [1]}]) == 4
  assert http.json_depth("no nesting") == 0
  for body in (b"[" * 100_000 + b"]" * 100_000, b"[" * 100_000):
    with pytest.raises(BadRequest, match=(
        "^the body nests arrays and objects more than 500 deep: at most 32 "
        r"\(--max_json_depth\)$")) as refused:
      http.parse_instances(body, 10)
    assert refused.value.status == 400


def test_deadline_answers_504_and_drops_the_waiting_request():
  settings = http.Settings(request_deadline=0.3)
  service, inner = _service(held=True, settings=settings, max_wait=0.0)

  async def scenario(client):
    first = asyncio.create_task(_post(client, _body([("slow", "h")])))
    await _started(inner)
    second = await _post(client, _body([("never scored", "h")]))
    first = await first
    inner.release()
    return first, second

  first, second = _run(service, scenario)
  assert first[0] == 504 and second[0] == 504
  assert second[1]["error"] == ("not scored within the request deadline of 0.3 s "
                                "(--request_deadline)")
  # The first was running when its deadline passed; the second never started.
  assert [premise for call in inner.calls for premise, _ in call] == ["slow"]
  assert service.batcher.snapshot().cancelled == 1


def test_a_client_that_disconnects_is_never_scored():
  service, inner = _service(held=True, max_wait=0.0)

  async def scenario(client):
    first = asyncio.create_task(_post(client, _body([("busy", "h")])))
    await _started(inner)
    gone = asyncio.create_task(_post(client, _body([("gone", "h")])))
    await _until(lambda: service.batcher.queue_depth() == (1, 1))  # it waits its turn
    gone.cancel()  # the client goes away
    with pytest.raises(asyncio.CancelledError):
      await gone
    await _until(lambda: service.metrics.by_status[499] == 1)  # the server saw it go
    inner.release()
    status, _ = await first
    return status, (await client.get("/metrics", params={"format": "json"})).status

  assert _run(service, scenario) == (200, 200)
  assert [premise for call in inner.calls for premise, _ in call] == ["busy"]
  assert service.batcher.snapshot().cancelled == 1
  assert service.metrics.by_status[499] == 1


def test_readiness_and_liveness_apart_while_the_model_is_stuck():
  settings = http.Settings(stuck_seconds=0.2)
  service, inner = _service(held=True, settings=settings, max_wait=0.0)

  async def scenario(client):
    before = await client.get("/health")
    request = asyncio.create_task(_post(client, _body([("stuck", "h")])))
    await _started(inner)
    await asyncio.sleep(0.4)  # at least that long: past stuck_seconds, the model held
    during = await client.get("/health")
    live = await client.get("/live")
    metrics = await client.get("/metrics")
    result = (before.status, await before.json(), during.status, await during.json(),
              live.status, await metrics.text())
    inner.release()
    await request
    after = await client.get("/health")
    return result + (after.status,)

  before, before_body, during, during_body, live, text, after = _run(service, scenario)
  assert (before, before_body["status"], before_body["model"]) == (200, "ok",
                                                                    {"name": "fake"})
  assert during == 503 and during_body["status"] == "not ready"
  assert during_body["model"] == {"name": "fake"}
  assert any(reason.startswith("a model batch has run") for reason in
             during_body["reasons"])
  assert live == 200 and after == 200
  assert "autoais_serve_ready 0" in text and "autoais_serve_in_flight_requests 1" in text


def test_a_full_queue_refuses_with_503_and_is_not_ready():
  service, inner = _service(held=True, max_wait=0.0, max_queue_windows=2)

  async def scenario(client):
    busy = asyncio.create_task(_post(client, _body([("busy", "h")])))
    await _started(inner)
    queued = asyncio.create_task(_post(client, _body([("a", "h"), ("b", "h")])))
    await _until(lambda: service.batcher.queue_depth() == (1, 2))
    refused = await client.post("/predict", json=_body([("c", "h")]))
    health = await client.get("/health")
    answers = (refused.status, refused.headers.get("Retry-After"), await refused.json(),
               health.status, await health.json())
    inner.release()
    return answers + ((await busy)[0], (await queued)[0])

  refused, retry_after, body, health, health_body, busy, queued = _run(service, scenario)
  assert (refused, retry_after) == (503, "1")
  assert body["error"] == ("overloaded: 2 model inputs are waiting: at most 2 "
                           "(--max_queue_windows)")
  assert health == 503 and any("the queue is full" in r for r in health_body["reasons"])
  assert (busy, queued) == (200, 200)


def test_drain_finishes_requests_in_flight_and_refuses_new_ones():
  service, inner = _service(held=True, max_wait=0.0)

  async def scenario(client):
    in_flight = asyncio.create_task(_post(client, _body([("in flight", "h")])))
    await _started(inner)
    drain = asyncio.create_task(service.drain())
    await _until(lambda: service.draining)
    late = await _post(client, _body([("late", "h")]))
    health = await client.get("/health")
    inner.release()
    await drain
    return await in_flight, late, health.status, await health.json()

  in_flight, late, health, health_body = _run(service, scenario)
  assert in_flight[0] == 200
  assert in_flight[1]["predictions"][0]["nli_score"] == expected_score("in flight", "h")
  assert late == (503, {"error": "the server is shutting down"})
  assert health == 503 and "draining: shutting down" in health_body["reasons"]


def test_a_failing_request_does_not_fail_the_requests_batched_with_it():
  service, inner = _service(max_wait=WAIT_S, max_batch_windows=3)  # waits for all 3

  async def scenario(client):
    return await asyncio.gather(_post(client, _body([("fine", "h")])),
                                _post(client, _body([("FAIL-ME", "h")])),
                                _post(client, _body([("also fine", "h")])))

  fine, failed, also_fine = _run(service, scenario)
  assert fine[0] == 200 and also_fine[0] == 200
  assert failed == (500, {"error": "scoring failed: RuntimeError: the model failed on "
                          "this input"})
  assert len(inner.calls[0]) == 3  # they shared a batch first


def test_batcher_queue_bound_and_prometheus_text():
  gate = threading.Event()
  batcher = Batcher(lambda items: gate.wait(WAIT_S) and items, max_wait=0.0,
                    max_queue_windows=3)
  try:
    running = batcher.submit(["a"], 1)
    deadline = time.monotonic() + WAIT_S
    while batcher.stuck_for() == 0 and time.monotonic() < deadline:
      time.sleep(0.01)  # until the model thread has taken it: the queue is empty again
    assert batcher.queue_depth() == (0, 0)
    batcher.submit(["b", "c"], 2)
    with pytest.raises(Overloaded):
      batcher.submit(["d", "e"], 2)
    gate.set()
    assert running.result(WAIT_S) == ["a"]
  finally:
    batcher.close(WAIT_S)
  service, _ = _service()
  try:
    text = http.prometheus_text(service.metrics_values())
  finally:
    service.close()
  for name in ("autoais_serve_requests_total", "autoais_serve_request_seconds_bucket",
               "autoais_serve_queue_windows", "autoais_serve_batch_requests_bucket",
               "autoais_serve_batch_windows_count", "autoais_serve_ready 1"):
    assert name in text, name


def test_remote_reads_the_model_of_a_server_that_is_not_ready():
  """`--scorer remote` reads the served model's identity at launch; a server
  draining (503) still says what it serves. A 503 without it is an error."""
  from autoais.models import remote  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import ModelError  # pylint: disable=import-outside-toplevel
  service, _ = _service()

  async def scenario(client):
    url = str(client.make_url("")).rstrip("/")
    loop = asyncio.get_running_loop()
    ready = await loop.run_in_executor(None, remote.fetch_health, url, WAIT_S)
    service.draining = True
    draining = await loop.run_in_executor(None, remote.fetch_health, url, WAIT_S)
    return ready, draining

  ready, draining = _run(service, scenario)
  assert ready == {"status": "ok", "model": {"name": "fake"}}
  assert draining["status"] == "not ready" and draining["model"] == {"name": "fake"}
  async def down(unused_request):
    return aiohttp.web.json_response({"status": "down"}, status=503)

  bare = aiohttp.web.Application()
  bare.router.add_get("/health", down)

  async def refused(client):
    url = str(client.make_url("")).rstrip("/")
    with pytest.raises(ModelError, match="does not answer: HTTP Error 503"):
      await asyncio.get_running_loop().run_in_executor(None, remote.fetch_health, url, WAIT_S)

  async def main():
    async with TestClient(TestServer(bare)) as client:
      await refused(client)
  asyncio.run(main())


@pytest.mark.parametrize("flags,message", [
    (["--max_json_depth", "600"], "--max_json_depth 600: at most 500"),
    (["--max_batch_windows", "0"], "--max_batch_windows 0: must be positive"),
    (["--max_wait_ms", "-1"], "--max_wait_ms -1.0: must be zero or more"),
    # At 0 every request would be answered 504, every batch count as stuck.
    (["--request_deadline", "0"], "--request_deadline 0.0: must be positive"),
    (["--stuck_seconds", "0"], "--stuck_seconds 0.0: must be positive"),
    (["--max_wait_ms", "120000", "--request_deadline", "5"],
     "--max_wait_ms 120000: a request alone would wait past --request_deadline 5 s"),
    # A loader reads 0 as its default; a negative length would cut every input.
    (["--max_input_tokens", "0"], "--max_input_tokens must be positive, got 0"),
    (["--token_budget", "-5"], "--token_budget must be positive, got -5"),
    (["--port", "70000"], "--port 70000: must be in [0, 65535]"),
    (["--positive_label", "entailment"], "--positive_label is for --scorer nli-classifier"),
    (["--language", "de"], "--language is for --scorer lettucedetect, not --scorer t5"),
    # Given at its default, as much a flag t5 would leave unused.
    (["--language", "en"], "--language is for --scorer lettucedetect, not --scorer t5"),
    (["--model_revision", "main"], "--model_revision is for a model named by its "
                                   "Hugging Face hub id"),
])
def test_serve_refuses_bad_flags_before_loading(flags, message, tmp_path, capsys):
  from autoais.beam_jobs import serve  # pylint: disable=import-outside-toplevel
  assert serve.run(["--model", str(tmp_path / "absent"), *flags]) == 2
  assert message in capsys.readouterr().err
