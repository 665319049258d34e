"""A short load check for correctness (the 256-stream, 60 s run is bench/serve_load.py): 64
concurrent streaming clients (openai.AsyncOpenAI) for 10 s against the standard sampler. Every
stream must end properly (a finish reason, usage, no error); afterwards nothing is running, no
cache page is held and the server holds no more file descriptors than before. TTFT and
inter-token latency percentiles are printed, not asserted."""
import asyncio
import os
import statistics
import time
import unittest

import openai

import harness

CLIENTS = int(os.environ.get("TESSERA_E2E_LOAD_CLIENTS", "64"))
SECONDS = float(os.environ.get("TESSERA_E2E_LOAD_SECONDS", "10"))


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


async def client_loop(client, model, stop_at, stats):
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        last = None
        finish = None
        usage = None
        stream = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Write something."}],
            max_tokens=32, stream=True, stream_options={"include_usage": True})
        async for chunk in stream:
            now = time.monotonic()
            if chunk.choices and chunk.choices[0].delta.content:
                if last is None:
                    stats["ttft"].append(now - t0)
                else:
                    stats["itl"].append(now - last)
                last = now
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
            if chunk.usage is not None:
                usage = chunk.usage
        assert finish in ("stop", "length"), finish
        assert usage is not None and usage.completion_tokens >= 1
        stats["requests"] += 1
        stats["tokens"] += usage.completion_tokens


class LoadTest(unittest.TestCase):
    def test_concurrent_streams(self):
        server = harness.Server(max_context=512, scheduler={"max_running_sequences": 64}).start()
        try:
            fds_before = server.open_fds()
            stats = {"ttft": [], "itl": [], "requests": 0, "tokens": 0}

            async def main():
                async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x",
                                              max_retries=0, timeout=120) as c:
                    stop_at = time.monotonic() + SECONDS
                    await asyncio.gather(*[client_loop(c, "model", stop_at, stats)
                                           for _ in range(CLIENTS)])

            t0 = time.monotonic()
            asyncio.run(main())
            elapsed = time.monotonic() - t0
            print(f"\n{CLIENTS} clients, {elapsed:.1f} s: {stats['requests']} requests, "
                  f"{stats['tokens']} tokens ({stats['tokens'] / elapsed:.0f} tok/s); "
                  f"TTFT p50 {percentile(stats['ttft'], 50) * 1e3:.1f} ms "
                  f"p99 {percentile(stats['ttft'], 99) * 1e3:.1f} ms; "
                  f"ITL p50 {percentile(stats['itl'], 50) * 1e3:.2f} ms "
                  f"p99 {percentile(stats['itl'], 99) * 1e3:.2f} ms")
            self.assertGreaterEqual(stats["requests"], CLIENTS)
            server.wait_metric("vllm:num_requests_running", lambda v: v == 0)
            server.wait_metric("vllm:num_requests_waiting", lambda v: v == 0)
            server.wait_metric("vllm:kv_cache_usage_perc", lambda v: v == 0)
            self.assertEqual(server.metric("vllm:request_success_total", finished_reason="error"), 0)
            self.assertEqual(server.metric("vllm:request_success_total", finished_reason="abort"), 0)
            deadline = time.time() + 10
            while server.open_fds() > fds_before and time.time() < deadline:
                time.sleep(0.1)
            self.assertLessEqual(server.open_fds(), fds_before)
        finally:
            self.assertEqual(server.stop(), 0, server.log())


if __name__ == "__main__":
    unittest.main()
