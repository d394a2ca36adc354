#include "kiln/cuda/libs/fft.h"

#include <algorithm>
#include <map>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"
#include "kiln/cuda/libs/kernel_loader.h"
#include "kiln/cuda/vendor_apis.h"
#include "kiln/hlo/instruction.h"

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

// Zeroes the imaginary parts of the self-conjugate bins of `rows` half spectra of `half` complex
// values each (interleaved re, im scalars): bin 0, and bin half-1 when `nyquist` is set.
template <typename T>
__device__ void kiln_hermitian_fix(T* data, unsigned long long rows, unsigned long long half,
                                   int nyquist) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
       r += stride) {
    data[2 * (r * half) + 1] = T(0);
    if (nyquist) data[2 * (r * half + half - 1) + 1] = T(0);
  }
}
extern "C" __global__ void kiln_fft_hermitian_fix_f32(float* data, unsigned long long rows,
                                                      unsigned long long half, int nyquist) {
  kiln_hermitian_fix(data, rows, half, nyquist);
}
extern "C" __global__ void kiln_fft_hermitian_fix_f64(double* data, unsigned long long rows,
                                                      unsigned long long half, int nyquist) {
  kiln_hermitian_fix(data, rows, half, nyquist);
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

StatusOr<FftDesc> FftDescFromHlo(const HloInstruction& fft) {
  if (fft.opcode() != HloOpcode::kFft || fft.operand_count() != 1) {
    return InvalidArgument("%", fft.name(), " is not an fft");
  }
  const Shape& in = fft.operand(0)->shape();
  FftDesc d;
  d.type = fft.attrs().fft_type;
  d.fft_length = fft.attrs().fft_length;
  const PrimitiveType t = in.element_type();
  d.precision = t == PrimitiveType::kF64 || t == PrimitiveType::kC128 ? PrimitiveType::kF64
                : t == PrimitiveType::kF32 || t == PrimitiveType::kC64 ? PrimitiveType::kF32
                                                                       : PrimitiveType::kInvalid;
  if (d.precision == PrimitiveType::kInvalid) {
    return Unimplemented("fft %", fft.name(), ": operand type ", PrimitiveTypeName(t));
  }
  const int64_t n = static_cast<int64_t>(d.fft_length.size());
  if (n < 1 || n > in.rank()) {
    return InvalidArgument("fft %", fft.name(), ": ", n, " fft_length entries for rank ",
                           in.rank());
  }
  for (const Shape* s : {&in, &fft.shape()}) {
    if (s->has_layout()) {
      const std::vector<int64_t>& m2m = s->layout().minor_to_major();
      for (int64_t i = 0; i < static_cast<int64_t>(m2m.size()); ++i) {
        if (m2m[i] != s->rank() - 1 - i) {
          return Unimplemented("fft %", fft.name(), ": layout of ", s->ToString(),
                               " is not row-major (transpose first)");
        }
      }
    }
  }
  d.batch = 1;
  for (int64_t i = 0; i < in.rank() - n; ++i) d.batch *= in.dimensions(i);
  KILN_RETURN_IF_ERROR(ValidateFftDesc(d).WithContext(StrCat("fft %", fft.name())));
  // The shapes must be the descriptor's (catches fft_length that disagrees with them).
  if (d.input_elements() != in.num_elements() ||
      d.output_elements() != fft.shape().num_elements() || d.input_type() != t ||
      d.output_type() != fft.shape().element_type()) {
    return InvalidArgument("fft %", fft.name(), ": shapes ", in.ToString(false), " -> ",
                           fft.shape().ToString(false), " do not match ", d.ToString());
  }
  return d;
}

uint64_t FftPlan::input_bytes() const {
  return static_cast<uint64_t>(desc_.input_elements()) * PrimitiveByteWidth(desc_.input_type());
}
uint64_t FftPlan::output_bytes() const {
  return static_cast<uint64_t>(desc_.output_elements()) * PrimitiveByteWidth(desc_.output_type());
}
uint64_t FftPlan::work_area_bytes() const {
  // Never empty: the IRFFT copy that follows must not share the work area's address (cuFFT
  // fails multi-kernel transforms whose work area is their input).
  return Align(std::max<uint64_t>(work_bytes_, 1));
}
uint64_t FftPlan::workspace_bytes() const {
  return work_area_bytes() + (desc_.type == FftType::kIrfft ? Align(input_bytes()) : 0);
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
  if (!has_handle_ && !has_lead_handle_) return;
  StatusOr<std::shared_ptr<const CufftApi>> api = CufftApi::Default();
  if (!api.ok() || !device_.Activate().ok()) return;
  if (has_handle_) (*api)->cufftDestroy(handle_);
  if (has_lead_handle_) (*api)->cufftDestroy(lead_handle_);
}

Status FftPlan::Build() {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const CufftApi> api, CufftApi::Default());
  KILN_RETURN_IF_ERROR(device_.Activate());
  const bool dbl = DoublePrecision(desc_);
  const bool irfft = desc_.type == FftType::kIrfft;
  const int rank = static_cast<int>(desc_.fft_length.size());
  // A plan with cuFFT's work area supplied by the caller; returns its work size.
  auto make = [&](cufftHandle* out, bool* has, int plan_rank, long long* n, long long* embed,
                  long long stride, long long dist, cufftType type,
                  long long batch) -> StatusOr<size_t> {
    KILN_RETURN_IF_ERROR(CufftStatus(api->cufftCreate(out), "cufftCreate"));
    *has = true;
    KILN_RETURN_IF_ERROR(
        CufftStatus(api->cufftSetAutoAllocation(*out, 0), "cufftSetAutoAllocation(plan, 0)"));
    size_t work = 0;
    KILN_RETURN_IF_ERROR(CufftStatus(
        api->cufftMakePlanMany64(*out, plan_rank, n, embed, stride, dist, embed, stride, dist,
                                 type, batch, &work),
        StrCat("cufftMakePlanMany64(", desc_.ToString(), ")")));
    return work;
  };
  cufftHandle handle = 0, lead = 0;
  size_t work = 0;
  if (!irfft) {
    cufftType type = CUFFT_C2C;
    switch (desc_.type) {
      case FftType::kFft:
      case FftType::kIfft: type = dbl ? CUFFT_Z2Z : CUFFT_C2C; break;
      case FftType::kRfft: type = dbl ? CUFFT_D2Z : CUFFT_R2C; break;
      case FftType::kIrfft: break;
    }
    std::vector<long long> n(desc_.fft_length.begin(), desc_.fft_length.end());
    // Null embeddings: the basic layout, contiguous batches, the half spectrum for R2C.
    KILN_ASSIGN_OR_RETURN(work, make(&handle, &has_handle_, rank, n.data(), nullptr, 1, 0, type,
                                     desc_.batch));
  } else {
    // Note [IRFFT as numpy computes it]: inverse C2C transforms over the leading dimensions
    // (in place on the copy), then the self-conjugate bins' imaginary parts are zeroed, then
    // one-dimensional C2R transforms over the last dimension. This is numpy.fft.irfftn's
    // definition, which the evaluator follows; cuFFT's own multi-dimensional C2R (and even its
    // long 1-D C2R) treat non-Hermitian input differently.
    const long long last = desc_.fft_length.back();
    const long long half = last / 2 + 1;
    long long rows = desc_.batch;
    if (rank > 1) {
      std::vector<long long> lead_n(desc_.fft_length.begin(), desc_.fft_length.end() - 1);
      for (long long v : lead_n) rows *= v;
      // Columns of the half spectrum: stride `half` between elements, `half` transforms one
      // element apart; run once per batch entry.
      std::vector<long long> embed = lead_n;
      KILN_ASSIGN_OR_RETURN(size_t lead_work,
                            make(&lead, &has_lead_handle_, rank - 1, lead_n.data(), embed.data(),
                                 half, 1, dbl ? CUFFT_Z2Z : CUFFT_C2C, half));
      work = std::max(work, lead_work);
    }
    long long n = last;
    KILN_ASSIGN_OR_RETURN(size_t c2r_work, make(&handle, &has_handle_, 1, &n, nullptr, 1, 0,
                                                dbl ? CUFFT_Z2D : CUFFT_C2R, rows));
    work = std::max(work, c2r_work);
  }
  handle_ = handle;
  lead_handle_ = lead;
  work_bytes_ = work;
  if (irfft || (desc_.scale_inverse && desc_.type == FftType::kIfft)) {
    NvrtcRequest request;
    request.source = FftScaleKernelSource();
    request.program_name = "kiln_fft_scale.cu";
    KILN_ASSIGN_OR_RETURN(runtime::Module * module, LoadLibraryModule(device_, request));
    if (desc_.scale_inverse) {
      KILN_ASSIGN_OR_RETURN(scale_kernel_,
                            module->GetKernel(dbl ? "kiln_fft_scale_f64" : "kiln_fft_scale_f32"));
    }
    if (irfft) {
      KILN_ASSIGN_OR_RETURN(fix_kernel_, module->GetKernel(dbl ? "kiln_fft_hermitian_fix_f64"
                                                               : "kiln_fft_hermitian_fix_f32"));
    }
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
  const bool dbl = DoublePrecision(desc_);
  const uint32_t block = 256;
  const uint64_t max_blocks =
      std::max<uint64_t>(1, static_cast<uint64_t>(device_.description().multiprocessor_count) * 8);
  auto grid = [&](uint64_t n) {
    return static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>((n + block - 1) / block, 1),
                                                    max_blocks));
  };

  std::lock_guard<std::mutex> lock(mu_);
  auto bind = [&](cufftHandle h) -> Status {
    KILN_RETURN_IF_ERROR(CufftStatus(api->cufftSetStream(h, cu_stream), "cufftSetStream"));
    return CufftStatus(api->cufftSetWorkArea(h, workspace.ptr), "cufftSetWorkArea");
  };
  const std::string what = StrCat("cufftExec(", desc_.ToString(), ")");
  cufftResult result = CUFFT_SUCCESS;
  switch (desc_.type) {
    case FftType::kFft:
    case FftType::kIfft: {
      KILN_RETURN_IF_ERROR(bind(handle_));
      const int direction = desc_.type == FftType::kFft ? CUFFT_FORWARD : CUFFT_INVERSE;
      result = dbl ? api->cufftExecZ2Z(handle_, static_cast<cufftDoubleComplex*>(input.ptr),
                                       static_cast<cufftDoubleComplex*>(output.ptr), direction)
                   : api->cufftExecC2C(handle_, static_cast<cufftComplex*>(input.ptr),
                                       static_cast<cufftComplex*>(output.ptr), direction);
      break;
    }
    case FftType::kRfft:
      KILN_RETURN_IF_ERROR(bind(handle_));
      result = dbl ? api->cufftExecD2Z(handle_, static_cast<cufftDoubleReal*>(input.ptr),
                                       static_cast<cufftDoubleComplex*>(output.ptr))
                   : api->cufftExecR2C(handle_, static_cast<cufftReal*>(input.ptr),
                                       static_cast<cufftComplex*>(output.ptr));
      break;
    case FftType::kIrfft: {
      // See Note [IRFFT as numpy computes it] in Build. Everything runs on a copy of the input
      // kept in the workspace after cuFFT's work area (C2R overwrites its input; HLO operands
      // are immutable).
      runtime::DeviceMemory copy = workspace.Slice(work_area_bytes(), input_bytes());
      KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(copy, input, input_bytes()));
      const int64_t half = desc_.fft_length.back() / 2 + 1;
      const int64_t lead = Product(desc_.fft_length) / desc_.fft_length.back();
      const uint64_t element = dbl ? 16 : 8;
      if (has_lead_handle_) {
        KILN_RETURN_IF_ERROR(bind(lead_handle_));
        for (int64_t b = 0; b < desc_.batch; ++b) {
          char* base = static_cast<char*>(copy.ptr) + b * lead * half * element;
          result = dbl ? api->cufftExecZ2Z(lead_handle_, reinterpret_cast<cufftDoubleComplex*>(base),
                                           reinterpret_cast<cufftDoubleComplex*>(base),
                                           CUFFT_INVERSE)
                       : api->cufftExecC2C(lead_handle_, reinterpret_cast<cufftComplex*>(base),
                                           reinterpret_cast<cufftComplex*>(base), CUFFT_INVERSE);
          KILN_RETURN_IF_ERROR(CufftStatus(result, what));
        }
      }
      const uint64_t rows = static_cast<uint64_t>(desc_.batch * lead);
      runtime::KernelArgs fix;
      fix.Add(copy);
      fix.Add(static_cast<unsigned long long>(rows));
      fix.Add(static_cast<unsigned long long>(half));
      fix.Add(static_cast<int>(desc_.fft_length.back() % 2 == 0 ? 1 : 0));
      runtime::LaunchDims fix_dims;
      fix_dims.block.x = block;
      fix_dims.grid.x = grid(rows);
      KILN_RETURN_IF_ERROR(stream.Launch(*fix_kernel_, fix_dims, fix));
      KILN_RETURN_IF_ERROR(bind(handle_));
      result = dbl ? api->cufftExecZ2D(handle_, static_cast<cufftDoubleComplex*>(copy.ptr),
                                       static_cast<cufftDoubleReal*>(output.ptr))
                   : api->cufftExecC2R(handle_, static_cast<cufftComplex*>(copy.ptr),
                                       static_cast<cufftReal*>(output.ptr));
      break;
    }
  }
  KILN_RETURN_IF_ERROR(CufftStatus(result, what));

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
    runtime::LaunchDims dims;
    dims.block.x = block;
    dims.grid.x = grid(scalars);
    KILN_RETURN_IF_ERROR(stream.Launch(*scale_kernel_, dims, args));
  }
  return OkStatus();
}

}  // namespace kiln::cuda::libs
