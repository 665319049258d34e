"""The official `openai` client against `tessera serve`: chat and completions, streaming and not,
reasoning deltas, tool calls, the usage chunk, logprobs, n, stops, error objects, /tokenize,
/detokenize, /metrics. The scripted sampler makes the model say known texts (seed 0: reasoning +
answer, 1: a tool call, 2: plain text; other seeds: the model's own argmax)."""
import json
import unittest

import openai

import harness
from harness import SCRIPT_TEXTS

MESSAGES = [{"role": "user", "content": "What is six times seven?"}]
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "days": {"type": "integer"}}}}}


class OpenAIClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(scripted=True, max_context=1024,
                                    defaults={"max_tokens": 64}).start()
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused", max_retries=0)
        cls.model = cls.client.models.list().data[0].id
        cls.tok = harness.tokenizer()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, f"exit {code}\n{cls.server.log()}"

    def n_tokens(self, text):
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    # ------------------------------------------------------------------ models
    def test_models(self):
        models = self.client.models.list().data
        self.assertEqual(len(models), 1)
        self.assertEqual(models[0].id, "model")  # the test checkpoint's directory name
        self.assertEqual(self.client.models.retrieve(self.model).id, self.model)
        with self.assertRaises(openai.NotFoundError):
            self.client.models.retrieve("nope")

    # ------------------------------------------------------------------ chat
    def test_chat_plain(self):
        r = self.client.chat.completions.create(model=self.model, messages=MESSAGES, seed=2)
        self.assertEqual(r.object, "chat.completion")
        self.assertTrue(r.id.startswith("chatcmpl-"))
        c = r.choices[0]
        self.assertEqual(c.message.role, "assistant")
        self.assertEqual(c.message.content, SCRIPT_TEXTS[2])
        self.assertEqual(c.finish_reason, "stop")
        self.assertFalse(c.message.tool_calls)
        # Usage: the prompt as /tokenize renders it, the script plus its end token.
        status, tokenized = self.server.json("POST", "/tokenize", {"messages": MESSAGES})
        self.assertEqual(status, 200)
        self.assertEqual(r.usage.prompt_tokens, tokenized["count"])
        self.assertEqual(r.usage.completion_tokens, self.n_tokens(SCRIPT_TEXTS[2]) + 1)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)

    def test_chat_stream_with_usage_chunk(self):
        stream = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=2, stream=True,
            stream_options={"include_usage": True})
        chunks = list(stream)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, SCRIPT_TEXTS[2])
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        self.assertEqual(finishes[-1], "stop")
        self.assertTrue(all(f is None for f in finishes[:-1]))
        usage = chunks[-1]
        self.assertEqual(usage.choices, [])
        self.assertEqual(usage.usage.completion_tokens, self.n_tokens(SCRIPT_TEXTS[2]) + 1)
        self.assertTrue(all(c.usage is None for c in chunks[:-1]))
        self.assertEqual(len({c.id for c in chunks}), 1)

    def test_raw_sse_bytes(self):
        status, headers, body = self.server.request("POST", "/v1/chat/completions", {
            "messages": MESSAGES, "seed": 2, "stream": True})
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/event-stream"))
        self.assertEqual(headers.get("transfer-encoding"), "chunked")
        frames = harness.sse_frames(body)
        self.assertEqual(frames[-1], "[DONE]")
        for f in frames[:-1]:
            chunk = json.loads(f)
            self.assertEqual(chunk["object"], "chat.completion.chunk")
            self.assertNotIn("usage", chunk)  # only with stream_options.include_usage
        self.assertTrue(body.endswith(b"data: [DONE]\n\n"))

    def test_reasoning_whole_and_streamed(self):
        r = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=0, reasoning_effort="high",
            extra_body={"thinking": {"type": "enabled"}})
        m = r.choices[0].message
        reasoning, answer = SCRIPT_TEXTS[0].split("</think>")
        self.assertEqual(m.content, answer)
        self.assertEqual(m.model_extra["reasoning_content"], reasoning)
        self.assertEqual(m.model_extra["reasoning"], reasoning)
        self.assertEqual(r.usage.completion_tokens_details.reasoning_tokens, self.n_tokens(reasoning))

        chunks = list(self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=0, stream=True,
            extra_body={"chat_template_kwargs": {"thinking": True}}))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        streamed_reasoning = "".join(d.model_extra.get("reasoning_content") or "" for d in deltas)
        streamed_content = "".join(d.content or "" for d in deltas)
        self.assertEqual(streamed_reasoning, reasoning)
        self.assertEqual(streamed_content, answer)
        # Reasoning comes before the answer.
        first_content = next(i for i, d in enumerate(deltas) if d.content)
        last_reasoning = max(i for i, d in enumerate(deltas) if d.model_extra.get("reasoning_content"))
        self.assertLess(last_reasoning, first_content)

    def test_tool_call_whole_and_streamed(self):
        r = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[WEATHER_TOOL], seed=1, max_tokens=200)
        c = r.choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertEqual(c.message.content, "Let me check.")
        self.assertEqual(len(c.message.tool_calls), 1)
        call = c.message.tool_calls[0]
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(json.loads(call.function.arguments), {"city": "Paris", "days": 3})
        self.assertTrue(call.id)

        chunks = list(self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[WEATHER_TOOL], seed=1, max_tokens=200, stream=True))
        calls = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0].index, 0)
        self.assertEqual(calls[0].function.name, "get_weather")
        self.assertEqual(json.loads(calls[0].function.arguments), {"city": "Paris", "days": 3})
        self.assertEqual(chunks[-1].choices[0].finish_reason, "tool_calls")

    def test_logprobs(self):
        r = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=2, logprobs=True, top_logprobs=3)
        entries = r.choices[0].logprobs.content
        self.assertEqual(len(entries), r.usage.completion_tokens)
        for e in entries:
            self.assertLessEqual(e.logprob, 0.0)
            self.assertEqual(len(e.top_logprobs), 3)
            self.assertGreaterEqual(e.top_logprobs[0].logprob, e.top_logprobs[-1].logprob)
            self.assertEqual(bytes(e.bytes).decode("utf-8", "replace"), e.token)
        self.assertEqual("".join(e.token for e in entries[:-1]), SCRIPT_TEXTS[2])

    def test_n_choices(self):
        r = self.client.chat.completions.create(model=self.model, messages=MESSAGES, seed=1, n=2)
        self.assertEqual([c.index for c in r.choices], [0, 1])
        self.assertEqual(r.choices[1].message.content, SCRIPT_TEXTS[2])  # seed 1 + 1
        chunks = list(self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=2, n=2, max_tokens=5, stream=True))
        self.assertEqual({c.choices[0].index for c in chunks if c.choices}, {0, 1})

    def test_stop_strings(self):
        r = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=2, stop=["this"])
        self.assertEqual(r.choices[0].message.content, "Hello world, ")
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(r.choices[0].model_extra["stop_reason"], "this")
        r = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, seed=2, stop="this",
            extra_body={"include_stop_str_in_output": True})
        self.assertEqual(r.choices[0].message.content, "Hello world, this")

    def test_max_tokens_length(self):
        r = self.client.chat.completions.create(model=self.model, messages=MESSAGES, seed=2,
                                                max_completion_tokens=3)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 3)

    def test_model_argmax_text(self):
        # Not scripted: the real model's greedy output, twice the same.
        a = self.client.chat.completions.create(model=self.model, messages=MESSAGES, seed=99,
                                                max_tokens=8, temperature=0)
        b = self.client.chat.completions.create(model=self.model, messages=MESSAGES, seed=99,
                                                max_tokens=8, temperature=0)
        self.assertEqual(a.choices[0].message.content, b.choices[0].message.content)
        self.assertEqual(a.usage.completion_tokens, 8)

    # ------------------------------------------------------------------ completions
    def test_completions(self):
        r = self.client.completions.create(model=self.model, prompt="Once upon a time", seed=2)
        self.assertEqual(r.object, "text_completion")
        self.assertEqual(r.choices[0].text, SCRIPT_TEXTS[2])
        self.assertEqual(r.usage.prompt_tokens, self.n_tokens("Once upon a time"))

        chunks = list(self.client.completions.create(
            model=self.model, prompt="Once upon a time", seed=2, stream=True,
            stream_options={"include_usage": True}))
        self.assertEqual("".join(c.choices[0].text for c in chunks if c.choices), SCRIPT_TEXTS[2])
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.prompt_tokens, self.n_tokens("Once upon a time"))

    def test_completions_token_prompt_batch_echo_logprobs(self):
        ids = self.tok.encode("Once upon", add_special_tokens=False).ids
        r = self.client.completions.create(model=self.model, prompt=[ids, "Twice"], seed=2,
                                           max_tokens=4, echo=True)
        self.assertEqual(len(r.choices), 2)
        self.assertTrue(r.choices[0].text.startswith("Once upon"))
        self.assertTrue(r.choices[1].text.startswith("Twice"))
        r = self.client.completions.create(model=self.model, prompt="Hi", seed=2, max_tokens=4,
                                           logprobs=2)
        lp = r.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 4)
        self.assertEqual(len(lp.token_logprobs), 4)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        self.assertTrue(all(1 <= len(t) <= 2 for t in lp.top_logprobs))

    # ------------------------------------------------------------------ errors
    def test_error_objects(self):
        with self.assertRaises(openai.NotFoundError) as e:
            self.client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        self.assertEqual(e.exception.code, "model_not_found")
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model=self.model, messages=MESSAGES, n=1000000)
        self.assertEqual(e.exception.param, "n")
        self.assertEqual(e.exception.body["type"], "invalid_request_error")
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": "word " * 1200}])
        self.assertEqual(e.exception.code, "context_length_exceeded")
        self.assertRegex(e.exception.message, r"This model's maximum context length is 1024 tokens\. "
                                              r"However, your request has \d+ input tokens\.")
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model=self.model, messages=MESSAGES,
                                                max_tokens=1020)
        self.assertRegex(e.exception.message,
                         r"However, you requested \d+ tokens \(\d+ in the messages, 1020 in the "
                         r"completion\)")
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model=self.model, messages=MESSAGES,
                                                reasoning_effort="medium")
        self.assertIn("reasoning_effort", e.exception.message)

    # ------------------------------------------------------------------ small routes
    def test_tokenize_detokenize(self):
        text = "Tokenize me, please: 3.14 ☃"
        status, t = self.server.json("POST", "/tokenize", {"prompt": text})
        self.assertEqual(status, 200)
        self.assertEqual(t["tokens"], self.tok.encode(text, add_special_tokens=False).ids)
        self.assertEqual(t["count"], len(t["tokens"]))
        self.assertEqual(t["max_model_len"], 1024)
        status, d = self.server.json("POST", "/detokenize", {"tokens": t["tokens"]})
        self.assertEqual(status, 200)
        self.assertEqual(d["prompt"], text)
        status, err = self.server.json("POST", "/detokenize", {"tokens": [10 ** 9]})
        self.assertEqual(status, 400)
        self.assertIn("error", err)

    def test_metrics_text(self):
        self.client.chat.completions.create(model=self.model, messages=MESSAGES, seed=2)
        status, headers, body = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/plain"))
        metrics = harness.parse_prometheus(body.decode())
        names = {n for n, _ in metrics}
        for name in ["vllm:num_requests_running", "vllm:num_requests_waiting",
                     "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total",
                     "vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_bucket",
                     "vllm:inter_token_latency_seconds_count",
                     "vllm:e2e_request_latency_seconds_sum", "vllm:prefix_cache_queries_total",
                     "vllm:prefix_cache_hits_total", "vllm:num_preemptions_total",
                     "vllm:request_success_total", "tessera:kv_bytes_per_entry",
                     "tessera:http_requests_total"]:
            self.assertIn(name, names)
        for (name, labels), _ in metrics.items():
            self.assertEqual(dict(labels).get("model_name"), self.model, name)
        self.assertGreater(self.server.metric("vllm:request_success_total", finished_reason="stop"), 0)
        self.assertGreater(self.server.metric("vllm:generation_tokens_total"), 0)
        self.assertEqual(self.server.metric("tessera:kv_bytes_per_entry"), 64.0)  # bf16, tiny-a
        # vLLM's phase histograms: one observation per finished choice, the phases adding up.
        finished = self.server.metric("vllm:request_success_total")
        metrics = self.server.metrics()
        value = lambda n: sum(v for (name, _), v in metrics.items() if name == n)
        for phase in ["queue", "inference"]:
            self.assertEqual(value(f"vllm:request_{phase}_time_seconds_count"), finished, phase)
        self.assertGreater(value("vllm:request_prefill_time_seconds_count"), 0)
        self.assertAlmostEqual(
            value("vllm:request_queue_time_seconds_sum")
            + value("vllm:request_inference_time_seconds_sum"),
            value("vllm:e2e_request_latency_seconds_sum"), delta=1e-3 * finished + 1e-6)

    def test_grafana_dashboard_uses_exported_series(self):
        import os
        import re
        path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "grafana-dashboard.json")
        with open(path) as f:
            dashboard = json.load(f)
        exported = {n for n, _ in self.server.metrics()} | {
            line.split()[2] for line in self.server.request("GET", "/metrics")[2].decode().splitlines()
            if line.startswith("# TYPE ")}
        used = set()
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                used |= set(re.findall(r"(?:vllm|tessera):[a-z0-9_]+", target["expr"]))
        self.assertTrue(used)
        for name in used:
            self.assertIn(name, exported, f"the dashboard queries {name}, which /metrics lacks")


if __name__ == "__main__":
    unittest.main()
