#include "kiln/python/cuda_sync.h"

#include <dlfcn.h>

#include <mutex>

namespace kiln::python {
namespace {

// The few driver entry points, with the driver's ABI (CUresult is an int, handles pointers).
using CuResult = int;
using CuDevice = int;
using CuContext = void*;
using CuStream = void*;
const CuStream kLegacyStream = reinterpret_cast<CuStream>(0x1);  // CU_STREAM_LEGACY

struct Driver {
  CuResult (*cuInit)(unsigned) = nullptr;
  CuResult (*cuDeviceGet)(CuDevice*, int) = nullptr;
  CuResult (*cuDevicePrimaryCtxRetain)(CuContext*, CuDevice) = nullptr;
  CuResult (*cuDevicePrimaryCtxRelease)(CuDevice) = nullptr;
  CuResult (*cuCtxPushCurrent)(CuContext) = nullptr;
  CuResult (*cuCtxPopCurrent)(CuContext*) = nullptr;
  CuResult (*cuStreamSynchronize)(CuStream) = nullptr;
  Status status;
};

template <typename F>
bool Load(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const Driver& GetDriver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) {
      d.status = Unavailable("cannot load libcuda.so.1 to wait for the producer's stream: ", dlerror());
      return;
    }
    bool ok = Load(lib, "cuInit", d.cuInit) && Load(lib, "cuDeviceGet", d.cuDeviceGet) &&
              Load(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain) &&
              Load(lib, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease) &&
              Load(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent) && Load(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent) &&
              Load(lib, "cuStreamSynchronize", d.cuStreamSynchronize);
    if (!ok) d.status = Unavailable("libcuda.so.1 lacks a driver entry point kiln needs");
    else if (CuResult r = d.cuInit(0); r != 0) d.status = Unavailable("cuInit failed (CUresult ", r, ")");
  });
  return d;
}

}  // namespace

Status WaitForLegacyStream(int ordinal) {
  const Driver& d = GetDriver();
  KILN_RETURN_IF_ERROR(d.status);
  CuDevice dev = 0;
  if (CuResult r = d.cuDeviceGet(&dev, ordinal); r != 0) return InvalidArgument("cuDeviceGet(", ordinal, ") failed (CUresult ", r, ")");
  CuContext ctx = nullptr;
  if (CuResult r = d.cuDevicePrimaryCtxRetain(&ctx, dev); r != 0)
    return Internal("cuDevicePrimaryCtxRetain failed (CUresult ", r, ")");
  CuResult r = d.cuCtxPushCurrent(ctx);
  if (r == 0) {
    r = d.cuStreamSynchronize(kLegacyStream);
    CuContext popped = nullptr;
    (void)d.cuCtxPopCurrent(&popped);
  }
  (void)d.cuDevicePrimaryCtxRelease(dev);
  if (r != 0) return Internal("waiting for the legacy default stream of cuda:", ordinal, " failed (CUresult ", r, ")");
  return OkStatus();
}

}  // namespace kiln::python
