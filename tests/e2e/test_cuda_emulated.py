"""`tessera serve` and `tessera ab` with `[executor] device = "cuda"` on the SIMT emulator
(cuda_module = "emulated"): the device forward, the kv pages and the plugins' device code all run
the kernels a GPU runs.

- The e2e checkpoint with the reference attention and the bf16 cache: the official `openai`
  client gets the same greedy completions as from the CPU server, streamed and not, and the log
  names the emulated device.
- The seeds' swap on the shipped model (models/tiny-dsv4): one server whose four A/B arms are the
  attention x kv-cache pairs (reference | mma) x (bf16 | fp8), sharing one copy of the weights on
  the device, serves on every arm the greedy completion the CPU server with the reference
  attention and the same cache gives (the CPU has no mma).
- `tessera generate` with every pair on the emulator prints the CPU oracle's text, and only the
  text, on stdout.
- `tessera ab` between mma and reference over the fp8 cache on the emulator: teacher-forced
  top-1 agreement 100% and mean KL below 1e-5 (measured: ~8e-7, docs/cuda.md)."""
import json
import os
import subprocess
import tempfile
import unittest

import openai

import harness

PROMPTS = ["The capital of France is", "One, two, three,"]
PAIRS = [("reference", "bf16"), ("mma", "bf16"), ("reference", "fp8"), ("mma", "fp8")]


def greedy(server, prompt, stream=False, max_tokens=6):
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    model = client.models.list().data[0].id
    if not stream:
        r = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens,
                                      temperature=0)
        return r.choices[0].text, r.usage.completion_tokens
    text, n = "", 0
    for chunk in client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens,
                                           temperature=0, stream=True):
        if chunk.choices:
            text += chunk.choices[0].text
            n += 1
    return text, None


def stop_all(servers):
    for server in servers:
        code = server.stop()
        assert code == 0, f"exit {code}\n{server.log()}"


class CudaEmulatedServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu = harness.Server().start()
        cls.emulated = harness.Server(cuda_module="emulated").start(timeout=300)

    @classmethod
    def tearDownClass(cls):
        stop_all([cls.cpu, cls.emulated])

    def test_log_names_the_emulated_device(self):
        self.assertIn("Tessera SIMT emulator", self.emulated.log())

    def test_greedy_completions_equal_the_cpu_servers(self):
        for prompt in PROMPTS:
            want, n = greedy(self.cpu, prompt)
            got, m = greedy(self.emulated, prompt)
            self.assertEqual(n, 6)
            self.assertEqual(m, 6)
            self.assertEqual(got, want, prompt)

    def test_streamed_text_equals_the_whole_answer(self):
        whole, _ = greedy(self.emulated, PROMPTS[0])
        streamed, _ = greedy(self.emulated, PROMPTS[0], stream=True)
        self.assertEqual(streamed, whole)


class AttentionTimesKvServeTest(unittest.TestCase):
    """The shipped model served by every pair on the emulator against the CPU oracle: one server
    whose four A/B arms are the pairs, sharing one copy of the weights on the device."""

    @classmethod
    def setUpClass(cls):
        shipped = dict(model=harness.SHIPPED_MODEL, memory_gib=0.05)
        oracle = harness.ab_arm_tables([("reference", "bf16"), ("reference", "fp8")])
        cls.cpu = harness.Server(extra_toml=oracle, **shipped).start()
        cls.pairs = harness.Server(cuda_module="emulated", extra_toml=harness.ab_arm_tables(PAIRS),
                                   **shipped).start(timeout=300)

    @classmethod
    def tearDownClass(cls):
        stop_all([cls.cpu, cls.pairs])

    def test_every_pair_serves_the_cpu_oracles_greedy_text(self):
        for kv in ("bf16", "fp8"):
            want, n = harness.greedy_on_arm(self.cpu, f"reference-{kv}", PROMPTS[0], 4)
            self.assertEqual(n, 4)
            for attention in ("reference", "mma"):
                with self.subTest(attention=attention, kv=kv):
                    got = harness.greedy_on_arm(self.pairs, f"{attention}-{kv}", PROMPTS[0], 4)
                    self.assertEqual(got, (want, n))
        log = self.pairs.log()
        self.assertEqual(log.count("is shared (no second copy)"), len(PAIRS) - 1, log[-3000:])
        self.assertIn("attention mma", log)


class TensorParallelServeTest(unittest.TestCase):
    """`tensor_parallel = 2` on the emulated device: two ranks, each with its share of the shipped
    model's weights on the device, serve the CPU oracle's greedy text; the log gives the time to
    the first token after start-up."""

    def test_two_ranks_serve_the_cpu_oracles_greedy_text(self):
        shipped = dict(model=harness.SHIPPED_MODEL, memory_gib=0.05)
        cpu = harness.Server(**shipped).start()
        try:
            want = greedy(cpu, PROMPTS[0], max_tokens=4)
        finally:
            stop_all([cpu])
        tp = harness.Server(cuda_module="emulated", tensor_parallel=2, **shipped).start(timeout=300)
        try:
            self.assertEqual(greedy(tp, PROMPTS[0], max_tokens=4), want)
            self.assertIn("tensor_parallel = 2 ranks on", tp.log())
            self.assertIn("(rank 1 of 2)", tp.log())
            # start-up as a user sees it: loading both ranks' shares, then the first request
            self.assertRegex(tp.log(), r"engine: first token \d+\.\d\d s after the process started")
        finally:
            stop_all([tp])


class GenerateTest(unittest.TestCase):
    def test_generate_prints_the_cpu_oracles_text_with_every_pair(self):
        shipped = dict(model=harness.SHIPPED_MODEL, memory_gib=0.05)

        def generate(config):
            run = subprocess.run([harness.BIN, "generate", "-c", config, "-p", PROMPTS[1],
                                  "--max-tokens", "4", "--temperature", "0"],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr[-4000:])
            return run.stdout

        want = {kv: generate(harness.Server(kv_cache=kv, **shipped).config_path)
                for kv in ("bf16", "fp8")}
        for attention, kv in PAIRS:
            with self.subTest(attention=attention, kv=kv):
                self.assertTrue(want[kv].strip())
                config = harness.Server(cuda_module="emulated", attention=attention, kv_cache=kv,
                                        **shipped).config_path
                self.assertEqual(generate(config), want[kv])


class MmaAgainstReferenceAbTest(unittest.TestCase):
    def test_ab_of_the_attention_plugins_over_the_fp8_cache(self):
        work = tempfile.mkdtemp(prefix="ab-emulated-", dir=harness.WORK)
        configs = []
        for attention in ("reference", "mma"):
            server = harness.Server(cuda_module="emulated", attention=attention, kv_cache="fp8",
                                    model=harness.SHIPPED_MODEL, memory_gib=0.05)
            configs.append(server.config_path)
        prompts = os.path.join(work, "prompts.jsonl")
        with open(prompts, "w") as f:
            f.write(json.dumps({"prompt": PROMPTS[0]}) + "\n")
        out = os.path.join(work, "report")
        run = subprocess.run([harness.BIN, "ab", *configs, "--prompts", prompts, "--max-tokens",
                              "3", "--no-warmup", "--out", out],
                             capture_output=True, text=True, timeout=400)
        self.assertEqual(run.returncode, 0, run.stderr[-4000:])
        with open(os.path.join(out, "ab_report.json")) as f:
            report = json.load(f)
        forced = report["teacher_forced"]
        self.assertEqual(forced["top1_agreement"], 1.0)
        self.assertLess(forced["kl"]["mean"], 1e-5)
        self.assertIn("attention.plugin", run.stdout)


if __name__ == "__main__":
    unittest.main()
