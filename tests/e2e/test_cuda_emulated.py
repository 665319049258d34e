"""`tessera serve` with `[executor] device = "cuda"` on the SIMT emulator (cuda_module =
"emulated"): the device forward, the kv pages and the plugins' device code all run the kernels a
GPU runs. The official `openai` client gets the same greedy completions from it as from the CPU
server, and the server's log names the emulated device."""
import unittest

import openai

import harness

PROMPTS = ["The capital of France is", "One, two, three,"]


def greedy(server, prompt, stream=False):
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    model = client.models.list().data[0].id
    if not stream:
        r = client.completions.create(model=model, prompt=prompt, max_tokens=6, temperature=0)
        return r.choices[0].text, r.usage.completion_tokens
    text, n = "", 0
    for chunk in client.completions.create(model=model, prompt=prompt, max_tokens=6,
                                           temperature=0, stream=True):
        if chunk.choices:
            text += chunk.choices[0].text
            n += 1
    return text, None


class CudaEmulatedServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu = harness.Server().start()
        cls.emulated = harness.Server(cuda_module="emulated").start(timeout=300)

    @classmethod
    def tearDownClass(cls):
        for server in (cls.cpu, cls.emulated):
            code = server.stop()
            assert code == 0, f"exit {code}\n{server.log()}"

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


if __name__ == "__main__":
    unittest.main()
