"""The bad-input table: each row is its own test. Every row must get the documented status with
an OpenAI error object (where an HTTP response is possible at all), and the server must stay
alive; at the end its memory must not have grown with the abuse (a 64 MB body is refused from
its headers, never buffered)."""
import json
import unittest

import harness

MESSAGES = [{"role": "user", "content": "hi"}]
CHAT = "/v1/chat/completions"


def chat(**extra):
    return json.dumps(dict({"messages": MESSAGES, "max_tokens": 2}, **extra))


def raw_request(path, body, extra_headers=b"", method=b"POST"):
    if isinstance(body, str):
        body = body.encode()
    return (method + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\n" + extra_headers +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def status_of(response_bytes):
    line = response_bytes.split(b"\r\n", 1)[0]
    parts = line.split()
    return int(parts[1]) if len(parts) >= 2 and parts[0].startswith(b"HTTP/") else None


def body_of(response_bytes):
    return response_bytes.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in response_bytes else b""


# name -> (how to send, expected status, expected error param or None, expected code or None)
# "how to send" is (path, body) for a normal request, or raw bytes for the socket.
ROWS = {
    "malformed_json": ((CHAT, '{"messages": ['), 400, None, None),
    "body_not_object": ((CHAT, "[1, 2, 3]"), 400, None, None),
    "empty_body": ((CHAT, ""), 400, None, None),
    "wrong_type_temperature": ((CHAT, chat(temperature="hot")), 400, "temperature", None),
    "wrong_type_messages": ((CHAT, json.dumps({"messages": "hi"})), 400, "messages", None),
    "wrong_type_max_tokens": ((CHAT, chat(max_tokens="ten")), 400, "max_tokens", None),
    "negative_max_tokens": ((CHAT, chat(max_tokens=-5)), 400, "max_tokens", None),
    "unknown_model": ((CHAT, chat(model="gpt-4o")), 404, "model", "model_not_found"),
    "n_million": ((CHAT, chat(n=10 ** 6)), 400, "n", None),
    "top_logprobs_1000": ((CHAT, chat(logprobs=True, top_logprobs=1000)), 400, "top_logprobs", None),
    "nan_temperature": ((CHAT, '{"messages": [{"role": "user", "content": "hi"}], '
                               '"temperature": NaN}'), 400, None, None),
    "infinity_top_p": ((CHAT, '{"messages": [{"role": "user", "content": "hi"}], '
                              '"top_p": Infinity}'), 400, None, None),
    "invalid_utf8": ((CHAT, b'{"messages": [{"role": "user", "content": "\xff\xfe\xc3"}]}'),
                     400, None, None),
    "image_part": ((CHAT, chat(messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}])),
        400, None, None),
    "empty_messages": ((CHAT, json.dumps({"messages": []})), 400, "messages", None),
    "unknown_role": ((CHAT, json.dumps({"messages": [{"role": "wizard", "content": "x"}]})),
                     400, None, None),
    "prompt_over_context": ((CHAT, chat(messages=[{"role": "user", "content": "word " * 400}])),
                            400, "messages", "context_length_exceeded"),
    "prompt_plus_max_tokens_over_context": ((CHAT, chat(max_tokens=256)), 400, "messages",
                                            "context_length_exceeded"),
    "deep_nesting": ((CHAT, '{"messages": ' + "[" * 5000 + "]" * 5000 + "}"), 400, None, None),
    "completion_ids_outside_vocab": (("/v1/completions", json.dumps({"prompt": [1, 10 ** 7]})),
                                     400, "prompt", None),
    "completion_empty_prompt": (("/v1/completions", json.dumps({"prompt": ""})), 400, "prompt",
                                None),
    "tokenize_without_prompt": (("/tokenize", "{}"), 400, "prompt", None),
    "detokenize_bad_ids": (("/detokenize", json.dumps({"tokens": ["a"]})), 400, "tokens", None),
    "unknown_route": (("/v1/embeddings", "{}"), 404, None, None),
    "wrong_method": (b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     405, None, None),
    "body_64_mib": (raw_request(CHAT, b" " * (64 << 20)), 413, None, "request_too_large"),
    "chunked_body_over_limit": (b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n" +
                                (b"100000\r\n" + b" " * 0x100000 + b"\r\n") * 3 + b"0\r\n\r\n",
                                413, None, "request_too_large"),
    "ten_thousand_headers": (b"GET /health HTTP/1.1\r\nHost: x\r\n" +
                             b"".join(b"X-H%d: v\r\n" % i for i in range(10000)) + b"\r\n",
                             431, None, None),
    "one_huge_header": (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 +
                        b"\r\n\r\n", 431, None, None),
    "garbage_request_line": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n",
                             400, None, None),
    "absolute_form_target": (b"GET http://evil/health HTTP/1.1\r\nHost: x\r\n\r\n", 400, None, None),
    "http11_without_host": (b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", 400, None, None),
    "transfer_encoding_gzip": (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n"
                               b"\r\n", 501, None, None),
    "transfer_encoding_gzip_chunked": (b"POST /tokenize HTTP/1.1\r\nHost: x\r\n"
                                       b"Transfer-Encoding: gzip, chunked\r\n\r\n"
                                       b"5\r\nhello\r\n0\r\n\r\n", 501, None, None),
    "content_encoding_gzip": (raw_request("/tokenize", b"\x1f\x8b\x08\x00garbage",
                                          b"Content-Encoding: gzip\r\n"), 415, None, None),
    "negative_chunk_size": (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                            b"\r\n-1\r\n\r\n", 400, None, None),
    "bad_content_length": (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                           400, None, None),
}


class BadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(frontend={"max_header_bytes": 16384}).start()
        # Warm up (first requests allocate pools, threads) before the memory baseline.
        for _ in range(3):
            cls.server.request("POST", CHAT, chat())
        cls.rss_before = cls.server.rss_kib()

    @classmethod
    def tearDownClass(cls):
        growth = cls.server.rss_kib() - cls.rss_before
        alive = cls.server.alive()
        code = cls.server.stop()
        assert alive, cls.server.log()
        assert growth < 32 * 1024, f"RSS grew by {growth} KiB over the bad-input table"
        assert code == 0, f"exit {code}\n{cls.server.log()}"

    def check_row(self, name):
        how, status, param, code = ROWS[name]
        if isinstance(how, bytes):
            response = self.server.raw(how, half_close=True)
            got_status, body = status_of(response), body_of(response)
        else:
            path, payload = how
            got_status, _, body = self.server.request("POST", path, payload,
                                                      {"Content-Type": "application/json"})
        self.assertEqual(got_status, status, body[:500])
        error = json.loads(body)["error"]
        self.assertTrue(error["message"])
        self.assertIn("type", error)
        if param is not None:
            self.assertEqual(error["param"], param)
        if code is not None:
            self.assertEqual(error["code"], code)
        # The server is alive and still serves real work.
        self.assertTrue(self.server.alive(), self.server.log())
        self.assertEqual(self.server.request("GET", "/health")[0], 200)
        self.assertEqual(self.server.request("POST", CHAT, chat())[0], 200)


for _name in ROWS:
    setattr(BadInputTest, f"test_{_name}", lambda self, n=_name: self.check_row(n))


class ProtocolEdgesTest(unittest.TestCase):
    """Not refusals: the shapes of HTTP that must simply work."""

    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server().start()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()

    def test_http10(self):
        r = self.server.raw(b"GET /health HTTP/1.0\r\n\r\n")
        self.assertEqual(status_of(r), 200)

    def test_pipelined_requests(self):
        one = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        last = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        r = self.server.raw(one + one + last)
        self.assertEqual(r.count(b"HTTP/1.1 200 OK"), 3, r)

    def test_head(self):
        status, headers, body = self.server.request("HEAD", "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(body, b"")
        self.assertGreater(int(headers["content-length"]), 0)

    def test_expect_100_continue(self):
        body = chat().encode()
        r = self.server.raw(b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                            b"Connection: close\r\nExpect: 100-continue\r\nContent-Length: " +
                            str(len(body)).encode() + b"\r\n\r\n" + body)
        self.assertTrue(r.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"), r[:200])


class ManyKeysTest(unittest.TestCase):
    """An object of 100,000 keys (1.2 MB) is refused naming the bound, on the only I/O thread,
    while /health still answers: the parse is linear and stops at the 1,025th key (a quadratic
    parse held the thread for ~7 s)."""

    def test_hundred_thousand_keys(self):
        import threading
        import time
        keys = "{" + ",".join(f'"k{i}":0' for i in range(100000)) + "}"
        body = '{"messages": [{"role": "user", "content": "hi"}], "metadata": ' + keys + "}"
        with harness.Server(frontend={"threads": 1}, limits={"max_body_bytes": 4 << 20}) as server:
            result = {}

            def big():
                start = time.monotonic()
                result["reply"] = server.request("POST", CHAT, body,
                                                 {"Content-Type": "application/json"})
                result["seconds"] = time.monotonic() - start

            sender = threading.Thread(target=big)
            sender.start()
            health_seconds = []
            while sender.is_alive():
                start = time.monotonic()
                self.assertEqual(server.request("GET", "/health", timeout=10)[0], 200)
                health_seconds.append(time.monotonic() - start)
            sender.join()
            status, _, reply = result["reply"]
            self.assertEqual(status, 400, reply[:300])
            self.assertIn("max_object_keys", json.loads(reply)["error"]["message"])
            # Generous: the send and the answer over loopback, not the parse (~0.3 ms).
            self.assertLess(result["seconds"], 2.0)
            self.assertLess(max(health_seconds, default=0), 1.0)
            self.assertEqual(server.request("POST", CHAT, chat())[0], 200)


class QueueLimitTest(unittest.TestCase):
    """[limits].max_queue: with one sequence running and one waiting, the next request is refused
    with 429, Retry-After and the OpenAI error object — and served again once there is room."""

    def test_queue_full_is_429(self):
        import socket
        # Long generations, so the queue stays full while the test looks (the tiny model writes
        # thousands of tokens a second).
        socks = []
        server = harness.Server(max_context=32768, limits={"max_queue": 1, "max_tokens": 32000},
                                scheduler={"max_running_sequences": 1}).start()
        try:
            long = json.dumps({"messages": MESSAGES, "max_tokens": 32000, "ignore_eos": True,
                               "stream": True}).encode()
            socks = []
            # One at a time: a second request sent before the first is admitted would itself
            # find the queue full.
            for metric in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
                s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          str(len(long)).encode() + b"\r\n\r\n" + long)
                socks.append(s)
                server.wait_metric(metric, lambda v: v == 1)
            status, headers, body = server.request("POST", CHAT, chat())
            self.assertEqual(status, 429, body)
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertEqual(json.loads(body)["error"]["type"], "rate_limit_error")
            for s in socks:
                s.close()
            socks = []
            server.wait_metric("vllm:num_requests_running", lambda v: v == 0)
            server.wait_metric("vllm:num_requests_waiting", lambda v: v == 0)
            self.assertEqual(server.request("POST", CHAT, chat())[0], 200)
        finally:
            for s in socks:
                s.close()
            self.assertEqual(server.stop(), 0, server.log())


if __name__ == "__main__":
    unittest.main()
