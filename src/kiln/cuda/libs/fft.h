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
//   IRFFT c[batch, L0.., L_last/2+1] -> r[batch, L...], scaled by 1/prod(L), exactly as
//         numpy.fft.irfftn defines it for ANY input: inverse complex transforms over the leading
//         dimensions, then a real inverse over the last one that ignores the imaginary parts of
//         its self-conjugate bins (0, and L_last/2 for even L_last). For Hermitian input (the
//         output of an RFFT) that is the usual inverse; for other input cuFFT's own C2R differs
//         (its multi-dimensional and long 1-D kernels), so the plan does not use it whole: it
//         copies the input into the workspace (C2R overwrites its input; HLO operands are
//         immutable), runs cuFFT C2C over the leading dimensions in place (one call per batch
//         entry), zeroes those imaginary parts with a small kernel, then runs a batched 1-D C2R.
// cuFFT does not scale inverse transforms: the plan runs a small NVRTC-compiled kernel over the
// output afterwards (one extra pass over the result; a compiler that fuses the scaling into the
// consumer can ask for an unscaled plan with FftDesc::scale_inverse = false).
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

namespace kiln {
class HloInstruction;
}

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

// The descriptor of an HLO `fft` instruction: type and fft_length from its attributes, batch the
// product of the leading dimensions, precision from the operand type. Operand and result must be
// row-major (their default layout); anything else is Unimplemented (transpose first).
StatusOr<FftDesc> FftDescFromHlo(const HloInstruction& fft);

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
  uint64_t work_area_bytes() const;  // cuFFT's work area at the workspace's start

  int handle_ = 0;  // cufftHandle: the transform (IRFFT: the 1-D C2R over the last dimension)
  bool has_handle_ = false;
  int lead_handle_ = 0;  // IRFFT of rank > 1: inverse C2C over the leading dimensions
  bool has_lead_handle_ = false;
  uint64_t work_bytes_ = 0;  // the larger work area of the two
  runtime::Kernel* scale_kernel_ = nullptr;
  runtime::Kernel* fix_kernel_ = nullptr;  // IRFFT: zeroes self-conjugate bins' imaginary parts
  mutable std::mutex mu_;
};

// The NVRTC source of the scaling and IRFFT bin-fixing kernels (exposed for the compile test).
const char* FftScaleKernelSource();

}  // namespace kiln::cuda::libs
