// The ts_device a plugin call names (plugin_abi.h): the host for the CPU device, else the CUDA
// device's ordinal and the stream the call enqueues on.
#pragma once

#include "device/device.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::device {

inline constexpr ts_device kHostPluginDevice{TS_DEVICE_CPU, 0, nullptr};

inline ts_device plugin_device(const Device& device, const Stream& stream) {
  if (device.kind() == DeviceKind::kCpu) {
    return kHostPluginDevice;
  }
  return ts_device{TS_DEVICE_CUDA, device.ordinal(), stream.handle()};
}

}  // namespace tessera::device
