"""The gRPC port against a hostile client (docs/grpc.md, "Security"): a real `tessera serve` with
the grpc frontend on loopback, driven by grpcio.

Checks: with `api_key`, every tessera.v1.Generation call needs `authorization: Bearer <key>`
metadata (UNAUTHENTICATED otherwise, wrong key included) while grpc.health.v1 and reflection
stay open;
server-made request ids are random 128-bit hex, not a counter; Abort reaches only requests of the
same connection (no key); the sampling fields follow the same table as HTTP (NaN and infinities,
top_k below -1 and overlong stop strings are INVALID_ARGUMENT naming the field).
"""
import threading
import unittest

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from test_grpc import GrpcServer, pb, pb_grpc

KEY = "grpc-secret-key"


class KeyedGrpcServer(GrpcServer):
    """GrpcServer whose grpc frontend requires KEY (the [[frontend]] table written last)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with open(self.config_path, "a") as f:
            f.write(f'api_key = "{KEY}"\n')


def run(call_iterator):
    return list(call_iterator)


class GrpcApiKeyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = KeyedGrpcServer(reflection=True, max_context=1024,
                                     limits={"max_tokens": 1000}).start()
        cls.stub = pb_grpc.GenerationStub(cls.server.channel)
        cls.good = (("authorization", f"Bearer {KEY}"),)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_generation_service_needs_the_key(self):
        request = pb.GenerateRequest(text="Hi", sampling_params=pb.SamplingParams(max_new_tokens=2))
        for metadata in [(), (("authorization", f"Bearer {KEY}x"),),
                         (("authorization", KEY),), (("authorization", "Bearer "),)]:
            with self.subTest(metadata=metadata):
                calls = [
                    lambda: run(self.stub.Generate(request, metadata=metadata, timeout=10)),
                    lambda: self.stub.GetModelInfo(pb.GetModelInfoRequest(), metadata=metadata,
                                                   timeout=10),
                    lambda: self.stub.GetTokenizer(pb.GetTokenizerRequest(text="x"),
                                                   metadata=metadata, timeout=10),
                    lambda: self.stub.Abort(pb.AbortRequest(request_id="x"), metadata=metadata,
                                            timeout=10),
                ]
                for call in calls:
                    with self.assertRaises(grpc.RpcError) as caught:
                        call()
                    self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        chunks = run(self.stub.Generate(request, metadata=self.good, timeout=60))
        self.assertTrue(chunks[-1].HasField("complete"), chunks[-1])
        self.assertTrue(self.stub.GetModelInfo(pb.GetModelInfoRequest(), metadata=self.good,
                                               timeout=10).model_id)

    def test_health_stays_open(self):
        health = health_pb2_grpc.HealthStub(self.server.channel)
        r = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        self.assertEqual(r.status, health_pb2.HealthCheckResponse.SERVING)

    def test_reflection_stays_open(self):
        stub = reflection_pb2_grpc.ServerReflectionStub(self.server.channel)
        replies = list(stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10))
        names = [s.name for s in replies[0].list_services_response.service]
        self.assertIn("tessera.v1.Generation", names)

    def test_server_made_ids_are_random(self):
        ids = set()
        for _ in range(3):
            chunks = run(self.stub.Generate(pb.GenerateRequest(
                text="Hi", sampling_params=pb.SamplingParams(max_new_tokens=1)),
                metadata=self.good, timeout=60))
            ids.add(chunks[-1].request_id)
        self.assertEqual(len(ids), 3, ids)
        for rid in ids:
            self.assertRegex(rid, r"^grpc-[0-9a-f]{32}$")


class GrpcAbortOwnerTest(unittest.TestCase):
    """No key: a connection is an owner. Another connection's Abort of a running id is a
    not-found, and the request runs on; its own connection can abort it."""

    def test_abort_reaches_only_the_same_connection(self):
        with GrpcServer(max_context=1024, limits={"max_tokens": 1000}) as server:
            owner = pb_grpc.GenerationStub(server.channel)
            # Its own subchannel pool: grpcio would otherwise share the owner's connection.
            other_channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}",
                                                  options=[("grpc.use_local_subchannel_pool", 1)])
            try:
                other = pb_grpc.GenerationStub(other_channel)
                call = owner.Generate(pb.GenerateRequest(
                    request_id="victim", text="Once upon a time", sampling_params=
                    pb.SamplingParams(temperature=1.0, seed=3, max_new_tokens=900,
                                      ignore_eos=True)), timeout=60)
                self.assertTrue(next(call).HasField("chunk"))
                stolen = other.Abort(pb.AbortRequest(request_id="victim"), timeout=10)
                self.assertFalse(stolen.success, stolen.message)
                own = owner.Abort(pb.AbortRequest(request_id="victim"), timeout=10)
                self.assertTrue(own.success, own.message)
                rest = list(call)
                self.assertEqual(rest[-1].complete.finish_reason, "abort")
            finally:
                other_channel.close()

    def test_same_id_on_two_connections_does_not_collide(self):
        with GrpcServer() as server:
            channels = [grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}",
                                              options=[("grpc.use_local_subchannel_pool", 1)])
                        for _ in range(2)]
            try:
                results = [None, None]

                def one(i):
                    stub = pb_grpc.GenerationStub(channels[i])
                    results[i] = run(stub.Generate(pb.GenerateRequest(
                        request_id="same", text="Hi",
                        sampling_params=pb.SamplingParams(max_new_tokens=4)), timeout=60))

                threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                for r in results:
                    self.assertTrue(r and r[-1].HasField("complete"), r)
            finally:
                for c in channels:
                    c.close()


class GrpcFieldTableTest(unittest.TestCase):
    """The sampling fields as HTTP checks them (tessera/sampling_fields.hpp)."""

    @classmethod
    def setUpClass(cls):
        cls.server = GrpcServer().start()
        cls.stub = pb_grpc.GenerationStub(cls.server.channel)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_non_finite_and_out_of_range_values_are_refused_by_name(self):
        nan, inf = float("nan"), float("inf")
        cases = {
            "temperature": dict(temperature=nan),
            "top_p": dict(top_p=inf),
            "min_p": dict(min_p=nan),
            "frequency_penalty": dict(frequency_penalty=-inf),
            "presence_penalty": dict(presence_penalty=nan),
            "repetition_penalty": dict(repetition_penalty=nan),
            "top_k": dict(top_k=-2),
            "stop": dict(stop=["x" * 1000]),
        }
        for field, params in cases.items():
            with self.subTest(field=field):
                with self.assertRaises(grpc.RpcError) as caught:
                    run(self.stub.Generate(pb.GenerateRequest(
                        text="Hi", sampling_params=pb.SamplingParams(max_new_tokens=2, **params)),
                        timeout=10))
                self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(field, caught.exception.details())
        self.assertTrue(self.server.alive())

    def test_top_k_minus_one_is_off(self):
        chunks = run(self.stub.Generate(pb.GenerateRequest(
            text="Hi", sampling_params=pb.SamplingParams(max_new_tokens=2, top_k=-1)), timeout=60))
        self.assertTrue(chunks[-1].HasField("complete"), chunks[-1])


if __name__ == "__main__":
    unittest.main()
