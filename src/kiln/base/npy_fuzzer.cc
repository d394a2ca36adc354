// libFuzzer target for the .npy/.npz readers: any bytes give a value or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/base/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto npz = kiln::ParseNpz(bytes);
  if (npz.ok()) {
    // Whatever was read must serialize and read back.
    auto again = kiln::ParseNpz(kiln::SerializeNpz(*npz));
    if (!again.ok() || again->size() != npz->size()) __builtin_trap();
  }
  auto npy = kiln::ParseNpy(bytes);
  if (npy.ok() && npy->data.size() != static_cast<size_t>(npy->num_elements()) * npy->dtype.itemsize)
    __builtin_trap();
  return 0;
}
