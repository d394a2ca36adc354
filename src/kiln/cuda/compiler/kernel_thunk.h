// KernelThunk: launches of one generated kernel (codegen::KernelSpec, compiled to a cubin at
// compile time), with the buffers of the instruction it computes.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/runtime/module.h"

namespace kiln::cuda {

class KernelThunk : public GpuThunk {
 public:
  // `operands`: one slice per operand of the instruction (KernelParam::kOperand index);
  // `outputs`: one per array leaf of its result (kOutput index).
  KernelThunk(std::string name, codegen::KernelSpec spec, std::string cubin, std::vector<BufferSlice> operands,
              std::vector<BufferSlice> outputs);

  const codegen::KernelSpec& spec() const { return spec_; }
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  uint64_t workspace_bytes() const override { return static_cast<uint64_t>(spec_.scratch_bytes); }
  std::string ToString() const override;

 private:
  codegen::KernelSpec spec_;
  std::string cubin_;
  std::vector<BufferSlice> operands_, outputs_;
  std::unique_ptr<runtime::Module> module_;
  std::vector<runtime::Kernel*> kernels_;  // per launch
};

}  // namespace kiln::cuda
