#include "kiln/cuda/libs/fft.h"

#include <algorithm>
#include <map>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"
#include "kiln/cuda/libs/kernel_loader.h"
#include "kiln/cuda/vendor_apis.h"

namespace kiln::cuda::libs {

namespace {

const char* FftTypeName(FftType t) {
  switch (t) {
    case FftType::kFft: return "FFT";
    case FftType::kIfft: return "IFFT";
    case FftType::kRfft: return "RFFT";
    case FftType::kIrfft: return "IRFFT";
  }
  return "?";
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Elements of the half spectrum: L0 * ... * (L_last/2 + 1).
int64_t HalfSpectrum(const std::vector<int64_t>& l) {
  std::vector<int64_t> h = l;
  h.back() = h.back() / 2 + 1;
  return Product(h);
}

bool DoublePrecision(const FftDesc& d) { return d.precision == PrimitiveType::kF64; }

uint64_t Align(uint64_t v) { return (v + 255) / 256 * 256; }

}  // namespace

const char* FftScaleKernelSource() {
  return R"cuda(
// Multiplies n values by factor (grid-stride loop).
template <typename T>
__device__ void kiln_scale(T* data, unsigned long long n, T factor) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    data[i] *= factor;
  }
}
extern "C" __global__ void kiln_fft_scale_f32(float* data, unsigned long long n, float factor) {
  kiln_scale(data, n, factor);
}
extern "C" __global__ void kiln_fft_scale_f64(double* data, unsigned long long n, double factor) {
  kiln_scale(data, n, factor);
}
)cuda";
}

PrimitiveType FftDesc::input_type() const {
  const bool dbl = DoublePrecision(*this);
  if (type == FftType::kRfft) return dbl ? PrimitiveType::kF64 : PrimitiveType::kF32;
  return dbl ? PrimitiveType::kC128 : PrimitiveType::kC64;
}
PrimitiveType FftDesc::output_type() const {
  const bool dbl = DoublePrecision(*this);
  if (type == FftType::kIrfft) return dbl ? PrimitiveType::kF64 : PrimitiveType::kF32;
  return dbl ? PrimitiveType::kC128 : PrimitiveType::kC64;
}
int64_t FftDesc::input_elements() const {
  if (fft_length.empty()) return 0;
  return batch * (type == FftType::kIrfft ? HalfSpectrum(fft_length) : Product(fft_length));
}
int64_t FftDesc::output_elements() const {
  if (fft_length.empty()) return 0;
  return batch * (type == FftType::kRfft ? HalfSpectrum(fft_length) : Product(fft_length));
}
std::string FftDesc::ToString() const {
  return StrCat("fft ", FftTypeName(type), " ", PrimitiveTypeName(precision), " batch=", batch,
                " length=", StrJoin(fft_length, "x"), scale_inverse ? "" : " unscaled");
}

Status ValidateFftDesc(const FftDesc& d) {
  if (d.fft_length.empty() || d.fft_length.size() > 3) {
    return Unimplemented("fft: ", d.fft_length.size(),
                         " transformed dimensions (cuFFT transforms 1 to 3)");
  }
  if (d.precision != PrimitiveType::kF32 && d.precision != PrimitiveType::kF64) {
    return Unimplemented("fft: precision ", PrimitiveTypeName(d.precision),
                         " (cuFFT runs f32/c64 and f64/c128)");
  }
  if (d.batch < 1) return InvalidArgument("fft: batch must be positive (", d.batch, ")");
  for (int64_t l : d.fft_length) {
    if (l < 1) return InvalidArgument("fft: lengths must be positive (", d.ToString(), ")");
  }
  return OkStatus();
}

uint64_t FftPlan::input_bytes() const {
  return static_cast<uint64_t>(desc_.input_elements()) * PrimitiveByteWidth(desc_.input_type());
}
uint64_t FftPlan::output_bytes() const {
  return static_cast<uint64_t>(desc_.output_elements()) * PrimitiveByteWidth(desc_.output_type());
}
uint64_t FftPlan::workspace_bytes() const {
  return Align(work_bytes_) + (desc_.type == FftType::kIrfft ? Align(input_bytes()) : 0);
}

StatusOr<std::shared_ptr<FftPlan>> FftPlan::GetOrCreate(const FftDesc& desc, CudaDevice& device) {
  KILN_RETURN_IF_ERROR(ValidateFftDesc(desc));
  struct Cache {
    std::mutex mu;
    std::map<std::pair<const CudaDevice*, std::string>, std::shared_ptr<FftPlan>> plans;
  };
  static auto* cache = new Cache;  // never destroyed: cuFFT may be gone at exit
  std::pair<const CudaDevice*, std::string> key(&device, desc.ToString());
  std::lock_guard<std::mutex> lock(cache->mu);
  if (auto it = cache->plans.find(key); it != cache->plans.end()) return it->second;
  std::shared_ptr<FftPlan> plan(new FftPlan(desc, device));
  KILN_RETURN_IF_ERROR(plan->Build().WithContext(desc.ToString()));
  cache->plans.emplace(std::move(key), plan);
  return plan;
}

FftPlan::~FftPlan() {
  if (!has_handle_) return;
  StatusOr<std::shared_ptr<const CufftApi>> api = CufftApi::Default();
  if (api.ok() && device_.Activate().ok()) (*api)->cufftDestroy(handle_);
}

Status FftPlan::Build() {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const CufftApi> api, CufftApi::Default());
  KILN_RETURN_IF_ERROR(device_.Activate());
  cufftHandle handle = 0;
  KILN_RETURN_IF_ERROR(CufftStatus(api->cufftCreate(&handle), "cufftCreate"));
  handle_ = handle;
  has_handle_ = true;
  KILN_RETURN_IF_ERROR(CufftStatus(api->cufftSetAutoAllocation(handle, 0),
                                   "cufftSetAutoAllocation(plan, 0)"));
  const bool dbl = DoublePrecision(desc_);
  cufftType type = CUFFT_C2C;
  switch (desc_.type) {
    case FftType::kFft:
    case FftType::kIfft: type = dbl ? CUFFT_Z2Z : CUFFT_C2C; break;
    case FftType::kRfft: type = dbl ? CUFFT_D2Z : CUFFT_R2C; break;
    case FftType::kIrfft: type = dbl ? CUFFT_Z2D : CUFFT_C2R; break;
  }
  std::vector<long long> n(desc_.fft_length.begin(), desc_.fft_length.end());
  size_t work = 0;
  // Null embeddings: the basic layout, contiguous batches, the half spectrum for R2C/C2R.
  KILN_RETURN_IF_ERROR(CufftStatus(
      api->cufftMakePlanMany64(handle, static_cast<int>(n.size()), n.data(), nullptr, 1, 0,
                               nullptr, 1, 0, type, desc_.batch, &work),
      StrCat("cufftMakePlanMany64(", desc_.ToString(), ")")));
  work_bytes_ = work;
  if (desc_.scale_inverse && (desc_.type == FftType::kIfft || desc_.type == FftType::kIrfft)) {
    NvrtcRequest request;
    request.source = FftScaleKernelSource();
    request.program_name = "kiln_fft_scale.cu";
    KILN_ASSIGN_OR_RETURN(runtime::Module * module, LoadLibraryModule(device_, request));
    KILN_ASSIGN_OR_RETURN(scale_kernel_,
                          module->GetKernel(dbl ? "kiln_fft_scale_f64" : "kiln_fft_scale_f32"));
  }
  return OkStatus();
}

Status FftPlan::Run(runtime::DeviceMemory input, runtime::DeviceMemory output,
                    runtime::DeviceMemory workspace, runtime::Stream& stream) const {
  KILN_RETURN_IF_ERROR(CheckBuffer(input, input_bytes(), "fft input"));
  KILN_RETURN_IF_ERROR(CheckBuffer(output, output_bytes(), "fft output"));
  KILN_RETURN_IF_ERROR(CheckBuffer(workspace, workspace_bytes(), "fft workspace"));
  KILN_ASSIGN_OR_RETURN(CUstream cu_stream, CudaStreamHandle(stream, device_));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const CufftApi> api, CufftApi::Default());
  KILN_RETURN_IF_ERROR(device_.Activate());
  const cufftHandle handle = handle_;

  void* source = input.ptr;
  if (desc_.type == FftType::kIrfft) {
    // C2R overwrites its input: transform a copy kept in the workspace.
    runtime::DeviceMemory copy = workspace.Slice(Align(work_bytes_), input_bytes());
    KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(copy, input, input_bytes()));
    source = copy.ptr;
  }

  std::lock_guard<std::mutex> lock(mu_);
  KILN_RETURN_IF_ERROR(CufftStatus(api->cufftSetStream(handle, cu_stream), "cufftSetStream"));
  KILN_RETURN_IF_ERROR(CufftStatus(api->cufftSetWorkArea(handle, workspace.ptr), "cufftSetWorkArea"));
  const bool dbl = DoublePrecision(desc_);
  cufftResult result = CUFFT_SUCCESS;
  switch (desc_.type) {
    case FftType::kFft:
    case FftType::kIfft: {
      const int direction = desc_.type == FftType::kFft ? CUFFT_FORWARD : CUFFT_INVERSE;
      result = dbl ? api->cufftExecZ2Z(handle, static_cast<cufftDoubleComplex*>(source),
                                       static_cast<cufftDoubleComplex*>(output.ptr), direction)
                   : api->cufftExecC2C(handle, static_cast<cufftComplex*>(source),
                                       static_cast<cufftComplex*>(output.ptr), direction);
      break;
    }
    case FftType::kRfft:
      result = dbl ? api->cufftExecD2Z(handle, static_cast<cufftDoubleReal*>(source),
                                       static_cast<cufftDoubleComplex*>(output.ptr))
                   : api->cufftExecR2C(handle, static_cast<cufftReal*>(source),
                                       static_cast<cufftComplex*>(output.ptr));
      break;
    case FftType::kIrfft:
      result = dbl ? api->cufftExecZ2D(handle, static_cast<cufftDoubleComplex*>(source),
                                       static_cast<cufftDoubleReal*>(output.ptr))
                   : api->cufftExecC2R(handle, static_cast<cufftComplex*>(source),
                                       static_cast<cufftReal*>(output.ptr));
      break;
  }
  KILN_RETURN_IF_ERROR(CufftStatus(result, StrCat("cufftExec(", desc_.ToString(), ")")));

  if (scale_kernel_ != nullptr) {
    // Complex outputs scale both parts: count scalars, not elements.
    const uint64_t scalars = static_cast<uint64_t>(desc_.output_elements()) *
                             (IsComplexType(desc_.output_type()) ? 2 : 1);
    const double factor = 1.0 / static_cast<double>(Product(desc_.fft_length));
    runtime::KernelArgs args;
    args.Add(output);
    args.Add(static_cast<unsigned long long>(scalars));
    if (dbl) {
      args.Add(factor);
    } else {
      args.Add(static_cast<float>(factor));
    }
    const uint32_t block = 256;
    const uint64_t max_blocks =
        std::max<uint64_t>(1, static_cast<uint64_t>(device_.description().multiprocessor_count) * 8);
    runtime::LaunchDims dims;
    dims.block.x = block;
    dims.grid.x = static_cast<uint32_t>(std::min<uint64_t>((scalars + block - 1) / block, max_blocks));
    KILN_RETURN_IF_ERROR(stream.Launch(*scale_kernel_, dims, args));
  }
  return OkStatus();
}

}  // namespace kiln::cuda::libs
