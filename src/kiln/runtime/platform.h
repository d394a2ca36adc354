// Platform: one driver (host, cuda, rocm...) and the devices it reaches.
//
// Platforms are created through a PlatformRegistry (platform_registry.h) by explicit
// registration calls; creating one loads its vendor libraries and enumerates devices, and fails
// with a status that says why the platform is unavailable ("cuda: no driver (libcuda.so.1 not
// found)", "cuda: 0 devices"). A created Platform owns its Devices; it must outlive every
// object created from them.
#pragma once

#include <string>
#include <string_view>

#include "kiln/base/status.h"
#include "kiln/runtime/device.h"

namespace kiln::runtime {

class Platform {
 public:
  virtual ~Platform() = default;
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  virtual std::string_view name() const = 0;
  // Driver and library versions, one line ("driver 13.0, toolkit headers 13.0").
  virtual std::string version() const = 0;
  virtual int device_count() const = 0;
  // The device at `ordinal` (0 <= ordinal < device_count()), created on first use; the
  // platform owns it. OutOfRange for a bad ordinal; the driver's error if opening it fails.
  virtual StatusOr<Device*> GetDevice(int ordinal) = 0;

 protected:
  Platform() = default;
};

}  // namespace kiln::runtime
