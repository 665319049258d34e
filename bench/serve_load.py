#!/usr/bin/env python3
"""Serving load benchmark: N concurrent streaming chat clients against a running `tessera serve`
for S seconds; prints throughput and p50 / p99 of time to first token (TTFT), inter-token latency
(ITL, between consecutive content chunks of one stream) and end-to-end latency, plus errors.

A lean asyncio HTTP/1.1 client (keep-alive, chunked SSE parsing) so the client costs little next
to the server on a small machine; the `openai` client is used by the tests, not here.

  build/tessera serve -c bench/serve_tiny.toml &
  python3 bench/serve_load.py --url http://127.0.0.1:8000 --clients 256 --seconds 60
"""
import argparse
import asyncio
import json
import statistics
import sys
import time
import urllib.parse
import urllib.request


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


class Stats:
    def __init__(self):
        self.ttft, self.itl, self.e2e = [], [], []
        self.requests = self.tokens = self.errors = 0
        self.error_samples = []


async def read_chunked(reader):
    """Yields the body bytes of a chunked response as they arrive."""
    while True:
        size_line = await reader.readline()
        if not size_line:
            raise ConnectionError("connection closed inside the body")
        size = int(size_line.split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readline()
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data


async def one_request(reader, writer, host, path, body, headers, stats):
    t0 = time.perf_counter()
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n{headers}\r\n".encode() + body)
    await writer.drain()
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    response_headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        response_headers[k.strip().lower()] = v.strip()
    if status != 200:
        n = int(response_headers.get("content-length", "0"))
        payload = await reader.readexactly(n)
        raise RuntimeError(f"HTTP {status}: {payload[:200]!r}")
    buffer = b""
    first = last = None
    tokens = 0
    finished = False
    async for data in read_chunked(reader):
        buffer += data
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            if not frame.startswith(b"data: "):
                raise RuntimeError(f"bad SSE frame {frame[:80]!r}")
            payload = frame[6:]
            if payload == b"[DONE]":
                finished = True
                continue
            chunk = json.loads(payload)
            if "error" in chunk:
                raise RuntimeError(f"in-band error {chunk['error']}")
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for choice in chunk.get("choices", []):
                if choice.get("delta", {}).get("content"):
                    now = time.perf_counter()
                    if first is None:
                        first = now
                        stats.ttft.append(now - t0)
                    else:
                        stats.itl.append(now - last)
                    last = now
    if not finished:
        raise RuntimeError("stream ended without [DONE]")
    stats.e2e.append(time.perf_counter() - t0)
    stats.requests += 1
    stats.tokens += tokens


async def client(url, body, headers, stop_at, stats):
    u = urllib.parse.urlparse(url)
    reader = writer = None
    while time.perf_counter() < stop_at:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(u.hostname, u.port or 80)
            await one_request(reader, writer, u.netloc, "/v1/chat/completions", body, headers,
                              stats)
        except Exception as e:  # counted, reported, and the connection is rebuilt
            stats.errors += 1
            if len(stats.error_samples) < 5:
                stats.error_samples.append(repr(e))
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.05)
    if writer is not None:
        writer.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--clients", type=int, default=256)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt", default="Tell me a story about the sea.")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--api-key", default="")
    args = p.parse_args()

    req = urllib.request.Request(args.url + "/v1/models")
    if args.api_key:
        req.add_header("Authorization", f"Bearer {args.api_key}")
    model = json.load(urllib.request.urlopen(req))["data"][0]["id"]
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": args.prompt}],
                       "max_tokens": args.max_tokens, "temperature": args.temperature,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    headers = f"Authorization: Bearer {args.api_key}\r\n" if args.api_key else ""
    stats = Stats()

    async def run():
        stop_at = time.perf_counter() + args.seconds
        await asyncio.gather(*[client(args.url, body, headers, stop_at, stats)
                               for _ in range(args.clients)])

    t0 = time.perf_counter()
    asyncio.run(run())
    elapsed = time.perf_counter() - t0
    ms = lambda v: f"{v * 1e3:.1f} ms"
    print(f"model {model}: {args.clients} streams, {elapsed:.1f} s, max_tokens {args.max_tokens}")
    print(f"  requests {stats.requests} ({stats.requests / elapsed:.1f}/s), output tokens "
          f"{stats.tokens} ({stats.tokens / elapsed:.0f} tok/s), errors {stats.errors}")
    print(f"  TTFT p50 {ms(percentile(stats.ttft, 50))}  p99 {ms(percentile(stats.ttft, 99))}")
    print(f"  ITL  p50 {ms(percentile(stats.itl, 50))}  p99 {ms(percentile(stats.itl, 99))}")
    print(f"  E2E  p50 {ms(percentile(stats.e2e, 50))}  p99 {ms(percentile(stats.e2e, 99))}")
    for e in stats.error_samples:
        print(f"  error: {e}")
    return 1 if stats.errors else 0


if __name__ == "__main__":
    sys.exit(main())
