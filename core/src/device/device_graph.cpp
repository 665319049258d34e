// Graphs on a device without them (the CPU device runs its work at once: nothing to record).
#include <stdexcept>

#include "device/device.hpp"

namespace tessera::device {

Graph Device::capture(const Stream& /*stream*/, const std::function<void()>& /*record*/) {
  throw std::runtime_error(describe() +
                           ": no graphs on this device (it runs work as it is called); "
                           "capture needs a CUDA device");
}

void Device::launch(const Graph& /*graph*/, const Stream& /*stream*/) {
  throw std::runtime_error(describe() + ": no graphs on this device");
}

}  // namespace tessera::device
