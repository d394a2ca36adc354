// FFTs on cuFFT with XLA's semantics (HLO `fft`): C2C forward (FFT) and inverse (IFFT), R2C
// (RFFT) and C2R (IRFFT) over the last 1 to 3 dimensions, batched over the leading ones, in
// single (f32/c64) and double (f64/c128) precision.
//
//   KILN_ASSIGN_OR_RETURN(std::shared_ptr<FftPlan> plan, FftPlan::GetOrCreate(desc, device));
//   ... allocate plan->workspace_bytes() ...
//   KILN_RETURN_IF_ERROR(plan->Run(input, output, workspace, stream));
//
// Semantics (as the reference evaluator, eval/fft.cc, and numpy.fft):
//   FFT   c[batch, L...] -> c[batch, L...], exp(-2 pi i jk/n), unscaled
//   IFFT  c[batch, L...] -> c[batch, L...], exp(+2 pi i jk/n), scaled by 1/prod(L)
//   RFFT  r[batch, L...] -> c[batch, L0.., L_last/2+1]
//   IRFFT c[batch, L0.., L_last/2+1] -> r[batch, L...], Hermitian input (imaginary parts of the
//         self-conjugate bins ignored), scaled by 1/prod(L)
// cuFFT does not scale inverse transforms: the plan runs a small NVRTC-compiled kernel over the
// output afterwards (one extra pass over the result; a compiler that fuses the scaling into the
// consumer can ask for an unscaled plan with FftDesc::scale_inverse = false).
// cuFFT's C2R transforms overwrite their input; HLO operands are immutable, so IRFFT plans copy
// the input into the workspace first and transform the copy (the workspace accounts for it).
//
// Plans are expensive to create (cuFFT chooses kernels, may compile some): GetOrCreate keeps one
// per (device, descriptor) for the life of the process. cuFFT never allocates: auto-allocation
// is off and the work area comes from the caller's workspace on every run.
//
// Thread safety: GetOrCreate and Run may be called concurrently; runs of one plan are serialized
// (cuFFT binds a plan to one stream and one work area at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/types.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::libs {

struct FftDesc {
  FftType type = FftType::kFft;
  // The precision: kF32 (c64 complex side) or kF64 (c128 complex side).
  PrimitiveType precision = PrimitiveType::kF32;
  int64_t batch = 1;                // product of the dimensions before the transformed ones
  std::vector<int64_t> fft_length;  // the transformed dimensions (HLO fft_length), 1 to 3
  bool scale_inverse = true;        // IFFT/IRFFT: multiply by 1/prod(fft_length)

  // Element types and element counts of the input and the output.
  PrimitiveType input_type() const;
  PrimitiveType output_type() const;
  int64_t input_elements() const;
  int64_t output_elements() const;
  std::string ToString() const;  // "fft IRFFT f32 batch=8 length=16x32"
};

// InvalidArgument / Unimplemented for descriptors cuFFT cannot run.
Status ValidateFftDesc(const FftDesc& desc);

class FftPlan {
 public:
  // The process's plan for (device, desc), created on first use.
  static StatusOr<std::shared_ptr<FftPlan>> GetOrCreate(const FftDesc& desc, CudaDevice& device);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  const FftDesc& desc() const { return desc_; }
  uint64_t input_bytes() const;
  uint64_t output_bytes() const;
  // cuFFT's work area, plus the input copy of IRFFT plans.
  uint64_t workspace_bytes() const;

  // Enqueues the transform. `input` is not modified (also for IRFFT). `input` and `output` must
  // not overlap.
  Status Run(runtime::DeviceMemory input, runtime::DeviceMemory output,
             runtime::DeviceMemory workspace, runtime::Stream& stream) const;

 private:
  FftPlan(const FftDesc& desc, CudaDevice& device) : desc_(desc), device_(device) {}
  Status Build();

  FftDesc desc_;
  CudaDevice& device_;
  int handle_ = 0;  // cufftHandle
  bool has_handle_ = false;
  uint64_t work_bytes_ = 0;
  runtime::Kernel* scale_kernel_ = nullptr;
  mutable std::mutex mu_;
};

// The NVRTC source of the scaling kernels (exposed for the compile test).
const char* FftScaleKernelSource();

}  // namespace kiln::cuda::libs
