"""gRPC frontend end to end (docs/grpc.md): a real `tessera serve` with both the HTTP frontend
(readiness, /metrics) and the grpc frontend on loopback port 0, driven by a grpcio client whose
stubs are generated from frontends/grpc/tessera.proto at test time (grpc_tools.protoc, into the
build tree). Health and reflection use the official grpcio-health-checking / grpcio-reflection
clients.

Checks: streaming Generate (text and token-id prompts give the same greedy tokens; chunk texts
join to the detokenized ids; final chunk carries finish_reason and usage), a client cancel
aborts the engine request (abort counted, nothing left running, next request works, health still
SERVING), Abort by request_id, GetModelInfo and GetTokenizer against the HF tokenizers library,
argument errors, health SERVING, reflection listing the services when enabled and absent when not.
"""
import json
import os
import signal
import sys
import threading
import time
import unittest

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO_DIR = os.path.join(ROOT, "frontends", "grpc")


def load_stubs():
    from grpc_tools import protoc

    out = os.path.join(harness.WORK, "grpc_stubs")
    os.makedirs(out, exist_ok=True)
    rc = protoc.main(["grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={out}",
                      f"--grpc_python_out={out}", os.path.join(PROTO_DIR, "tessera.proto")])
    if rc != 0:
        raise RuntimeError(f"grpc_tools.protoc failed with {rc}")
    sys.path.insert(0, out)
    import tessera_pb2
    import tessera_pb2_grpc

    return tessera_pb2, tessera_pb2_grpc


pb, pb_grpc = load_stubs()


class GrpcServer(harness.Server):
    """harness.Server plus a second [[frontend]]: grpc on 127.0.0.1:0 (port read from a file)."""

    def __init__(self, reflection=False, **kw):
        super().__init__(**kw)
        self.grpc_port_file = os.path.join(self.dir, "grpc_port")
        with open(self.config_path, "a") as f:
            f.write("\n[[frontend]]\nplugin = \"grpc\"\nlisten = \"127.0.0.1:0\"\n"
                    f"port_file = {json.dumps(self.grpc_port_file)}\n"
                    f"reflection = {'true' if reflection else 'false'}\n")
        self.channel = None

    def start(self, timeout=120):
        super().start(timeout)  # HTTP /ready: the engine is up; frontends started before it
        with open(self.grpc_port_file) as f:
            self.grpc_port = int(f.read().strip())
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}")
        grpc.channel_ready_future(self.channel).result(timeout=10)
        # Health follows the engine by polling it every 50 ms (docs/grpc.md): wait for SERVING.
        self.wait_health(health_pb2.HealthCheckResponse.SERVING)
        return self

    def wait_health(self, status, timeout=5):
        stub = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.time() + timeout
        seen = []
        while time.time() < deadline:
            now = stub.Check(health_pb2.HealthCheckRequest(), timeout=10).status
            seen.append(now)
            if now == status:
                return
            time.sleep(0.01)
        raise AssertionError(f"gRPC health stayed {sorted(set(seen))}, wanted {status}")

    def stop(self, *a, **kw):
        if self.channel is not None:
            self.channel.close()
        return super().stop(*a, **kw)


def generate(stub, **kw):
    """Runs one Generate to the end: (token ids, joined text, final response)."""
    ids, text, last = [], "", None
    for r in stub.Generate(pb.GenerateRequest(**kw), timeout=60):
        if r.HasField("chunk"):
            ids += list(r.chunk.token_ids)
            text += r.chunk.text
        else:
            last = r
    return ids, text, last


class GrpcFrontendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = GrpcServer(reflection=True, max_context=1024,
                                limits={"max_tokens": 1000}).start()
        cls.stub = pb_grpc.GenerationStub(cls.server.channel)
        cls.tok = harness.tokenizer()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_health_serving(self):
        health = health_pb2_grpc.HealthStub(self.server.channel)
        r = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        self.assertEqual(r.status, health_pb2.HealthCheckResponse.SERVING)

    def test_streaming_generate_text_and_ids(self):
        prompt = "The quick brown fox"
        params = pb.SamplingParams(temperature=0.0, max_new_tokens=8, ignore_eos=True)
        ids, text, last = generate(self.stub, request_id="stream-1", text=prompt,
                                   sampling_params=params)
        self.assertIsNotNone(last, "no final chunk")
        self.assertTrue(last.HasField("complete"), last)
        self.assertEqual(last.request_id, "stream-1")
        self.assertIn(last.complete.finish_reason, ("length", "stop"))
        self.assertGreater(len(ids), 0)
        self.assertLessEqual(len(ids), 8)
        if last.complete.finish_reason == "length":
            self.assertEqual(len(ids), 8)
        prompt_ids = self.tok.encode(prompt, add_special_tokens=False).ids
        usage = last.complete.usage
        self.assertEqual(usage.completion_tokens, len(ids))
        self.assertGreaterEqual(usage.prompt_tokens, len(prompt_ids))  # BOS may be added
        self.assertEqual(text, self.tok.decode(ids, skip_special_tokens=True))
        # Same prompt as token ids (the ids the engine saw for the text, via GetTokenizer):
        # greedy decoding gives the same tokens.
        engine_ids = list(self.stub.GetTokenizer(pb.GetTokenizerRequest(text=prompt)).input_ids)
        ids2, text2, last2 = generate(
            self.stub, tokenized=pb.TokenizedInput(input_ids=engine_ids), sampling_params=params)
        self.assertEqual(ids2, ids)
        self.assertEqual(text2, text)
        self.assertTrue(last2.request_id.startswith("grpc-"), last2.request_id)

    def _running(self):
        return self.server.metric("vllm:num_requests_running")

    def test_client_cancel_aborts(self):
        aborts_before = self.server.metric("vllm:request_success_total", finished_reason="abort")
        call = self.stub.Generate(pb.GenerateRequest(
            text="Once upon a time", sampling_params=pb.SamplingParams(
                temperature=1.0, seed=7, max_new_tokens=900, ignore_eos=True)), timeout=60)
        first = next(call)
        self.assertTrue(first.HasField("chunk"))
        call.cancel()
        with self.assertRaises(grpc.RpcError) as caught:
            for _ in call:
                pass
        self.assertEqual(caught.exception.code(), grpc.StatusCode.CANCELLED)
        self.server.wait_metric("vllm:request_success_total", lambda v: v == aborts_before + 1,
                                finished_reason="abort")
        self.server.wait_metric("vllm:num_requests_running", lambda v: v == 0)
        self.assertTrue(self.server.alive())
        self.server.wait_health(health_pb2.HealthCheckResponse.SERVING)
        ids, _, last = generate(self.stub, text="Next", sampling_params=pb.SamplingParams(
            temperature=0.0, max_new_tokens=4, ignore_eos=True))
        self.assertTrue(last.HasField("complete"))
        self.assertGreater(len(ids), 0)

    def test_abort_by_request_id(self):
        call = self.stub.Generate(pb.GenerateRequest(
            request_id="to-abort", text="Once upon a time", sampling_params=pb.SamplingParams(
                temperature=1.0, seed=3, max_new_tokens=900, ignore_eos=True)), timeout=60)
        self.assertTrue(next(call).HasField("chunk"))
        r = self.stub.Abort(pb.AbortRequest(request_id="to-abort"), timeout=10)
        self.assertTrue(r.success, r.message)
        rest = list(call)
        self.assertTrue(rest and rest[-1].HasField("complete"), rest[-1:])
        self.assertEqual(rest[-1].complete.finish_reason, "abort")
        self.assertLess(rest[-1].complete.usage.completion_tokens, 900)
        gone = self.stub.Abort(pb.AbortRequest(request_id="to-abort"), timeout=10)
        self.assertFalse(gone.success)

    def test_model_info_and_tokenizer(self):
        info = self.stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=10)
        self.assertTrue(info.model_id)
        self.assertEqual(info.max_context, 1024)
        self.assertEqual(info.vocab_size, self.tok.get_vocab_size())
        self.assertEqual(json.loads(info.info_json)["id"], info.model_id)
        text = "Hello world, this is plain text."
        want = self.tok.encode(text, add_special_tokens=False).ids
        r = self.stub.GetTokenizer(pb.GetTokenizerRequest(text=text, ids=want), timeout=10)
        self.assertEqual(r.vocab_size, self.tok.get_vocab_size())
        self.assertEqual(list(r.input_ids)[-len(want):], want)
        self.assertEqual(r.decoded_text, text)

    def test_invalid_arguments(self):
        cases = [
            pb.GenerateRequest(),  # no input
            pb.GenerateRequest(tokenized=pb.TokenizedInput(input_ids=[10 ** 9])),
            pb.GenerateRequest(text="hi", sampling_params=pb.SamplingParams(temperature=-1)),
            pb.GenerateRequest(text="hi", sampling_params=pb.SamplingParams(max_new_tokens=5000)),
        ]
        for request in cases:
            with self.subTest(request=str(request)):
                with self.assertRaises(grpc.RpcError) as caught:
                    list(self.stub.Generate(request, timeout=10))
                self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(self.server.alive())

    def test_reflection_lists_services(self):
        stub = reflection_pb2_grpc.ServerReflectionStub(self.server.channel)
        responses = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
        names = {s.name for r in responses for s in r.list_services_response.service}
        self.assertIn("tessera.v1.Generation", names)
        self.assertIn("grpc.health.v1.Health", names)


class GrpcLiveAbTest(unittest.TestCase):
    """Live A/B over gRPC (docs/ab.md): the client's request_id is the assignment key (the same
    formula as HTTP, recomputed in Python by test_ab.expected_arm), the x-tessera-arm metadata pins
    an arm, and the serving arm comes back as initial metadata."""

    def test_request_id_assigns_and_metadata_pins(self):
        import test_ab

        with GrpcServer(extra_toml=test_ab.AB_TOML) as server:
            stub = pb_grpc.GenerationStub(server.channel)
            params = pb.SamplingParams(max_new_tokens=2)
            for i in range(20):
                rid = f"grpc-user-{i}"
                responses = stub.Generate(pb.GenerateRequest(request_id=rid, text="Hi",
                                                             sampling_params=params), timeout=60)
                chunks = list(responses)
                self.assertTrue(chunks[-1].HasField("complete"), chunks[-1])
                arm = dict(responses.initial_metadata()).get("x-tessera-arm")
                self.assertEqual(arm, test_ab.expected_arm(rid), rid)
            pinned = stub.Generate(pb.GenerateRequest(request_id="grpc-pinned", text="Hi",
                                                      sampling_params=params),
                                   metadata=(("x-tessera-arm", "fp8"),), timeout=60)
            list(pinned)
            self.assertEqual(dict(pinned.initial_metadata()).get("x-tessera-arm"), "fp8")
            with self.assertRaises(grpc.RpcError) as bad:
                list(stub.Generate(pb.GenerateRequest(text="Hi", sampling_params=params),
                                   metadata=(("x-tessera-arm", "nope"),), timeout=60))
            self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("unknown A/B arm", bad.exception.details())


class GrpcNoReflectionTest(unittest.TestCase):
    def test_reflection_off_by_default(self):
        with GrpcServer(reflection=False) as server:
            stub = reflection_pb2_grpc.ServerReflectionStub(server.channel)
            with self.assertRaises(grpc.RpcError) as caught:
                list(stub.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10))
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
            # Generation still served.
            info = pb_grpc.GenerationStub(server.channel).GetModelInfo(pb.GetModelInfoRequest())
            self.assertTrue(info.model_id)


class GrpcDrainTest(unittest.TestCase):
    def _stream_during_sigterm(self, drain_timeout):
        server = GrpcServer(max_context=1024, limits={"max_tokens": 1000},
                            args=["--drain-timeout", str(drain_timeout)]).start()
        try:
            stub = pb_grpc.GenerationStub(server.channel)
            call = stub.Generate(pb.GenerateRequest(text="Once upon a time", sampling_params=
                pb.SamplingParams(temperature=1.0, seed=5, max_new_tokens=900, ignore_eos=True)),
                timeout=60)
            self.assertTrue(next(call).HasField("chunk"))
            server.proc.send_signal(signal.SIGTERM)
            outcome = None
            try:
                rest = list(call)
                outcome = rest[-1].complete.finish_reason if rest else None
            except grpc.RpcError as e:
                outcome = e.code()
            self.assertEqual(server.wait(60), 0, server.log())
            return outcome
        finally:
            if server.alive():
                server.stop(signal.SIGKILL)

    def test_sigterm_lets_streams_finish(self):
        self.assertEqual(self._stream_during_sigterm(30), "length")

    def test_sigterm_deadline_cancels_streams(self):
        # Past the deadline grpc++'s Shutdown cancels the call (its handler aborts the engine
        # request) and closes the connection: the client sees UNAVAILABLE, not a finish.
        self.assertEqual(self._stream_during_sigterm(0.05), grpc.StatusCode.UNAVAILABLE)


if __name__ == "__main__":
    unittest.main()
