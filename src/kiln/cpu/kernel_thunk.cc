#include "kiln/cpu/kernel_thunk.h"

#include <cstring>

#include "kiln/base/strings.h"

namespace kiln::cpu {

StatusOr<std::unique_ptr<KernelThunk>> KernelThunk::Create(const HloInstruction& instr,
                                                           std::unique_ptr<CpuKernel> kernel,
                                                           std::vector<Operand> inputs,
                                                           std::vector<Operand> outputs,
                                                           int64_t cost) {
  if (!kernel) return Internal("cpu: no kernel for %", instr.name());
  // A kernel that meets other participants blocks until they come: it runs on the thread that
  // runs its sequence, never on a pool worker the other participants may need (cost INT64_MAX).
  const HloOpcode op = instr.opcode();
  if (IsCollectiveOpcode(op) || IsAsyncOpcode(op) || op == HloOpcode::kSend ||
      op == HloOpcode::kRecvDone || op == HloOpcode::kRecv || op == HloOpcode::kSendDone)
    cost = INT64_MAX;
  std::vector<bool> copy_input(inputs.size(), false);
  std::vector<BufferUse> uses;
  for (const Operand& in : inputs) uses.push_back(BufferUse::Read(in.slice));
  for (size_t o = 0; o < outputs.size(); ++o) {
    const BufferSlice& out = outputs[o].slice;
    uses.push_back(BufferUse::Write(out));
    if (out.size == 0) continue;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const BufferSlice& in = inputs[i].slice;
      if (!out.Overlaps(in)) continue;
      if (in != out)
        return Internal("cpu: output ", o, " of %", instr.name(), " (", out.ToString(),
                        ") partially overlaps input ", i, " (", in.ToString(), ")");
      if (!kernel->SupportsInPlace(static_cast<int64_t>(o), static_cast<int64_t>(i)))
        copy_input[i] = true;
    }
  }
  return std::unique_ptr<KernelThunk>(new KernelThunk(instr.name(), std::move(uses), cost,
                                                      std::move(kernel), std::move(inputs),
                                                      std::move(outputs), std::move(copy_input)));
}

std::string KernelThunk::ToString() const {
  return StrCat("kernel %", name(), " ", kernel_->name(), " cost ", cost());
}

Status KernelThunk::Execute(const ExecuteParams& params) const {
  // Views are rebuilt on every run (several runs may execute this thunk at once). The vectors
  // are per thread and reused so that their shapes' storage is too.
  thread_local std::vector<ArrayView> in_views, out_views;
  in_views.resize(inputs_.size());
  out_views.resize(outputs_.size());
  std::vector<std::vector<uint8_t>> aside;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(uint8_t * p, params.buffers->Get(inputs_[i].slice));
    if (copy_input_[i]) {
      aside.emplace_back(p, p + inputs_[i].slice.size);
      p = aside.back().data();
    }
    in_views[i].data = p;
    in_views[i].shape = inputs_[i].shape;
  }
  for (size_t o = 0; o < outputs_.size(); ++o) {
    KILN_ASSIGN_OR_RETURN(uint8_t * p, params.buffers->Get(outputs_[o].slice));
    out_views[o].data = p;
    out_views[o].shape = outputs_[o].shape;
  }
  KernelContext ctx;
  ctx.pool = params.pool;
  ctx.rng_state = params.rng_state;
  ctx.collectives = params.collectives;
  Status s = kernel_->Run(in_views, out_views, ctx);
  if (!s.ok()) return s.WithContext(StrCat("%", name()));
  return OkStatus();
}

}  // namespace kiln::cpu
