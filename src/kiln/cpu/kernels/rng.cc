// The rng-bit-generator kernel: the evaluator's bit streams (eval/rng_bits.h, bit-exact with
// XLA) generated over ranges of counter blocks in parallel.
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/eval/rng_bits.h"

namespace kiln::cpu::internal {
namespace {

class RngBitGeneratorKernel final : public CpuKernel {
 public:
  std::string name_;
  eval_internal::RngBitsLayout layout_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 1 || outputs.size() != 2)
      return InvalidArgument(name_, ": expected 1 input and 2 outputs");
    if (inputs[0].shape.num_elements() != layout_.state_size ||
        outputs[0].shape.num_elements() != layout_.state_size ||
        outputs[1].shape.num_elements() != layout_.elements)
      return InvalidArgument(name_, ": views do not match the instruction");
    std::vector<uint64_t> state(layout_.state_size), next(layout_.state_size);
    std::memcpy(state.data(), inputs[0].data, state.size() * sizeof(uint64_t));
    // ~10-20 ns per block: a few thousand blocks per task.
    ParallelFor(ctx, layout_.blocks, 4096, [&](int64_t b0, int64_t b1) {
      eval_internal::FillRngBits(layout_, state, outputs[1].data, b0, b1);
    });
    eval_internal::AdvanceRngState(layout_, state, next);
    std::memcpy(outputs[0].data, next.data(), next.size() * sizeof(uint64_t));
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateRngBitGeneratorKernel(const HloInstruction& instr,
                                                                 const CpuKernelOptions&) {
  if (instr.opcode() != HloOpcode::kRngBitGenerator)
    return Unimplemented("rng kernel: not an rng-bit-generator");
  StatusOr<eval_internal::RngBitsLayout> layout = eval_internal::PlanRngBits(instr);
  if (!layout.ok()) return Unimplemented(layout.status().message());
  auto k = std::make_unique<RngBitGeneratorKernel>();
  k->layout_ = *std::move(layout);
  k->name_ = StrCat("rng-bit-generator[", ShapeText(instr.shape()), ", ",
                    k->layout_.algorithm == RandomAlgorithm::kThreeFry ? "threefry" : "philox",
                    "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
