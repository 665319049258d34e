"""API key and CORS: the key is required (compared in constant time) on every path except the
exact exempt ones; path tricks neither bypass it nor reach a route; CORS is off unless origins
are configured."""
import os
import unittest

import openai

import harness

KEY = "sk-test-0123456789"


def get(server, path, key=None, method="GET", headers=None):
    h = dict(headers or {})
    if key is not None:
        h["Authorization"] = f"Bearer {key}"
    raw = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
           "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n").encode()
    response = server.raw(raw, half_close=True)
    return int(response.split(b" ", 2)[1]), response


class ApiKeyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(frontend={"api_key_env": "TESSERA_TEST_KEY"},
                                    env={"TESSERA_TEST_KEY": KEY}).start()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()

    def test_openai_client_with_and_without_key(self):
        good = openai.OpenAI(base_url=self.server.base_url, api_key=KEY, max_retries=0)
        self.assertEqual(good.models.list().data[0].id, "model")
        r = good.chat.completions.create(model="model", max_tokens=2,
                                         messages=[{"role": "user", "content": "hi"}])
        self.assertEqual(r.choices[0].finish_reason, "length")
        for wrong in ["sk-test-012345678", "sk-test-0123456789x", "x", KEY.upper()]:
            bad = openai.OpenAI(base_url=self.server.base_url, api_key=wrong, max_retries=0)
            with self.assertRaises(openai.AuthenticationError) as e:
                bad.models.list()
            self.assertEqual(e.exception.status_code, 401)
            self.assertEqual(e.exception.code, "invalid_api_key")

    def test_exempt_paths(self):
        for path in ["/health", "/ready", "/metrics"]:
            self.assertEqual(get(self.server, path)[0], 200, path)

    def test_every_other_path_needs_the_key(self):
        for path in ["/v1/models", "/v1/models/model", "/tokenize", "/v1/unknown", "/"]:
            self.assertEqual(get(self.server, path)[0], 401, path)
            self.assertEqual(get(self.server, path, key="wrong")[0], 401, path)
        self.assertEqual(get(self.server, "/v1/models", key=KEY)[0], 200)
        self.assertEqual(get(self.server, "/v1/models", headers={"Authorization": KEY})[0], 401)
        self.assertEqual(get(self.server, "/v1/models",
                             headers={"Authorization": f"Basic {KEY}"})[0], 401)

    def test_path_tricks(self):
        for trick in ["//v1/models", "/v1//models", "/v1%2Fmodels", "/v1/models/",
                      "/health/../v1/models", "/./v1/models", "/metrics/../v1/models",
                      "/health%2F..%2Fv1%2Fmodels", "/HEALTH", "/health/", "/%68ealth"]:
            status, response = get(self.server, trick)
            self.assertEqual(status, 401, f"{trick}: {response[:200]}")
            status, response = get(self.server, trick, key=KEY)
            self.assertIn(status, (404, 400), f"{trick}: {response[:200]}")

    def test_cors_off_by_default(self):
        status, response = get(self.server, "/v1/models", key=KEY,
                               headers={"Origin": "https://evil.example"})
        self.assertEqual(status, 200)
        self.assertNotIn(b"access-control-allow-origin", response.lower())
        status, _ = get(self.server, "/v1/chat/completions", method="OPTIONS",
                        headers={"Origin": "https://evil.example",
                                 "Access-Control-Request-Method": "POST"})
        self.assertEqual(status, 401)


class CorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(frontend={"api_key": KEY,
                                              "cors_allowed_origins": ["https://app.example"]})
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.log()

    def test_preflight_and_header(self):
        status, response = get(self.server, "/v1/chat/completions", method="OPTIONS",
                               headers={"Origin": "https://app.example",
                                        "Access-Control-Request-Method": "POST"})
        self.assertEqual(status, 204)
        self.assertIn(b"access-control-allow-origin: https://app.example", response.lower())
        self.assertIn(b"access-control-allow-methods: post, options", response.lower())
        status, response = get(self.server, "/v1/models", key=KEY,
                               headers={"Origin": "https://app.example"})
        self.assertEqual(status, 200)
        self.assertIn(b"access-control-allow-origin: https://app.example", response.lower())
        status, response = get(self.server, "/v1/models", key=KEY,
                               headers={"Origin": "https://other.example"})
        self.assertNotIn(b"access-control-allow-origin", response.lower())


if __name__ == "__main__":
    unittest.main()
