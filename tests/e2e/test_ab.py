"""Live A/B (docs/ab.md) through the official `openai` client: one `tessera serve` with two arms
sharing the weights — the bf16 and the fp8 latent cache — and 200 chat requests from 200 users.
Checks that each user lands on the arm the published assignment rule gives (FNV-1a 64 + the
SplitMix64 finaliser, recomputed here in Python), that a user stays on its arm, that the
X-Tessera-Arm header pins an arm (and an unknown one is a 400 error object), that every
request-level series of /metrics carries the arm label with per-arm counts that add up, and that
/v1/ab/report counts the same split."""
import collections
import concurrent.futures
import json
import unittest

import openai

import harness

ARMS = ["bf16", "fp8"]
WEIGHTS = [1.0, 1.0]
AB_TOML = """
[ab]
arms = ["bf16", "fp8"]
[ab.fp8.kv_cache]
plugin = "fp8"
"""
MESSAGES = [{"role": "user", "content": "Say something."}]
N_USERS = 200
MASK = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & MASK
    return h


def mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def expected_arm(key: str) -> str:
    u = (mix64(fnv1a64(key.encode())) >> 11) * 2.0 ** -53
    total, running = sum(WEIGHTS), 0.0
    for name, w in zip(ARMS, WEIGHTS):
        running += w
        if u < running / total:
            return name
    return ARMS[-1]


class LiveAbTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = harness.Server(extra_toml=AB_TOML, defaults={"max_tokens": 4}).start()
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused", max_retries=0)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, f"exit {code}\n{cls.server.log()}"

    def chat(self, user=None, headers=None):
        """(arm from the response header, the parsed completion)."""
        kwargs = {"model": self.model, "messages": MESSAGES, "max_tokens": 4}
        if user is not None:
            kwargs["user"] = user
        if headers:
            kwargs["extra_headers"] = headers
        raw = self.client.chat.completions.with_raw_response.create(**kwargs)
        return raw.headers.get("x-tessera-arm"), raw.parse()

    def test_ab(self):
        users = [f"user-{i}" for i in range(N_USERS)]
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda u: self.chat(user=u), users))
        got = {u: arm for u, (arm, _) in zip(users, results)}
        want = {u: expected_arm(u) for u in users}
        self.assertEqual(got, want, "arms differ from the FNV-1a + SplitMix64 assignment")
        for _, completion in results:
            self.assertEqual(completion.object, "chat.completion")
            self.assertGreater(completion.usage.completion_tokens, 0)
        split = collections.Counter(want.values())
        # A fair split of 200 users: each arm within 4 binomial standard deviations (~28) of 100.
        for arm in ARMS:
            self.assertLess(abs(split[arm] - N_USERS / 2), 4 * (N_USERS * 0.25) ** 0.5, split)

        # A user stays on its arm; streaming carries the header too.
        for u in users[:10]:
            self.assertEqual(self.chat(user=u)[0], want[u])
        stream = self.client.chat.completions.with_raw_response.create(
            model=self.model, messages=MESSAGES, max_tokens=4, user=users[0], stream=True)
        self.assertEqual(stream.headers.get("x-tessera-arm"), want[users[0]])
        self.assertTrue(any(chunk.choices for chunk in stream.parse()))
        # X-Request-Id is the key when there is no user.
        arm, _ = self.chat(headers={"X-Request-Id": "user-7"})
        self.assertEqual(arm, want["user-7"])
        # The header pins an arm whatever the user; an unknown arm is a 400 error object.
        other = {"bf16": "fp8", "fp8": "bf16"}
        pinned = [u for u in users[:5]]
        for u in pinned:
            self.assertEqual(self.chat(user=u, headers={"X-Tessera-Arm": other[want[u]]})[0],
                             other[want[u]])
        with self.assertRaises(openai.BadRequestError) as bad:
            self.chat(user="x", headers={"X-Tessera-Arm": "nope"})
        self.assertIn("unknown A/B arm", str(bad.exception))

        # What each arm served, counted here.
        served = collections.Counter(want.values())
        for u in users[:10]:
            served[want[u]] += 1
        served[want[users[0]]] += 1  # the stream
        served[want["user-7"]] += 1  # X-Request-Id
        for u in pinned:
            served[other[want[u]]] += 1

        # /metrics: every request-level series has both arms, and the counts add up per arm.
        metrics = self.server.metrics()
        for arm in ARMS:
            finished = sum(v for (n, lab), v in metrics.items()
                           if n == "vllm:request_success_total" and dict(lab).get("arm") == arm)
            self.assertEqual(finished, served[arm], arm)
            self.assertEqual(self.server.metric("tessera_ab_requests_total", arm=arm), served[arm])
            self.assertEqual(
                self.server.metric("vllm:e2e_request_latency_seconds_count", arm=arm), served[arm])
            self.assertGreater(self.server.metric("vllm:generation_tokens_total", arm=arm), 0)
        # The unknown-arm request was refused before any arm: counted in the first arm's refusals.
        self.assertEqual(self.server.metric("tessera:requests_refused_total", arm="bf16"), 1)
        for (name, labels), _ in metrics.items():
            if name.startswith("vllm:") or name.startswith("tessera_ab_"):
                self.assertIn(dict(labels).get("arm"), ARMS, f"{name}{dict(labels)}")
        # The two arms really run different caches (fp8: 584 bytes an entry in DSV4's layout).
        bpe = {arm: self.server.metric("tessera:kv_bytes_per_entry", arm=arm) for arm in ARMS}
        self.assertLess(bpe["fp8"], bpe["bf16"], bpe)

        # /v1/ab/report: the same split, with latency and finish reasons per arm.
        status, report = self.server.json("GET", "/v1/ab/report")
        self.assertEqual(status, 200)
        self.assertEqual(report["requests"], sum(served.values()))
        for arm in ARMS:
            a = report["arms"][arm]
            self.assertEqual(a["requests"], served[arm], json.dumps(a))
            self.assertEqual(sum(a["finish_reasons"].values()), served[arm])
            self.assertEqual(a["latency_s"]["count"], served[arm])
            self.assertGreater(a["output_tokens"], 0)


class NoAbTest(unittest.TestCase):
    def test_report_is_404_without_ab(self):
        with harness.Server() as server:
            status, body = server.json("GET", "/v1/ab/report")
            self.assertEqual(status, 404)
            self.assertIn("no live A/B", body["error"]["message"])
            arms = {dict(lab).get("arm") for (n, lab), _ in server.metrics().items()}
            self.assertEqual(arms, {None})


if __name__ == "__main__":
    unittest.main()
