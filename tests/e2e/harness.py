"""Starts `tessera serve` for the end-to-end tests: a TOML configuration written per server, the
HTTP frontend on 127.0.0.1 port 0 (the bound port comes back through `port_file`), readiness
polled on /ready, SIGTERM to stop. Also small helpers: raw HTTP, Prometheus text parsing,
process RSS and open file descriptors.

Environment (set by tests/e2e/CMakeLists.txt): TESSERA_BIN, TESSERA_E2E_MODEL,
TESSERA_E2E_PLUGINS, TESSERA_E2E_WORK.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

BIN = os.environ.get("TESSERA_BIN", "")
MODEL = os.environ.get("TESSERA_E2E_MODEL", "")
PLUGINS = os.environ.get("TESSERA_E2E_PLUGINS", "")
WORK = os.environ.get("TESSERA_E2E_WORK", tempfile.gettempdir())
# The shipped checkpoint (models/tiny-dsv4): shapes every attention plugin takes.
SHIPPED_MODEL = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "models",
                                              "tiny-dsv4"))

# Token texts the scripted sampler emits for a given seed (see scripts()).
SCRIPT_TEXTS = [
    # seed 0: a thinking-mode answer
    "Let me think about it.</think>The answer is 42.",
    # seed 1: a chat-mode answer with a DSML tool call
    'Let me check.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
    # seed 2: plain text
    "Hello world, this is plain text.",
]


def tokenizer():
    from tokenizers import Tokenizer  # the venv's HF tokenizers: an independent implementation

    return Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))


def script_ids():
    tok = tokenizer()
    return [tok.encode(t, add_special_tokens=False).ids for t in SCRIPT_TEXTS]


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(v)


def ab_arm_tables(pairs):
    """[ab] tables whose arms are (attention, kv cache) pairs, named "<attention>-<kv>"."""
    lines = ["[ab]", "arms = [" + ", ".join(f'"{a}-{kv}"' for a, kv in pairs) + "]"]
    for attention, kv in pairs:
        lines += [f"[ab.{attention}-{kv}.attention]", f'plugin = "{attention}"',
                  f"[ab.{attention}-{kv}.kv_cache]", f'plugin = "{kv}"']
    return "\n".join(lines)


def greedy_on_arm(server, arm, prompt, max_tokens):
    """A greedy completion from A/B arm `arm` (pinned by X-Tessera-Arm), with the official
    `openai` client: (text, completion tokens)."""
    import openai  # the e2e tests' dependency; the harness itself needs no client
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    r = client.completions.create(model=client.models.list().data[0].id, prompt=prompt,
                                  max_tokens=max_tokens, temperature=0,
                                  extra_headers={"X-Tessera-Arm": arm})
    return r.choices[0].text, r.usage.completion_tokens


class Server:
    """One `tessera serve` process. Use as a context manager or call start()/stop()."""

    def __init__(self, sampler="standard", frontend=None, limits=None, scheduler=None,
                 max_context=256, defaults=None, args=(), env=None, scripted=False,
                 extra_toml="", cuda_module=None, model=None, kv_cache="bf16",
                 attention="reference", memory_gib=0.02, tensor_parallel=1, executor=None):
        self.dir = tempfile.mkdtemp(prefix="server-", dir=self._work())
        self.port_file = os.path.join(self.dir, "port")
        self.log_path = os.path.join(self.dir, "serve.log")
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        front = {"plugin": "http", "listen": "127.0.0.1:0", "port_file": self.port_file}
        front.update(frontend or {})
        lim = {"max_n": 4, "max_logprobs": 5, "max_body_bytes": 1 << 20, "max_queue": 1024}
        lim.update(limits or {})
        sched = {"max_running_sequences": 64, "max_batched_tokens": 1024,
                 "chunked_prefill_size": 256, "prefix_cache": False}
        sched.update(scheduler or {})
        dflt = {"temperature": 1.0, "max_tokens": 16}
        dflt.update(defaults or {})
        lines = [
            "[model]", f"path = {toml_value(model or MODEL)}", f"max_context = {max_context}", "",
            "[executor]"] + (
                ['device = "cuda"', f"cuda_module = {toml_value(cuda_module)}"] if cuda_module
                else ['device = "cpu"']) + ["threads = 1",
                                            f"tensor_parallel = {tensor_parallel}"] + [
                f"{k} = {toml_value(v)}" for k, v in (executor or {}).items()] + ["",
            "[kv_cache]", f"plugin = {toml_value(kv_cache)}", "page_size = 16",
            f"memory_gib = {toml_value(memory_gib)}", "",
            "[attention]", f"plugin = {toml_value(attention)}", "",
            "[sampler]", f"plugin = {toml_value('scripted' if scripted else sampler)}", "",
            "[sampler.defaults]"] + [f"{k} = {toml_value(v)}" for k, v in dflt.items()] + [""]
        if scripted:
            lines += ["[sampler.options]", f"scripts = {toml_value(script_ids())}", ""]
        lines += ["[[frontend]]"] + [f"{k} = {toml_value(v)}" for k, v in front.items()] + [""]
        lines += ["[scheduler]"] + [f"{k} = {toml_value(v)}" for k, v in sched.items()] + [""]
        lines += ["[limits]"] + [f"{k} = {toml_value(v)}" for k, v in lim.items()] + [""]
        lines += ["[plugins]", f"search_path = {toml_value([PLUGINS])}", "",
                  "[log]", 'level = "info"', ""]
        lines += [extra_toml]  # more tables (e.g. [ab] and its arms), appended as written
        self.config_path = os.path.join(self.dir, "config.toml")
        with open(self.config_path, "w") as f:
            f.write("\n".join(lines))
        self.proc = None
        self.port = None

    @staticmethod
    def _work():
        os.makedirs(WORK, exist_ok=True)
        return WORK

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout=120):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BIN, "serve", "-c", self.config_path] + self.args,
                                     stdout=self._log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tessera serve exited with {self.proc.returncode}:\n{self.log()}")
            if self.port is None and os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
            if self.port is not None:
                try:
                    status, _, _ = self.request("GET", "/ready")
                    if status == 200:
                        return self
                except OSError:
                    pass
            time.sleep(0.05)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"server not ready after {timeout} s:\n{self.log()}")

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc is None or self.proc.poll() is not None:
            self.check_sanitizer()
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"server did not exit {timeout} s after signal {sig}:\n{self.log()}")
        finally:
            self._log.close()
        self.check_sanitizer()
        return code

    def wait(self, timeout=60):
        """Exit status of a process already told to stop (e.g. a signal sent by the test)."""
        try:
            code = self.proc.wait(timeout)
        finally:
            self._log.close()
        self.check_sanitizer()
        return code

    SANITIZER_REPORTS = ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer",
                         "ERROR: LeakSanitizer")

    def check_sanitizer(self):
        """Fails the test when a sanitizer build (tools/sanitizer-tests.sh) reported in the log."""
        text = self.log()
        found = [at for at in (text.find(r) for r in self.SANITIZER_REPORTS) if at >= 0]
        if found:
            at = min(found)
            raise AssertionError(f"sanitizer report in {self.log_path}:\n{text[at:at + 6000]}")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    # ------------------------------------------------------------------ access
    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self):
        return self.url + "/v1"

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict (lower-case names), body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None):
        status, _, data = self.request(method, path, body, headers)
        return status, json.loads(data)

    def raw(self, data, read_timeout=10, half_close=False):
        """Sends raw bytes on a fresh connection; returns everything read until close/timeout.
        half_close: shut the sending side after the data (the server may then stop lingering on
        a refused body at once; a generation request would count as abandoned)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=read_timeout)
        try:
            try:
                s.sendall(data)
                if half_close:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            chunks = []
            while True:
                try:
                    b = s.recv(65536)
                except (socket.timeout, ConnectionResetError):
                    break
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks)
        finally:
            s.close()

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200, status
        return parse_prometheus(data.decode())

    def metric(self, name, **labels):
        total = 0.0
        for (n, lab), v in self.metrics().items():
            if n == name and all(dict(lab).get(k) == str(val) for k, val in labels.items()):
                total += v
        return total

    def wait_metric(self, name, predicate, timeout=10, **labels):
        deadline = time.time() + timeout
        value = None
        while time.time() < deadline:
            value = self.metric(name, **labels)
            if predicate(value):
                return value
            time.sleep(0.05)
        raise AssertionError(f"{name}{labels} stayed at {value}")

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text):
    """{(name, ((label, value), ...)): float}; raises ValueError on a line that is not valid."""
    out = {}
    typed = set()
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError(f"not a Prometheus sample: {line!r}")
        name = m.group(1)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in typed and base not in typed:
            raise ValueError(f"sample before its # TYPE line: {line!r}")
        labels = tuple(sorted(_LABEL.findall(m.group(3) or "")))
        out[(name, labels)] = float(m.group(4))
    return out


def sse_frames(raw_body):
    """The payloads of 'data: ...' frames of a complete SSE body (chunked encoding removed)."""
    frames = []
    for block in raw_body.decode().split("\n\n"):
        if not block:
            continue
        assert block.startswith("data: "), repr(block)
        frames.append(block[len("data: "):])
    return frames
