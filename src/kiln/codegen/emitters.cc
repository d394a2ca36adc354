// Choosing an emitter, default configs and autotuning candidates.
#include "kiln/codegen/emitters.h"

#include <algorithm>
#include <set>

#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_ops.h"
#include "kiln/codegen/emitters_internal.h"
#include "kiln/codegen/fusion_analysis.h"
#include "kiln/codegen/reduction_common.h"

namespace kiln::codegen {

// Defined by the emitters.
StatusOr<KernelConfig> ResolveRowConfig(const ReductionPlan& plan, const DeviceSpec& device,
                                        const KernelConfig& config);
StatusOr<KernelConfig> ResolveColumnConfig(const ReductionPlan& plan, const DeviceSpec& device,
                                           const KernelConfig& config);
StatusOr<KernelConfig> ResolveTransposeConfig(const DeviceSpec& device, const KernelConfig& config);

std::string_view EmitterKindName(EmitterKind kind) {
  switch (kind) {
    case EmitterKind::kLoop: return "loop";
    case EmitterKind::kRowReduction: return "row_reduction";
    case EmitterKind::kColumnReduction: return "column_reduction";
    case EmitterKind::kTranspose: return "transpose";
    case EmitterKind::kDynamicUpdateSliceInPlace: return "dus_in_place";
    case EmitterKind::kScatter: return "scatter";
    case EmitterKind::kRngBitGenerator: return "rng_bit_generator";
    case EmitterKind::kCholesky: return "cholesky";
    case EmitterKind::kScan: return "scan";
    case EmitterKind::kTriangularSolve: return "triangular_solve";
    case EmitterKind::kSort: return "sort";
  }
  return "?";
}

namespace {

// Opcodes the elemental emitter computes (besides ElementalOps).
bool IsElementalOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kBroadcast:
    case HloOpcode::kReshape: case HloOpcode::kBitcast: case HloOpcode::kTranspose:
    case HloOpcode::kSlice: case HloOpcode::kReverse: case HloOpcode::kIota: case HloOpcode::kCopy:
    case HloOpcode::kPad: case HloOpcode::kConcatenate: case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice: case HloOpcode::kReduce: case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement: case HloOpcode::kMap: case HloOpcode::kGather:
    case HloOpcode::kReduceWindow: case HloOpcode::kSelectAndScatter: case HloOpcode::kDot:
    case HloOpcode::kConvolution:
      return true;
    default:
      return ElementalOps::Supports(op);
  }
}

bool SameOutputDims(const FusionView& view) {
  for (const KernelOutput& o : view.outputs)
    if (o.shape.dimensions() != view.outputs[0].shape.dimensions()) return false;
  return true;
}

bool LoopCanRun(const FusionView& view) {
  return SameOutputDims(view) &&
         ReduceRecomputeFactor(view, view.outputs[0].shape.num_elements()) <= 64;
}

bool IsInPlaceDus(const FusionView& view) { return InPlaceDusOutput(view) >= 0; }

}  // namespace

StatusOr<EmitterKind> ChooseEmitter(const HloInstruction& instr) {
  if (instr.opcode() == HloOpcode::kScatter) return EmitterKind::kScatter;
  if (instr.opcode() == HloOpcode::kRngBitGenerator) return EmitterKind::kRngBitGenerator;
  if (instr.opcode() == HloOpcode::kCholesky) {
    KILN_RETURN_IF_ERROR(CheckCholesky(instr));
    return EmitterKind::kCholesky;
  }
  if (instr.opcode() == HloOpcode::kTriangularSolve) {
    KILN_RETURN_IF_ERROR(CheckTriangularSolve(instr));
    return EmitterKind::kTriangularSolve;
  }
  if (instr.opcode() == HloOpcode::kSort) {
    KILN_RETURN_IF_ERROR(CheckSort(instr));
    return EmitterKind::kSort;
  }
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  for (const HloInstruction* i : view.body)
    if (!IsElementalOpcode(i->opcode()))
      return Unimplemented("no kernel emitter computes ", HloOpcodeString(i->opcode()), " (%", i->name(),
                           ") inside a fusion");
  if (view.outputs.size() == 1 && view.outputs[0].tuple_index < 0 && view.outputs[0].value != nullptr &&
      MatchScan(*view.outputs[0].value) &&
      (view.computation == nullptr || view.outputs[0].value->user_count() == 0))
    return EmitterKind::kScan;
  bool has_reduce = false;
  for (const HloInstruction* i : view.body) has_reduce |= i->opcode() == HloOpcode::kReduce;
  if (has_reduce) {
    StatusOr<ReductionPlan> plan = MakeReductionPlan(instr);
    if (plan.ok()) {
      if (plan->ra.is_row()) return EmitterKind::kRowReduction;
      if (plan->passes == 1) return EmitterKind::kColumnReduction;
    }
    if (LoopCanRun(view)) return EmitterKind::kLoop;
    return Unimplemented("%", instr.name(), ": ", plan.ok() ? "column reduction with dependent passes"
                                                             : plan.status().message());
  }
  if (IsInPlaceDus(view)) return EmitterKind::kDynamicUpdateSliceInPlace;
  if (AnalyzeTranspose(view).ok()) return EmitterKind::kTranspose;
  if (!SameOutputDims(view))
    return Unimplemented("%", instr.name(), ": outputs of different dimensions in one loop fusion");
  return EmitterKind::kLoop;
}

StatusOr<KernelSpec> EmitWith(EmitterKind kind, const HloInstruction& instr,
                              const DeviceSpec& device, const KernelConfig& config) {
  switch (kind) {
    case EmitterKind::kLoop: return EmitLoop(instr, device, config);
    case EmitterKind::kRowReduction: return EmitRowReduction(instr, device, config);
    case EmitterKind::kColumnReduction: return EmitColumnReduction(instr, device, config);
    case EmitterKind::kTranspose: return EmitTranspose(instr, device, config);
    case EmitterKind::kDynamicUpdateSliceInPlace:
      return EmitDynamicUpdateSliceInPlace(instr, device, config);
    case EmitterKind::kScatter: return EmitScatter(instr, device, config);
    case EmitterKind::kRngBitGenerator: return EmitRngBitGenerator(instr, device, config);
    case EmitterKind::kCholesky: return EmitCholesky(instr, device, config);
    case EmitterKind::kTriangularSolve: return EmitTriangularSolve(instr, device, config);
    case EmitterKind::kSort: return EmitSort(instr, device, config);
    case EmitterKind::kScan: return EmitScan(instr, device, config);
  }
  return Internal("bad emitter kind");
}

StatusOr<KernelSpec> EmitKernel(const HloInstruction& instr, const DeviceSpec& device,
                                const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(EmitterKind kind, ChooseEmitter(instr));
  StatusOr<KernelSpec> spec = EmitWith(kind, instr, device, config);
  if (spec.ok() || kind == EmitterKind::kLoop || spec.status().code() != StatusCode::kUnimplemented)
    return spec;
  // A specialized emitter declined (e.g. a reduce read at another row): the generic loop.
  StatusOr<FusionView> view = MakeFusionView(instr);
  if (view.ok() && LoopCanRun(*view)) {
    StatusOr<KernelSpec> loop = EmitLoop(instr, device, KernelConfig{});
    if (loop.ok()) return loop;
  }
  return spec;
}

StatusOr<KernelConfig> DefaultConfig(EmitterKind kind, const HloInstruction& instr,
                                     const DeviceSpec& device) {
  switch (kind) {
    case EmitterKind::kLoop: {
      KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
      return ResolveLoopConfig(view, device, KernelConfig{});
    }
    case EmitterKind::kRowReduction: {
      KILN_ASSIGN_OR_RETURN(ReductionPlan plan, MakeReductionPlan(instr));
      return ResolveRowConfig(plan, device, KernelConfig{});
    }
    case EmitterKind::kColumnReduction: {
      KILN_ASSIGN_OR_RETURN(ReductionPlan plan, MakeReductionPlan(instr));
      return ResolveColumnConfig(plan, device, KernelConfig{});
    }
    case EmitterKind::kTranspose:
      return ResolveTransposeConfig(device, KernelConfig{});
    case EmitterKind::kDynamicUpdateSliceInPlace:
    case EmitterKind::kScatter:
    case EmitterKind::kRngBitGenerator:
    case EmitterKind::kCholesky:
    case EmitterKind::kTriangularSolve:
    case EmitterKind::kSort:
    case EmitterKind::kScan: {
      KILN_ASSIGN_OR_RETURN(KernelSpec spec, EmitWith(kind, instr, device, KernelConfig{}));
      return spec.config;
    }
  }
  return Internal("bad emitter kind");
}

StatusOr<KernelConfig> DefaultConfig(const HloInstruction& instr, const DeviceSpec& device) {
  KILN_ASSIGN_OR_RETURN(EmitterKind kind, ChooseEmitter(instr));
  return DefaultConfig(kind, instr, device);
}

StatusOr<std::vector<KernelConfig>> CandidateConfigs(const HloInstruction& instr,
                                                     const DeviceSpec& device) {
  KILN_ASSIGN_OR_RETURN(EmitterKind kind, ChooseEmitter(instr));
  KILN_ASSIGN_OR_RETURN(KernelConfig def, DefaultConfig(kind, instr, device));
  std::vector<KernelConfig> raw = {def};
  auto halves = [](int v) { return std::vector<int>{v, std::max(1, v / 2)}; };
  switch (kind) {
    case EmitterKind::kLoop:
      for (int b : {128, 256, 512})
        for (int v : halves(def.vector_width))
          for (int u : {1, 2, 4}) raw.push_back(KernelConfig{b, v, u, 0, 0, 0});
      break;
    case EmitterKind::kRowReduction: {
      const int tpr = def.block_size / def.rows_per_block;
      for (int t : {tpr / 2, tpr, tpr * 2}) {
        if (t < 1 || t > 1024) continue;
        for (int b : {128, 256, 512, 1024}) {
          if (b < t || b < 32 || b > device.max_threads_per_block) continue;
          for (int v : halves(def.vector_width))
            for (int s : {1, def.split})
              for (int u : {def.unroll, 1}) raw.push_back(KernelConfig{b, v, u, b / t, s, 0});
        }
      }
      break;
    }
    case EmitterKind::kColumnReduction:
      for (int b : {128, 256, 512})
        for (int v : halves(def.vector_width))
          for (int s : {1, def.split, def.split * 2})
            for (int u : {def.unroll, 1}) raw.push_back(KernelConfig{b, v, u, 0, s, 0});
      break;
    case EmitterKind::kTranspose:
      for (int t : {32, 64})
        for (int b : {128, 256, 512}) raw.push_back(KernelConfig{b, 1, 0, 0, 0, t});
      break;
    case EmitterKind::kDynamicUpdateSliceInPlace:
      for (int b : {128, 256, 512})
        for (int v : halves(def.vector_width)) raw.push_back(KernelConfig{b, v, 1, 0, 0, 0});
      break;
    case EmitterKind::kScatter:
    case EmitterKind::kRngBitGenerator:
      for (int b : {128, 256, 512, 1024}) raw.push_back(KernelConfig{b, 1, 1, 0, 0, 0});
      break;
    case EmitterKind::kCholesky:
    case EmitterKind::kTriangularSolve:
      // tile 0: one thread per matrix / right-hand side; > 0: blocked (emit_linalg.cc).
      for (int b : {32, 64, 128, 256}) raw.push_back(KernelConfig{b, 1, 1, 0, 0, def.tile});
      if (def.tile > 0)
        for (int t : {16, 64}) raw.push_back(KernelConfig{def.block_size, 1, 1, 0, 0, t});
      break;
    case EmitterKind::kSort:
      for (int b : {64, 128, 256, 512}) raw.push_back(KernelConfig{b, 1, 1, 0, 0, 0});
      break;
    case EmitterKind::kScan:
      for (int b : {128, 256, 512})
        for (int t : {def.tile, std::max(1, def.tile / 4),
                      static_cast<int>(std::min<int64_t>(int64_t{def.tile} * 4, 1 << 30))})
          raw.push_back(KernelConfig{b, 1, 1, 0, 0, t});
      break;
  }
  std::vector<KernelConfig> out;
  std::set<std::string> seen;
  for (const KernelConfig& c : raw) {
    StatusOr<KernelSpec> spec = EmitWith(kind, instr, device, c);
    if (!spec.ok()) continue;
    // The emitter's resolved config is the candidate (unset fields filled in).
    if (seen.insert(spec->config.ToString()).second) out.push_back(spec->config);
  }
  if (out.empty()) return Unimplemented("no config of the ", EmitterKindName(kind), " emitter works for %", instr.name());
  return out;
}

}  // namespace kiln::codegen
