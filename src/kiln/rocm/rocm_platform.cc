// ROCm platform and device creation, device description, module loading.
#include "kiln/rocm/rocm_platform.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/rocm/hip_api.h"
#include "kiln/rocm/rocm_device.h"
#include "kiln/rocm/vendor_apis.h"

namespace kiln::rocm {

runtime::DeviceDescription RocmTargetDescription(const codegen::DeviceSpec& spec) {
  runtime::DeviceDescription d;
  d.platform = "rocm";
  d.vendor = "AMD";
  d.name = StrCat(spec.name, " (preset)");
  d.gpu_arch = spec.gfx_arch;
  d.multiprocessor_count = spec.sm_count;
  d.warp_size = spec.warp_size;
  d.max_threads_per_block = spec.max_threads_per_block;
  d.max_threads_per_multiprocessor = spec.max_threads_per_sm;
  d.shared_memory_per_block = static_cast<uint64_t>(spec.shared_memory_per_block);
  d.shared_memory_per_block_optin = static_cast<uint64_t>(spec.shared_memory_per_block_optin);
  d.shared_memory_per_multiprocessor = static_cast<uint64_t>(spec.shared_memory_per_sm);
  d.registers_per_block = spec.registers_per_block;
  d.registers_per_multiprocessor = spec.registers_per_sm;
  d.l2_cache_bytes = static_cast<uint64_t>(spec.l2_cache_bytes);
  d.memory_bandwidth_bytes_per_s = spec.memory_bandwidth_bytes_per_s;
  if (StatusOr<std::shared_ptr<const HipApi>> hip = HipApi::Default(); hip.ok()) {
    d.runtime_version = (*hip)->RuntimeVersion();
    int driver = 0;
    if ((*hip)->hipDriverGetVersion != nullptr && (*hip)->hipDriverGetVersion(&driver) == hipSuccess)
      d.driver_version = HipVersionString(driver);
  }
  d.library_versions = RocmLibraryVersions();
  return d;
}

using runtime::Device;
using runtime::DeviceDescription;
using runtime::Platform;

std::string GfxArchWithoutFeatures(std::string_view gcn_arch_name) {
  return std::string(gcn_arch_name.substr(0, gcn_arch_name.find(':')));
}

StatusOr<std::unique_ptr<RocmDevice>> RocmDevice::Create(const HipApi& api, int ordinal) {
  if (std::vector<std::string> missing = api.MissingHip6Functions(); !missing.empty()) {
    return FailedPrecondition("rocm: the HIP runtime ", api.RuntimeVersion(), " (", api.library.path(),
                              ") is older than the HIP ", HipHeaderVersion(),
                              " headers kiln was built with: it lacks ", StrJoin(missing, ", "),
                              " (install ROCm >= 6.0)");
  }
  std::unique_ptr<RocmDevice> device(new RocmDevice(api, ordinal));
  KILN_RETURN_IF_ERROR(device->Activate());
  KILN_RETURN_IF_ERROR(device->Describe());
  KILN_RETURN_IF_ERROR(KILN_HIP(
      api, hipDeviceGetStreamPriorityRange(&device->least_priority_, &device->greatest_priority_)));
  device->device_allocator_ = std::make_unique<RocmRawAllocator>(
      *device, runtime::MemoryKind::kDevice, StrCat("rocm:", ordinal, ":device"));
  device->pinned_allocator_ = std::make_unique<RocmRawAllocator>(
      *device, runtime::MemoryKind::kPinnedHost, StrCat("rocm:", ordinal, ":pinned"));
  return device;
}

RocmDevice::~RocmDevice() {
  device_allocator_.reset();
  pinned_allocator_.reset();
}

Status RocmDevice::Activate() const {
  int current = -1;
  if (api_.hipGetDevice(&current) == hipSuccess && current == ordinal_) return OkStatus();
  return KILN_HIP(api_, hipSetDevice(ordinal_));
}

Status RocmDevice::Describe() {
  hipDeviceProp_t p;
  std::memset(&p, 0, sizeof(p));
  KILN_RETURN_IF_ERROR(KILN_HIP(api_, hipGetDeviceProperties(&p, ordinal_)));
  DeviceDescription& d = description_;
  d.platform = "rocm";
  d.ordinal = ordinal_;
  d.vendor = "AMD";
  d.name = p.name;
  gfx_arch_ = GfxArchWithoutFeatures(p.gcnArchName);
  d.gpu_arch = gfx_arch_;
  d.multiprocessor_count = p.multiProcessorCount;
  d.core_clock_khz = p.clockRate;
  d.memory_clock_khz = p.memoryClockRate;
  d.memory_bus_width_bits = p.memoryBusWidth;
  // HBM: double data rate, as on the CUDA side.
  d.memory_bandwidth_bytes_per_s = 2.0 * static_cast<double>(d.memory_clock_khz) * 1000.0 *
                                   static_cast<double>(d.memory_bus_width_bits) / 8.0;
  d.memory_bytes = p.totalGlobalMem;
  d.l2_cache_bytes = static_cast<uint64_t>(p.l2CacheSize);
  d.shared_memory_per_block = p.sharedMemPerBlock;
  d.shared_memory_per_block_optin = p.sharedMemPerBlockOptin != 0 ? p.sharedMemPerBlockOptin : p.sharedMemPerBlock;
  d.shared_memory_per_multiprocessor = p.maxSharedMemoryPerMultiProcessor;
  d.registers_per_block = p.regsPerBlock;
  d.registers_per_multiprocessor = p.regsPerMultiprocessor;
  d.warp_size = p.warpSize;  // 64 on CDNA parts
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
  d.max_block_dims = runtime::Dim3{static_cast<uint32_t>(p.maxThreadsDim[0]),
                                   static_cast<uint32_t>(p.maxThreadsDim[1]),
                                   static_cast<uint32_t>(p.maxThreadsDim[2])};
  d.max_grid_dims = runtime::Dim3{static_cast<uint32_t>(p.maxGridSize[0]),
                                  static_cast<uint32_t>(p.maxGridSize[1]),
                                  static_cast<uint32_t>(p.maxGridSize[2])};
  d.supports_stream_ordered_allocation = false;  // CreateStreamOrderedAllocator: not wired up
  d.unified_addressing = p.unifiedAddressing != 0;
  char pci[64] = {0};
  if (api_.hipDeviceGetPCIBusId(pci, sizeof(pci) - 1, ordinal_) == hipSuccess) d.pci_bus_id = pci;
  int driver_version = 0;
  if (api_.hipDriverGetVersion(&driver_version) == hipSuccess) {
    d.driver_version = HipVersionString(driver_version);
  }
  d.runtime_version = api_.RuntimeVersion();
  d.library_versions = RocmLibraryVersions();
  return OkStatus();
}

StatusOr<std::unique_ptr<runtime::Stream>> RocmDevice::CreateStream(
    const runtime::StreamOptions& options) {
  KILN_RETURN_IF_ERROR(Activate());
  int priority =
      options.priority == runtime::StreamPriority::kHigh ? greatest_priority_ : least_priority_;
  hipStream_t stream;
  KILN_RETURN_IF_ERROR(
      KILN_HIP(api_, hipStreamCreateWithPriority(&stream, hipStreamNonBlocking, priority)));
  return std::unique_ptr<runtime::Stream>(
      std::make_unique<RocmStream>(*this, stream, options.priority));
}

StatusOr<std::unique_ptr<runtime::Event>> RocmDevice::CreateEvent(
    const runtime::EventOptions& options) {
  KILN_RETURN_IF_ERROR(Activate());
  hipEvent_t event;
  unsigned flags = options.enable_timing ? hipEventDefault : hipEventDisableTiming;
  KILN_RETURN_IF_ERROR(KILN_HIP(api_, hipEventCreateWithFlags(&event, flags)));
  return std::unique_ptr<runtime::Event>(
      std::make_unique<RocmEvent>(*this, event, options.enable_timing));
}

StatusOr<std::unique_ptr<runtime::Module>> RocmDevice::LoadModule(
    const runtime::ModuleSpec& spec) {
  if (spec.format != runtime::ModuleSpec::Format::kHsaco) {
    return InvalidArgument("the rocm driver loads AMDGPU code objects (hsaco); module '", spec.name,
                           "' is ", runtime::ModuleFormatName(spec.format));
  }
  if (spec.image.empty()) return InvalidArgument("module '", spec.name, "' has an empty image");
  KILN_RETURN_IF_ERROR(Activate());
  hipModule_t module;
  Status status = KILN_HIP(api_, hipModuleLoadData(&module, spec.image.data()));
  if (!status.ok()) {
    return Status(status.code(), StrCat("loading code object '", spec.name, "' on ",
                                        description_.name, " (", gfx_arch_, "): ", status.message()));
  }
  return std::unique_ptr<runtime::Module>(std::make_unique<RocmModule>(*this, module, spec.name));
}

StatusOr<std::unique_ptr<runtime::Allocator>> RocmDevice::CreateStreamOrderedAllocator(
    const runtime::StreamOrderedAllocatorOptions&) {
  return Unimplemented("rocm:", ordinal_,
                       ": stream-ordered allocation (hipMallocAsync pools) is not implemented; use "
                       "the BFC allocator over device_allocator()");
}

StatusOr<runtime::MemoryUsage> RocmDevice::GetMemoryUsage() {
  KILN_RETURN_IF_ERROR(Activate());
  size_t free = 0, total = 0;
  KILN_RETURN_IF_ERROR(KILN_HIP(api_, hipMemGetInfo(&free, &total)));
  return runtime::MemoryUsage{free, total};
}

Status RocmDevice::Synchronize() {
  KILN_RETURN_IF_ERROR(Activate());
  return KILN_HIP(api_, hipDeviceSynchronize());
}

namespace {

class RocmPlatform final : public Platform {
 public:
  RocmPlatform(std::shared_ptr<const HipApi> api, int device_count)
      : api_(std::move(api)), devices_(device_count) {}
  ~RocmPlatform() override { devices_.clear(); }  // before api_ goes

  std::string_view name() const override { return "rocm"; }
  std::string version() const override {
    return StrCat("HIP runtime ", api_->RuntimeVersion(), " (", api_->library.path(),
                  "), HIP headers ", HipHeaderVersion());
  }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  StatusOr<Device*> GetDevice(int ordinal) override {
    if (ordinal < 0 || ordinal >= device_count()) {
      return OutOfRange("rocm device ", ordinal, " does not exist (", device_count(),
                        " device(s))");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (devices_[ordinal] == nullptr) {
      KILN_ASSIGN_OR_RETURN(devices_[ordinal], RocmDevice::Create(*api_, ordinal));
    }
    return devices_[ordinal].get();
  }

 private:
  std::shared_ptr<const HipApi> api_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RocmDevice>> devices_;
};

}  // namespace

StatusOr<std::unique_ptr<Platform>> CreateRocmPlatform(const RocmPlatformOptions& options) {
  StatusOr<std::shared_ptr<const HipApi>> api =
      options.hip_library.empty() ? HipApi::Default() : HipApi::Load(options.hip_library);
  if (!api.ok()) {
    if (api.status().code() == StatusCode::kNotFound) return Unavailable(api.status().message());
    return Unavailable(api.status().message());
  }
  const HipApi& h = **api;
  // hipInit once per platform (the runtime keeps its own once-only state; a second call only
  // repeats the first one's answer).
  const hipError_t init = h.hipInit(0);
  int count = 0;
  const hipError_t counted = h.hipGetDeviceCount(&count);
  if (counted == hipErrorNoDevice || (counted == hipSuccess && count == 0) ||
      (init == hipErrorInvalidDevice && count == 0) || init == hipErrorNoDevice) {
    return Unavailable("rocm: no device (hipInit: ", h.hipGetErrorName(init),
                       ", hipGetDeviceCount: ", h.hipGetErrorName(counted), ", runtime ",
                       h.RuntimeVersion(), ")");
  }
  if (init != hipSuccess) {
    return Unavailable("rocm: runtime initialization failed: ",
                       HipStatus(h, init, "hipInit(0)").message().substr(6));
  }
  KILN_RETURN_IF_ERROR(HipStatus(h, counted, "hipGetDeviceCount(&count)"));
  return std::unique_ptr<Platform>(std::make_unique<RocmPlatform>(std::move(api).value(), count));
}

Status RegisterRocmPlatform(runtime::PlatformRegistry& registry,
                            const RocmPlatformOptions& options) {
  return registry.Register("rocm", [options] { return CreateRocmPlatform(options); });
}

}  // namespace kiln::rocm
