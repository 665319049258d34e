"""A client that goes away aborts its request: the engine stops generating for it and its cache
pages come back (kv usage returns to its baseline; the prefix cache is off so nothing is kept),
for streaming and non-streaming requests, one or many at once; no file descriptor leaks."""
import json
import socket
import time
import unittest

import harness

LONG = {"messages": [{"role": "user", "content": "Tell me a long story."}],
        "max_tokens": 3500, "ignore_eos": True}


def open_request(server, body):
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    return s


def read_until(sock, marker, limit=1 << 20):
    got = b""
    while marker not in got and len(got) < limit:
        b = sock.recv(4096)
        if not b:
            break
        got += b
    return got


class DisconnectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(max_context=4096, scheduler={"prefix_cache": False}).start()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()

    def setUp(self):
        s = self.server
        s.wait_metric("vllm:num_requests_running", lambda v: v == 0)
        s.wait_metric("vllm:kv_cache_usage_perc", lambda v: v == 0)
        self.aborted = s.metric("vllm:request_success_total", finished_reason="abort")
        self.disconnects = s.metric("tessera:http_client_disconnects_total")
        self.generated = s.metric("vllm:generation_tokens_total")
        self.fds = s.open_fds()

    def assert_freed(self, n):
        s = self.server
        s.wait_metric("vllm:num_requests_running", lambda v: v == 0, timeout=10)
        s.wait_metric("vllm:kv_cache_usage_perc", lambda v: v == 0, timeout=10)
        s.wait_metric("vllm:request_success_total", lambda v: v == self.aborted + n,
                      finished_reason="abort")
        self.assertEqual(s.metric("tessera:http_client_disconnects_total"), self.disconnects + n)
        # Aborted early: far fewer tokens than asked for.
        self.assertLess(s.metric("vllm:generation_tokens_total") - self.generated, n * 3500 / 2)
        deadline = time.time() + 5
        while s.open_fds() > self.fds and time.time() < deadline:
            time.sleep(0.05)
        self.assertLessEqual(s.open_fds(), self.fds)
        self.assertEqual(s.request("GET", "/health")[0], 200)

    def test_streaming_client_disconnects(self):
        sock = open_request(self.server, dict(LONG, stream=True))
        got = read_until(sock, b"data: ")
        self.assertIn(b"200 OK", got)
        self.assertGreater(self.server.metric("vllm:kv_cache_usage_perc"), 0)  # pages in use
        sock.close()
        self.assert_freed(1)

    def test_non_streaming_client_disconnects(self):
        sock = open_request(self.server, LONG)
        self.server.wait_metric("vllm:num_requests_running", lambda v: v == 1)
        sock.close()
        self.assert_freed(1)

    def test_many_streams_disconnect_at_once(self):
        socks = [open_request(self.server, dict(LONG, stream=True)) for _ in range(16)]
        for s in socks:
            self.assertIn(b"data: ", read_until(s, b"data: "))
        for s in socks:
            s.close()
        self.assert_freed(16)


if __name__ == "__main__":
    unittest.main()
