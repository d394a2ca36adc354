#include "kiln/passes/compile_summary.h"

#include <cstdio>

#include "kiln/base/strings.h"
#include "kiln/passes/attention_rewriter.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln {

bool IsKernelFree(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast: case HloOpcode::kAfterAll:
    case HloOpcode::kAddDependency: case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
      return true;
    case HloOpcode::kReshape: {
      const Shape& in = instr.operand(0)->shape();
      auto dflt = [](const Shape& s) { return !s.has_layout() || s.layout().IsDefaultFor(s.rank()); };
      return instr.shape().IsArray() && dflt(instr.shape()) && dflt(in) &&
             instr.shape().element_type() == in.element_type();
    }
    default:
      return false;
  }
}

void KernelCounts::Add(const KernelCounts& o) {
  instructions += o.instructions;
  kernels += o.kernels;
  fusions += o.fusions;
  loop += o.loop;
  input += o.input;
  output += o.output;
  custom += o.custom;
  multi_output += o.multi_output;
  fused_instructions += o.fused_instructions;
  other += o.other;
  control += o.control;
}

std::string KernelCounts::ToString() const {
  std::vector<std::string> parts;
  if (loop) parts.push_back(StrCat(loop, " loop"));
  if (input) parts.push_back(StrCat(input, " input"));
  if (output) parts.push_back(StrCat(output, " output"));
  if (custom) parts.push_back(StrCat(custom, " custom"));
  std::string s = StrJoin(parts, ", ");
  if (multi_output) s += StrCat(" (", multi_output, " multi-output)");
  if (other) s += StrCat(s.empty() ? "" : ", ", other, " other");
  if (control) s += StrCat(s.empty() ? "" : ", ", control, " control flow");
  return s.empty() ? "none" : s;
}

KernelCounts CountKernels(const HloComputation& computation) {
  KernelCounts k;
  for (const HloInstruction* i : computation.instructions()) {
    if (IsFusion(*i)) {
      ++k.fusions;
      ++k.kernels;
      int64_t n = 0;
      for (const HloInstruction* f : i->fused_computation()->instructions()) n += !IsKernelFree(*f);
      k.fused_instructions += n;
      k.instructions += n;
      if (IsMultiOutputFusion(*i)) ++k.multi_output;
      switch (i->attrs().fusion_kind) {
        case FusionKind::kLoop: ++k.loop; break;
        case FusionKind::kInput: ++k.input; break;
        case FusionKind::kOutput: ++k.output; break;
        case FusionKind::kCustom: ++k.custom; break;
      }
      continue;
    }
    if (IsKernelFree(*i)) continue;
    if (CallsSequentially(*i)) {
      ++k.control;
      continue;
    }
    ++k.instructions;
    ++k.kernels;
    ++k.other;
  }
  return k;
}

KernelCounts CountKernels(const HloModule& module) {
  KernelCounts k;
  CallGraph graph(module);
  for (const HloComputation* c : graph.sequential_computations()) k.Add(CountKernels(*c));
  return k;
}

namespace {

std::string FusionLine(const HloInstruction& f) {
  std::vector<std::string> ops;
  for (const HloInstruction* i : f.fused_computation()->MakeInstructionPostOrder())
    if (i->opcode() != HloOpcode::kParameter && i->opcode() != HloOpcode::kTuple)
      ops.push_back(std::string(HloOpcodeString(i->opcode())));
  std::string list = StrJoin(ops, ",");
  if (list.size() > 60) list = list.substr(0, 57) + "...";
  std::string shape = f.shape().IsTuple() ? StrCat(f.shape().tuple_shapes_size(), " outputs")
                                          : f.shape().ToString(false);
  char buf[256];
  std::snprintf(buf, sizeof(buf), "    %%%-24s %-7s %-13s %3lld ops  %-22s %s\n", f.name().c_str(),
                std::string(FusionKindString(f.attrs().fusion_kind)).c_str(),
                IsMultiOutputFusion(f) ? "multi-output" : "",
                static_cast<long long>(FusedInstructionCount(f)), shape.c_str(), list.c_str());
  return buf;
}

}  // namespace

std::string FusionSummary(const HloModule& module) {
  CallGraph graph(module);
  KernelCounts total;
  std::string body, attention_lines;
  int64_t attention = 0, backward = 0;
  for (const HloComputation* c : graph.sequential_computations()) {
    KernelCounts k = CountKernels(*c);
    total.Add(k);
    body += StrCat("  ", c->name(), ": ", k.instructions, " instructions -> ", k.kernels,
                   " kernels (", k.ToString(), ")\n");
    for (const HloInstruction* i : c->MakeInstructionPostOrder()) {
      if (IsFusion(*i)) body += FusionLine(*i);
      if (IsAttentionCall(*i) || IsAttentionBackwardCall(*i)) {
        ++(IsAttentionCall(*i) ? attention : backward);
        StatusOr<AttentionConfig> config = AttentionConfigOf(*i);
        attention_lines += StrCat("    %", i->name(), "  ", config.ok() ? config->ToString() : config.status().message(), "\n");
      }
    }
  }
  std::string out = StrCat("kernels: ", total.instructions, " instructions -> ", total.kernels, " kernels (",
                           total.fusions, " fusions: ", total.ToString(), ")\n", body);
  if (attention + backward > 0)
    out += StrCat("attention: ", attention, " fused", backward ? StrCat(", ", backward, " backward fused") : "", "\n",
                  attention_lines);
  return out;
}

std::string CompileSummary(const HloModule& module, const BufferAssignment* assignment) {
  std::string s = FusionSummary(module);
  if (assignment) s += assignment->stats().ToString() + "\n";
  return s;
}

}  // namespace kiln
