#include "kiln/cpu/stand_in_kernel.h"

#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/kernels.h"
#include "kiln/passes/buffer_assignment.h"

namespace kiln::cpu {

namespace {

Literal& MutableSubliteral(Literal& l, const ShapeIndex& index) {
  Literal* cur = &l;
  for (int64_t i : index) cur = &cur->mutable_tuple_element(i);
  return *cur;
}

class StandInKernel : public CpuKernel {
 public:
  StandInKernel(const HloInstruction& instr, EvalKernel fn) : instr_(instr), fn_(fn) {}
  std::string name() const override {
    return StrCat("evaluator:", HloOpcodeString(instr_.opcode()), "[", instr_.shape().ToString(false), "]");
  }
  bool SupportsInPlace(int64_t, int64_t) const override { return true; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext&) const override {
    std::vector<Literal> operands;
    operands.reserve(instr_.operand_count());
    size_t next = 0;
    for (const HloInstruction* op : instr_.operands()) {
      Literal l(op->shape());
      for (const ShapeIndex& leaf : ArrayLeafIndices(op->shape())) {
        if (next >= inputs.size()) return Internal("stand-in kernel: too few inputs for %", instr_.name());
        Literal& dst = MutableSubliteral(l, leaf);
        const ArrayView& v = inputs[next++];
        if (static_cast<int64_t>(dst.size_bytes()) != v.byte_size())
          return Internal("stand-in kernel: input size mismatch for %", instr_.name());
        if (dst.size_bytes() > 0) std::memcpy(dst.untyped_data(), v.data, dst.size_bytes());
      }
      operands.push_back(std::move(l));
    }
    std::vector<const Literal*> ptrs;
    for (const Literal& l : operands) ptrs.push_back(&l);
    Evaluator evaluator;
    KILN_ASSIGN_OR_RETURN(Literal result, fn_(instr_, ptrs, evaluator));
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr_.shape());
    if (leaves.size() != outputs.size())
      return Internal("stand-in kernel: %", instr_.name(), " has ", leaves.size(), " outputs, given ",
                      outputs.size());
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Literal& src = result.Subliteral(leaves[i]);
      if (static_cast<int64_t>(src.size_bytes()) != outputs[i].byte_size())
        return Internal("stand-in kernel: output size mismatch for %", instr_.name());
      if (src.size_bytes() > 0) std::memcpy(outputs[i].data, src.untyped_data(), src.size_bytes());
    }
    return OkStatus();
  }

 private:
  const HloInstruction& instr_;
  EvalKernel fn_;
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateStandInKernel(const HloInstruction& instr) {
  EvalKernel fn = KernelRegistry::Global().Find(instr.opcode());
  if (!fn) return UnsupportedInstruction(instr, "no evaluator kernel");
  return std::unique_ptr<CpuKernel>(new StandInKernel(instr, fn));
}

}  // namespace kiln::cpu
