// CUDA platform and device creation, device description, module loading.
#include "kiln/cuda/cuda_platform.h"

#include <cstdio>
#include <mutex>
#include <vector>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/vendor_apis.h"

namespace kiln::cuda {

using runtime::Device;
using runtime::DeviceDescription;
using runtime::Platform;

std::string ArchForComputeCapability(int major, int minor) {
  return StrCat("sm_", major, minor);
}

namespace {

std::string VersionString(int version) {  // 13000 → "13.0"
  return StrCat(version / 1000, ".", (version % 1000) / 10);
}

std::string FormatUuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char buf[64];
  std::snprintf(buf, sizeof(buf),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

}  // namespace

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create(const DriverApi& api, int ordinal) {
  CUdevice device;
  KILN_RETURN_IF_ERROR(KILN_CU(api, cuDeviceGet(&device, ordinal)));
  CUcontext context;
  KILN_RETURN_IF_ERROR(KILN_CU(api, cuDevicePrimaryCtxRetain(&context, device)));
  std::unique_ptr<CudaDevice> result(new CudaDevice(api, device, context));
  KILN_RETURN_IF_ERROR(result->Activate());
  KILN_RETURN_IF_ERROR(result->Describe(ordinal));
  KILN_RETURN_IF_ERROR(KILN_CU(
      api, cuCtxGetStreamPriorityRange(&result->least_priority_, &result->greatest_priority_)));
  result->device_allocator_ = std::make_unique<CudaRawAllocator>(
      *result, runtime::MemoryKind::kDevice, StrCat("cuda:", ordinal, ":device"));
  result->pinned_allocator_ = std::make_unique<CudaRawAllocator>(
      *result, runtime::MemoryKind::kPinnedHost, StrCat("cuda:", ordinal, ":pinned"));
  return result;
}

CudaDevice::~CudaDevice() {
  // Allocations must go back while the context is still retained.
  device_allocator_.reset();
  pinned_allocator_.reset();
  Status status = KILN_CU(api_, cuDevicePrimaryCtxRelease(device_));
  if (!status.ok()) {
    KILN_LOG(Warning) << status.ToString();
  }
}

Status CudaDevice::Activate() const {
  CUcontext current = nullptr;
  if (api_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_) return OkStatus();
  return KILN_CU(api_, cuCtxSetCurrent(context_));
}

Status CudaDevice::Describe(int ordinal) {
  DeviceDescription& d = description_;
  d.platform = "cuda";
  d.ordinal = ordinal;
  d.vendor = "NVIDIA";
  char name[256] = {0};
  KILN_RETURN_IF_ERROR(KILN_CU(api_, cuDeviceGetName(name, sizeof(name) - 1, device_)));
  d.name = name;
  // An attribute the driver does not know reads as 0 ("unknown").
  auto attribute = [&](CUdevice_attribute a) -> int {
    int value = 0;
    if (api_.cuDeviceGetAttribute(&value, a, device_) != CUDA_SUCCESS) value = 0;
    return value;
  };
  d.compute_capability_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.compute_capability_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.multiprocessor_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.core_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  d.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.memory_bus_width_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // Double data rate: two transfers per memory clock.
  d.memory_bandwidth_bytes_per_s = 2.0 * static_cast<double>(d.memory_clock_khz) * 1000.0 *
                                   static_cast<double>(d.memory_bus_width_bits) / 8.0;
  size_t total = 0;
  KILN_RETURN_IF_ERROR(KILN_CU(api_, cuDeviceTotalMem(&total, device_)));
  d.memory_bytes = total;
  d.l2_cache_bytes = static_cast<uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  d.shared_memory_per_block =
      static_cast<uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  d.shared_memory_per_block_optin =
      static_cast<uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  d.shared_memory_per_multiprocessor =
      static_cast<uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  d.registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  d.registers_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.max_threads_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.max_block_dims = runtime::Dim3{
      static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)),
      static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)),
      static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z))};
  d.max_grid_dims = runtime::Dim3{
      static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)),
      static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)),
      static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z))};
  d.supports_stream_ordered_allocation =
      attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  d.unified_addressing = attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) != 0;
  char pci[64] = {0};
  if (api_.cuDeviceGetPCIBusId(pci, sizeof(pci) - 1, device_) == CUDA_SUCCESS) d.pci_bus_id = pci;
  CUuuid uuid;
  if (api_.cuDeviceGetUuid(&uuid, device_) == CUDA_SUCCESS) d.uuid = FormatUuid(uuid);
  int driver_version = 0;
  if (api_.cuDriverGetVersion(&driver_version) == CUDA_SUCCESS) {
    d.driver_version = VersionString(driver_version);
  }
  d.runtime_version = VersionString(CUDA_VERSION);
  d.library_versions = VendorLibraryVersions();
  return OkStatus();
}

StatusOr<std::unique_ptr<runtime::Stream>> CudaDevice::CreateStream(
    const runtime::StreamOptions& options) {
  KILN_RETURN_IF_ERROR(Activate());
  int priority =
      options.priority == runtime::StreamPriority::kHigh ? greatest_priority_ : least_priority_;
  CUstream stream;
  KILN_RETURN_IF_ERROR(
      KILN_CU(api_, cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, priority)));
  return std::unique_ptr<runtime::Stream>(
      std::make_unique<CudaStream>(*this, stream, options.priority));
}

StatusOr<std::unique_ptr<runtime::Event>> CudaDevice::CreateEvent(
    const runtime::EventOptions& options) {
  KILN_RETURN_IF_ERROR(Activate());
  CUevent event;
  unsigned flags = options.enable_timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
  KILN_RETURN_IF_ERROR(KILN_CU(api_, cuEventCreate(&event, flags)));
  return std::unique_ptr<runtime::Event>(
      std::make_unique<CudaEvent>(*this, event, options.enable_timing));
}

StatusOr<std::unique_ptr<runtime::Module>> CudaDevice::LoadModule(
    const runtime::ModuleSpec& spec) {
  if (spec.format == runtime::ModuleSpec::Format::kHostLibrary) {
    return InvalidArgument("the cuda driver loads cubin or PTX; module '", spec.name,
                           "' is a host kernel library");
  }
  if (spec.image.empty()) return InvalidArgument("module '", spec.name, "' has an empty image");
  KILN_RETURN_IF_ERROR(Activate());
  // The JIT's logs say why a PTX module failed to compile (or a cubin does not fit the GPU).
  std::vector<char> error_log(16384, '\0'), info_log(4096, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size() - 1),
                    info_log.data(), reinterpret_cast<void*>(info_log.size() - 1)};
  CUmodule module;
  // PTX must be NUL-terminated: std::string's c_str() is.
  Status status = KILN_CU(api_, cuModuleLoadDataEx(&module, spec.image.c_str(), 4, options, values));
  if (!status.ok()) {
    std::string log(error_log.data());
    return Status(status.code(),
                  StrCat("loading ", runtime::ModuleFormatName(spec.format), " module '",
                         spec.name, "' on ", description_.name, " (",
                         ArchForComputeCapability(description_.compute_capability_major,
                                                  description_.compute_capability_minor),
                         "): ", status.message(), log.empty() ? "" : "\n", log));
  }
  return std::unique_ptr<runtime::Module>(std::make_unique<CudaModule>(*this, module, spec.name));
}

StatusOr<std::unique_ptr<runtime::Allocator>> CudaDevice::CreateStreamOrderedAllocator(
    const runtime::StreamOrderedAllocatorOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<CudaStreamOrderedAllocator> allocator,
                        CudaStreamOrderedAllocator::Create(*this, options));
  return std::unique_ptr<runtime::Allocator>(std::move(allocator));
}

StatusOr<runtime::MemoryUsage> CudaDevice::GetMemoryUsage() {
  KILN_RETURN_IF_ERROR(Activate());
  size_t free = 0, total = 0;
  KILN_RETURN_IF_ERROR(KILN_CU(api_, cuMemGetInfo(&free, &total)));
  return runtime::MemoryUsage{free, total};
}

Status CudaDevice::Synchronize() {
  KILN_RETURN_IF_ERROR(Activate());
  return KILN_CU(api_, cuCtxSynchronize());
}

namespace {

class CudaPlatform final : public Platform {
 public:
  CudaPlatform(std::shared_ptr<const DriverApi> api, int device_count, int driver_version)
      : api_(std::move(api)), devices_(device_count), driver_version_(driver_version) {}
  ~CudaPlatform() override { devices_.clear(); }  // before api_ goes

  std::string_view name() const override { return "cuda"; }
  std::string version() const override {
    return StrCat("driver ", VersionString(driver_version_), " (", api_->library.path(),
                  "), toolkit headers ", VersionString(CUDA_VERSION));
  }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  StatusOr<Device*> GetDevice(int ordinal) override {
    if (ordinal < 0 || ordinal >= device_count()) {
      return OutOfRange("cuda device ", ordinal, " does not exist (", device_count(),
                        " device(s))");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (devices_[ordinal] == nullptr) {
      KILN_ASSIGN_OR_RETURN(devices_[ordinal], CudaDevice::Create(*api_, ordinal));
    }
    return devices_[ordinal].get();
  }

 private:
  std::shared_ptr<const DriverApi> api_;
  std::mutex mu_;
  std::vector<std::unique_ptr<CudaDevice>> devices_;
  int driver_version_;
};

}  // namespace

StatusOr<std::unique_ptr<Platform>> CreateCudaPlatform(const CudaPlatformOptions& options) {
  StatusOr<std::shared_ptr<const DriverApi>> api =
      options.driver_library.empty() ? DriverApi::Default()
                                     : DriverApi::Load(options.driver_library);
  if (!api.ok()) return api.status();
  const DriverApi& d = **api;
  CUresult init = d.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE) return Unavailable("cuda: 0 devices");
  if (init != CUDA_SUCCESS) {
    std::string why = CuStatus(d, init, "cuInit(0)").message().substr(6);  // drop "cuda: "
    if (init == CUDA_ERROR_STUB_LIBRARY) {
      why += " (the toolkit's stub libcuda.so was loaded instead of the NVIDIA driver's)";
    }
    return Unavailable("cuda: driver initialization failed: ", why);
  }
  int count = 0;
  KILN_RETURN_IF_ERROR(KILN_CU(d, cuDeviceGetCount(&count)));
  if (count == 0) return Unavailable("cuda: 0 devices");
  int driver_version = 0;
  KILN_RETURN_IF_ERROR(KILN_CU(d, cuDriverGetVersion(&driver_version)));
  return std::unique_ptr<Platform>(
      std::make_unique<CudaPlatform>(std::move(api).value(), count, driver_version));
}

Status RegisterCudaPlatform(runtime::PlatformRegistry& registry,
                            const CudaPlatformOptions& options) {
  return registry.Register("cuda", [options] { return CreateCudaPlatform(options); });
}

}  // namespace kiln::cuda
