#include "device_graphs.hpp"

#include "runtime_status.hpp"

namespace tessera::cuda_module {

ts_status capture_begin(int32_t ordinal, void* stream) {
  if (stream == nullptr) {
    return sdk::fail(TS_ERR_INVALID_ARGUMENT, "the null stream is not captured");
  }
  if (ts_status s = select_device(ordinal); s.code != TS_OK) {
    return s;
  }
  // Thread-local mode: other threads (other ranks' streams) may go on with unsafe calls meanwhile.
  return cuda_status(
      cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeThreadLocal),
      "cudaStreamBeginCapture");
}

ts_status capture_end(int32_t ordinal, void* stream, void** graph) {
  if (graph == nullptr) {
    return sdk::fail(TS_ERR_INVALID_ARGUMENT, "graph is null");
  }
  *graph = nullptr;
  if (ts_status s = select_device(ordinal); s.code != TS_OK) {
    return s;
  }
  cudaGraph_t captured = nullptr;
  if (ts_status s = cuda_status(cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &captured),
                                "cudaStreamEndCapture");
      s.code != TS_OK) {
    return s;
  }
  cudaGraphExec_t exec = nullptr;
  const ts_status s = cuda_status(cudaGraphInstantiate(&exec, captured, 0), "cudaGraphInstantiate");
  (void)cudaGraphDestroy(captured);  // the executable graph keeps what it needs
  *graph = exec;
  return s;
}

ts_status graph_launch(int32_t ordinal, void* graph, void* stream) {
  if (graph == nullptr) {
    return sdk::fail(TS_ERR_INVALID_ARGUMENT, "graph is null");
  }
  if (ts_status s = select_device(ordinal); s.code != TS_OK) {
    return s;
  }
  return cuda_status(
      cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), static_cast<cudaStream_t>(stream)),
      "cudaGraphLaunch");
}

ts_status graph_destroy(int32_t ordinal, void* graph) {
  if (graph == nullptr) {
    return sdk::ok();
  }
  if (ts_status s = select_device(ordinal); s.code != TS_OK) {
    return s;
  }
  return cuda_status(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)),
                     "cudaGraphExecDestroy");
}

}  // namespace tessera::cuda_module
