// KernelThunk: runs one CpuKernel (cpu/kernel.h) on the slices of its operands and results.
//
// Inputs are the instruction's operands' array leaves in order, outputs its result's array
// leaves (as the kernel interface defines them). An output whose slice is the same as an
// input's is an in-place update decided by buffer assignment; if the kernel cannot update that
// input in place (CpuKernel::SupportsInPlace), the thunk copies the input aside first and
// hands the kernel the copy. Partially overlapping inputs and outputs are refused at build
// time (buffer assignment never makes them).
#pragma once

#include <memory>
#include <vector>

#include "kiln/cpu/kernel.h"
#include "kiln/cpu/thunk.h"

namespace kiln::cpu {

class KernelThunk : public Thunk {
 public:
  struct Operand {
    BufferSlice slice;
    Shape shape;  // array shape, row-major
  };
  // `instr` is kept for error messages only.
  static StatusOr<std::unique_ptr<KernelThunk>> Create(const HloInstruction& instr,
                                                       std::unique_ptr<CpuKernel> kernel,
                                                       std::vector<Operand> inputs,
                                                       std::vector<Operand> outputs,
                                                       int64_t cost);

  const CpuKernel& kernel() const { return *kernel_; }
  const std::vector<Operand>& inputs() const { return inputs_; }
  const std::vector<Operand>& outputs() const { return outputs_; }
  std::string ToString() const override;
  Status Execute(const ExecuteParams& params) const override;

 private:
  KernelThunk(std::string name, std::vector<BufferUse> uses, int64_t cost,
              std::unique_ptr<CpuKernel> kernel, std::vector<Operand> inputs,
              std::vector<Operand> outputs, std::vector<bool> copy_input)
      : Thunk(Kind::kKernel, std::move(name), std::move(uses), cost),
        kernel_(std::move(kernel)), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
        copy_input_(std::move(copy_input)) {}

  std::unique_ptr<CpuKernel> kernel_;
  std::vector<Operand> inputs_, outputs_;
  std::vector<bool> copy_input_;  // inputs to copy aside (aliased, not updatable in place)
};

}  // namespace kiln::cpu
