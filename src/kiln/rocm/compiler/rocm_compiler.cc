#include "kiln/rocm/compiler/rocm_compiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "kiln/autotune/config.h"
#include "kiln/base/strings.h"
#include "kiln/base/thread_pool.h"
#include "kiln/codegen/collective_lowering.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/gpu_fusion_policy.h"
#include "kiln/eval/collective_groups.h"
#include "kiln/eval/collective_ops.h"
#include "kiln/eval/communicator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/async_inliner.h"
#include "kiln/passes/batch_norm_expander.h"
#include "kiln/passes/map_expander.h"
#include "kiln/passes/algebraic_simplifier.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/compile_summary.h"
#include "kiln/passes/compile_tail.h"
#include "kiln/passes/fusion_passes.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/layout_normalization.h"
#include "kiln/passes/simple_passes.h"
#include "kiln/passes/simplification_pipeline.h"
#include "kiln/passes/unfuse_all.h"
#include "kiln/passes/while_loop_simplifier.h"
#include "kiln/rocm/code_object.h"
#include "kiln/rocm/rocm_kernel_compiler.h"

namespace kiln::rocm {

// Note [Collectives on RCCL]
//   RCCL is NCCL's API under NCCL's names, so the rocm compiler lowers collectives by the rules
//   the cuda compiler follows, shared in codegen/collective_lowering.h rather than restated:
//   IsCollectiveThunkOp / IsCollectiveDoneOp pick the instructions, CollectiveThunkApplies says
//   which become RCCL thunks (the rest run on the host evaluator, one-member groups only, as on
//   cuda), NcclReduces whether RCCL reduces an all-reduce / reduce-scatter itself (sum,
//   product, min, max on its ten types; complex sums as pairs of reals), and
//   CollectiveKernelsFor, in the HIP dialect, the kernels of what it cannot do alone: a
//   reduction RCCL lacks (Note [Reductions NCCL lacks]) and ragged-all-to-all (Note [Ragged
//   all-to-all on NCCL]). Those kernels are compiled like every other (hipRTC or clang), one
//   code object per collective, and the compile checks that their entries are in it. The thunk
//   lists the RCCL calls it makes and the largest group it has in the module header's grid
//   (what sizes the gathering ops' workspace). Nothing runs them (Note [Untested ROCm
//   execution] in rocm/rocm_device.h): RocmExecutable has no executor yet.
//
// Note [Deviceless autotuning]
//   With a factory in RocmCompileOptions::autotune, the pass "autotune" runs the neutral
//   Autotuner after fusion, as the cuda compiler's autotuning step does: every dot, convolution
//   and fusion outside fusion bodies is grouped by fingerprint and decided under the options'
//   level, allow-list and forced configs. There is no AMD GPU to measure on, so a decision is a
//   cache hit -- an entry whose key has the target's description (gfx arch, CUs, runtime and
//   library versions: RocmTargetDescription) and the backends' versions, checked with the
//   owning backend's CheckConfig before it is applied -- or the backend's default (the only
//   candidate, or the fallback of a group that would need measuring). The choice sits in the
//   instruction's backend_config, where thunk emission reads it: a fusion's launch
//   configuration, a dot's rocBLAS solution or hipBLASLt algorithm (or fission), a
//   convolution's MIOpen mode and solution. `--stats` counts both kinds ("autotune: 3 from
//   cache, 5 defaults, no device to measure").

namespace {

using codegen::CollectiveKernelSource;
using codegen::CollectiveKernelsFor;
using codegen::CollectiveThunkApplies;
using codegen::CombineEntry;
using codegen::GpuFusionOptions;
using codegen::GpuFusionPolicy;
using codegen::IsCollectiveDoneOp;
using codegen::IsCollectiveThunkOp;
using codegen::kRaggedEntry;
using codegen::NcclReduces;

class FusionPass : public HloPass {
 public:
  explicit FusionPass(bool multi_output) : multi_output_(multi_output) {}
  std::string_view name() const override { return multi_output_ ? "multi-output-fusion" : "instruction-fusion"; }
  StatusOr<bool> Run(HloModule& module) override {
    if (multi_output_) return MultiOutputFusion(policy_).Run(module);
    return InstructionFusion(policy_).Run(module);
  }

 private:
  GpuFusionPolicy policy_;
  bool multi_output_;
};

// As the GPU compiler's: fusions no emitter takes are undone and re-fused without
// normalization fusion (Note [Normalization fusion] in codegen/gpu_fusion_policy.h).
class FusionLegalization : public HloPass {
 public:
  explicit FusionLegalization(codegen::DeviceSpec device) : device_(std::move(device)) {}
  std::string_view name() const override { return "fusion-legalization"; }
  StatusOr<bool> Run(HloModule& module) override {
    KILN_ASSIGN_OR_RETURN(bool changed, UnfuseRejected(module));
    if (!changed) return false;
    GpuFusionOptions conservative = GpuFusionPolicy::DefaultOptions();
    conservative.normalization_fusion = false;
    GpuFusionPolicy policy(conservative);
    KILN_RETURN_IF_ERROR(InstructionFusion(policy).Run(module).status());
    KILN_RETURN_IF_ERROR(UnfuseRejected(module).status());
    return true;
  }

 private:
  StatusOr<bool> UnfuseRejected(HloModule& module) {
    bool changed = false;
    CallGraph graph(module);
    for (HloComputation* c : graph.sequential_computations())
      for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
        if (instr->opcode() != HloOpcode::kFusion) continue;
        StatusOr<codegen::KernelSpec> spec = codegen::EmitKernel(*instr, device_);
        if (spec.ok() || spec.status().code() != StatusCode::kUnimplemented) continue;
        KILN_RETURN_IF_ERROR(Unfuse(instr));
        changed = true;
      }
    if (changed) module.RemoveUnreachableComputations();
    return changed;
  }
  codegen::DeviceSpec device_;
};

// The autotuning step (Note [Deviceless autotuning]).
class AutotunePass : public HloPass {
 public:
  AutotunePass(const RocmAutotuneOptions& options, std::shared_ptr<autotune::AutotuneReport>* report)
      : options_(options), report_(report) {}
  std::string_view name() const override { return "autotune"; }
  StatusOr<bool> Run(HloModule& module) override {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<autotune::Autotuner> tuner,
                          autotune::Autotuner::Create(options_.factory, options_.target, options_.device,
                                                      options_.cache, options_.options));
    KILN_ASSIGN_OR_RETURN(autotune::AutotuneReport report, tuner->Run(module));
    bool changed = false;
    for (const autotune::InstructionReport& g : report.groups)
      changed |= g.chosen.has_value() && g.source != autotune::ChoiceSource::kMissing;
    *report_ = std::make_shared<autotune::AutotuneReport>(std::move(report));
    return changed;
  }

 private:
  const RocmAutotuneOptions& options_;
  std::shared_ptr<autotune::AutotuneReport>* report_;
};

// The library choice the autotuner wrote into a dot or convolution (nullopt: none).
std::optional<autotune::Config> LibraryChoice(const HloInstruction& instr) {
  if (instr.backend_config().empty()) return std::nullopt;
  StatusOr<autotune::Config> c = autotune::ReadConfigFromBackendConfig(instr);
  if (!c.ok()) return std::nullopt;
  return *c;
}

int64_t IntParam(const autotune::Config& c, const char* name) {
  const nlohmann::json& p = c.params();
  return p.is_object() && p.contains(name) && p[name].is_number_integer() ? p[name].get<int64_t>() : 0;
}

bool IsLibraryFloat(PrimitiveType t) {
  return t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF32 ||
         t == PrimitiveType::kF64 || t == PrimitiveType::kC64 || t == PrimitiveType::kC128;
}

int64_t Product(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= s.dimensions(d);
  return p;
}

// "rocblas_gemm_ex f32 x f32 -> f32, batch 1, m 128, n 256, k 64"
std::string GemmDetail(const HloInstruction& dot) {
  const Shape& a = dot.operand(0)->shape();
  const Shape& b = dot.operand(1)->shape();
  const DotDimensionNumbers& d = *dot.attrs().dot_dimension_numbers;
  const int64_t batch = Product(a, d.lhs_batch_dimensions);
  const int64_t k = Product(a, d.lhs_contracting_dimensions);
  const int64_t m = a.num_elements() / std::max<int64_t>(1, batch * k);
  const int64_t n = b.num_elements() / std::max<int64_t>(1, batch * k);
  return StrCat(batch > 1 ? "rocblas_gemm_strided_batched_ex " : "rocblas_gemm_ex ",
                PrimitiveTypeName(a.element_type()), " x ", PrimitiveTypeName(b.element_type()), " -> ",
                PrimitiveTypeName(dot.shape().element_type()), ", batch ", batch, ", m ", m, ", n ", n, ", k ", k);
}

// The GEMM with the autotuner's choice: rocBLAS' solution, hipBLASLt's heuristic algorithm, or
// fission (the GEMM, then its consumer as a generated kernel).
std::string TunedGemmDetail(const HloInstruction& dot) {
  std::string d = GemmDetail(dot);
  std::optional<autotune::Config> c = LibraryChoice(dot);
  if (!c) return d + " (or hipBLASLt, by autotuning)";
  if (c->backend() == "hipblaslt") {
    d = "hipblasLtMatmul" + d.substr(d.find(' '));
    return StrCat(d, ", heuristic algorithm ", IntParam(*c, "index"), " of ", IntParam(*c, "heuristic"), " (autotune)");
  }
  if (c->backend() == "fission") return d + ", rocBLAS' default solution, its consumer a generated kernel (fission, autotune)";
  const int64_t solution = IntParam(*c, "solution");
  return StrCat(d, ", solution ", solution, solution == 0 ? " (the library's default, autotune)" : " (autotune)");
}

std::string ConvDetail(const HloInstruction& conv) {
  std::string mode = "find, with fallback algorithms";
  if (std::optional<autotune::Config> c = LibraryChoice(conv); c && c->backend() == "miopen") {
    const nlohmann::json& p = c->params();
    const bool fallback = p.contains("fallback") && p["fallback"].is_boolean() && p["fallback"].get<bool>();
    const std::string m = p.contains("mode") && p["mode"].is_string() ? p["mode"].get<std::string>() : "immediate";
    mode = StrCat(m, " mode, solution ", IntParam(*c, "solution"), fallback ? ", with" : ", without",
                  " fallback solutions (autotune)");
  }
  return StrCat("miopenConvolutionForward (", mode, ") ", conv.operand(0)->shape().ToString(false), " * ",
                conv.operand(1)->shape().ToString(false), " -> ", conv.shape().ToString(false));
}

// What a collective thunk does on RCCL (Note [Collectives on RCCL]).
std::string CollectiveDetail(const HloInstruction& instr, const HloInstruction& op, bool device_reduction,
                             int64_t max_group) {
  const HloOpcode sync = CollectiveSyncOpcode(op.opcode());
  std::string reduction;
  if (!op.called_computations().empty())
    if (std::optional<ReductionKind> r = MatchReduction(*op.called_computations()[0]))
      reduction = std::string(ReductionKindString(*r));
  std::string calls;
  switch (sync) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter:
      calls = device_reduction
                  ? StrCat("ncclAllGather of every member's operand + kiln_combine_N with ",
                           op.called_computations()[0]->name(), " (Note [Reductions NCCL lacks])")
                  : StrCat(sync == HloOpcode::kAllReduce ? "ncclAllReduce " : "ncclReduceScatter ", reduction);
      break;
    case HloOpcode::kAllGather: calls = "ncclAllGather"; break;
    case HloOpcode::kAllToAll:
      calls = op.shape().IsTuple() ? "ncclSend / ncclRecv with every member in one group" : "ncclAllToAll";
      break;
    case HloOpcode::kRaggedAllToAll:
      calls = "four ncclAllGathers in one group + kiln_ragged (Note [Ragged all-to-all on NCCL])";
      break;
    case HloOpcode::kCollectivePermute: calls = "ncclSend / ncclRecv in one group"; break;
    case HloOpcode::kCollectiveBroadcast: calls = "ncclBroadcast from the group's first member"; break;
    case HloOpcode::kSend: calls = "ncclSend, issued with its channel's receive"; break;
    case HloOpcode::kRecv: calls = "ncclRecv"; break;
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId: calls = "the participant's id, a 4-byte copy"; break;
    default: calls = std::string(HloOpcodeString(sync)); break;
  }
  std::vector<std::string> shapes;
  for (const HloInstruction* o : op.operands())
    if (o->shape().IsArray()) shapes.push_back(o->shape().ToString(false));
  const bool async = instr.opcode() != op.opcode() || instr.opcode() == HloOpcode::kAllReduceStart ||
                     instr.opcode() == HloOpcode::kAllGatherStart || instr.opcode() == HloOpcode::kCollectivePermuteStart;
  const bool grouped = sync != HloOpcode::kReplicaId && sync != HloOpcode::kPartitionId &&
                       sync != HloOpcode::kCollectivePermute && sync != HloOpcode::kSend && sync != HloOpcode::kRecv;
  return StrCat("rccl ", calls, " ", StrJoin(shapes, ", "), shapes.empty() ? "" : " ", "-> ", op.shape().ToString(false),
                grouped ? StrCat(", groups of ", max_group) : "",
                async ? ", async (on the collective stream until its -done)" : "");
}

bool IsFree(HloOpcode op) {
  switch (op) {
    case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast: case HloOpcode::kAfterAll:
    case HloOpcode::kOptimizationBarrier: case HloOpcode::kAddDependency:
      return true;
    default:
      return false;
  }
}

std::string Ms(double seconds) { return RoundTripDouble(std::round(seconds * 1e5) / 100); }

}  // namespace

std::string_view RocmThunkKindName(RocmThunk::Kind kind) {
  switch (kind) {
    case RocmThunk::Kind::kKernel: return "kernel";
    case RocmThunk::Kind::kGemm: return "gemm";
    case RocmThunk::Kind::kConvolution: return "convolution";
    case RocmThunk::Kind::kCollective: return "collective";
    case RocmThunk::Kind::kCollectiveDone: return "collective-done";
    case RocmThunk::Kind::kWhile: return "while";
    case RocmThunk::Kind::kConditional: return "conditional";
    case RocmThunk::Kind::kCall: return "call";
    case RocmThunk::Kind::kHostFallback: return "host";
  }
  return "?";
}

Status CheckRocmSupported(const HloModule& module, bool allow_host_fallback) {
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions()) {
      const HloOpcode op = i->opcode();
      if (op == HloOpcode::kCustomCall && !allow_host_fallback) {
        return Unimplemented("rocm: custom-call %", i->name(), " (target \"", i->attrs().custom_call_target,
                             "\") has no ROCm implementation");
      }
      if (op == HloOpcode::kFft && !allow_host_fallback)
        return Unimplemented("rocm: fft %", i->name(), ": kiln has no rocFFT binding");
      const bool host_transfer = (op == HloOpcode::kSend || op == HloOpcode::kRecv || op == HloOpcode::kSendDone ||
                                  op == HloOpcode::kRecvDone) && i->attrs().is_host_transfer;
      if (op == HloOpcode::kInfeed || op == HloOpcode::kOutfeed || host_transfer) {
        return Unimplemented("rocm: %", i->name(), " (", HloOpcodeString(op), host_transfer ? ", a host transfer" : "",
                             ") is not supported by the rocm backend");
      }
    }
  return OkStatus();
}

StatusOr<codegen::KernelConfig> TunedKernelConfig(const HloInstruction& instr) {
  if (instr.backend_config().empty()) return codegen::KernelConfig{};
  StatusOr<autotune::Config> config = autotune::ReadConfigFromBackendConfig(instr);
  if (!config.ok() || config->backend() != "codegen") return codegen::KernelConfig{};
  const nlohmann::json& p = config->params();
  if (!p.is_object() || !p.contains("config") || !p["config"].is_string())
    return InvalidArgument("rocm: malformed codegen choice ", config->ToString(), " on %", instr.name());
  return codegen::KernelConfig::Parse(p["config"].get<std::string>());
}

std::string RocmCompileStats::AutotuneLine() const {
  if (!autotune) return "";
  using autotune::ChoiceSource;
  const int defaults = autotune->CountSource(ChoiceSource::kDefault) + autotune->CountSource(ChoiceSource::kFallback) +
                       autotune->CountSource(ChoiceSource::kOnlyCandidate);
  std::string s = StrCat("autotune: ");
  if (int tuned = autotune->CountSource(ChoiceSource::kTuned); tuned > 0) s += StrCat(tuned, " tuned, ");
  s += StrCat(autotune->CountSource(ChoiceSource::kCache), " from cache, ", defaults, " defaults");
  if (int forced = autotune->CountSource(ChoiceSource::kForced); forced > 0) s += StrCat(", ", forced, " forced");
  if (int missing = autotune->CountSource(ChoiceSource::kMissing); missing > 0) s += StrCat(", ", missing, " missing");
  if (!autotune_measured) s += ", no device to measure";
  s += StrCat(" (", autotune->groups.size(), " distinct of ", autotune->instructions, " instructions)");
  return s;
}

std::string RocmCompileStats::ToString() const {
  std::string s = "passes:\n";
  for (const PassStats& p : passes)
    s += StrCat("  ", p.name, ": ", Ms(p.seconds), " ms", p.changed ? " (changed)" : "", ", ", p.instructions_before,
                " -> ", p.instructions_after, " instructions\n");
  s += fusion_summary;
  if (!s.empty() && s.back() != '\n') s += "\n";
  s += memory.ToString() + "\n";
  s += "thunks:";
  for (const auto& [k, n] : thunks_by_kind) s += StrCat(" ", k, " ", n);
  if (!host_fallbacks.empty()) {
    s += "\non the host (evaluator):";
    for (const auto& [k, n] : host_fallbacks) s += StrCat(" ", k, " x", n);
  }
  if (compiler.empty()) {
    s += "\nkernels: none\n";
  } else {
    s += StrCat("\nkernels: ", kernels, " generated (", kernels_from_cache, " from the hsaco cache), compiled by ", compiler,
                " in ", Ms(kernel_compile_seconds), " ms\n");
  }
  if (min_waves_per_simd > 0) {
    s += StrCat("occupancy: lowest ", min_waves_per_simd, " waves/SIMD (", min_occupancy_kernel, "); limited by");
    for (const auto& [k, n] : occupancy_limiters) s += StrCat(" ", k, " x", n);
    s += "\n";
  }
  if (autotune) s += AutotuneLine() + "\n";
  s += StrCat("compile time: ", Ms(compile_seconds), " ms\n");
  return s;
}

std::string RocmCompiledModule::ThunkListing() const {
  std::string out;
  for (const RocmThunk& t : thunks)
    out += StrCat(RocmThunkKindName(t.kind), " %", t.instruction, " [", t.computation, "]: ", t.detail, "\n");
  return out;
}

StatusOr<std::unique_ptr<RocmCompiledModule>> RocmCompiler::Compile(std::unique_ptr<HloModule> module,
                                                                    const RocmCompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (!module || !module->entry_computation()) return InvalidArgument("rocm compiler: no module or no entry computation");
  if (!options.device.is_hip()) {
    return InvalidArgument("rocm compiler: the device spec '", options.device.name, "' is not an AMD (HIP) one");
  }
  if (options.verify_input) {
    Status s = VerifyModule(*module);
    if (!s.ok()) return InvalidArgument("rocm compiler: the module does not verify:\n", s.message());
  } else {
    Status s = CheckOperandsInRange(*module);
    if (!s.ok()) return InvalidArgument("rocm compiler: the module is invalid: ", s.message());
  }
  KILN_RETURN_IF_ERROR(CheckRocmSupported(*module, options.allow_host_fallback));
  // Fail on an unsupported target before any pass runs.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HsacoCompiler> hsaco, HsacoCompiler::Create(options.hsaco));
  KILN_RETURN_IF_ERROR(hsaco->ChoosePath(options.device.arch(), options.path).status());

  PipelineOptions po;
  po.dump_dir = options.dump_dir;
  HloPassPipeline pipeline("rocm", po);
  pipeline.AddPass<AsyncInliner>();  // Note [Async wrappers]
  pipeline.AddPass<BatchNormExpander>();  // Note [Batch norm expansion]
  pipeline.AddPass<MapExpander>();  // Note [Map expansion]
  pipeline.AddPass<UnfuseAll>();
  pipeline.AddPass<LayoutNormalization>();
  SimplificationOptions so;
  so.hoist_scan_dots = true;
  so.hoist_loop_invariants = true;
  so.canonicalize_dots = true;
  AddSimplificationPasses(pipeline, so);
  pipeline.AddPass<AlgebraicSimplifier>();
  pipeline.AddPass<CommonSubexpressionElimination>();
  pipeline.AddPass<DeadCodeElimination>();
  pipeline.AddPass<FlattenCallGraph>();
  pipeline.AddPass<WhileTripCountAnnotator>();
  pipeline.AddPass<FusionPass>(/*multi_output=*/false);
  pipeline.AddPass<FusionPass>(/*multi_output=*/true);
  pipeline.AddPass<FusionLegalization>(options.device);
  pipeline.AddPass<DeadCodeElimination>();
  std::shared_ptr<autotune::AutotuneReport> autotune_report;
  if (options.autotune.enabled()) pipeline.AddPass<AutotunePass>(options.autotune, &autotune_report);
  KILN_RETURN_IF_ERROR(pipeline.Run(*module).status());

  auto out = std::make_unique<RocmCompiledModule>();
  out->stats.autotune = autotune_report;
  out->stats.autotune_measured = options.autotune.device != nullptr;
  // The run's grid (Note [Collectives on RCCL]): the module header's.
  const DeviceGrid grid{std::max<int64_t>(1, module->header().replica_count),
                        std::max<int64_t>(1, module->header().num_partitions)};
  std::vector<HsacoSource> collective_sources;  // their code objects follow the kernels' batches
  std::vector<std::pair<size_t, std::vector<std::string>>> collective_entries;  // (thunk, entries)
  auto host_fallback = [&](const HloInstruction& i, RocmThunk t, std::string_view why) -> Status {
    std::string what(HloOpcodeString(i.opcode()));
    if (i.opcode() == HloOpcode::kCustomCall) what = StrCat("custom-call ", i.attrs().custom_call_target);
    if (!options.allow_host_fallback)
      return Unimplemented("rocm: %", i.name(), " (", what, ") has no device implementation: ", why);
    t.kind = RocmThunk::Kind::kHostFallback;
    t.detail = StrCat("on the host evaluator (", why, ")");
    out->thunks.push_back(std::move(t));
    ++out->stats.host_fallbacks[what];
    return OkStatus();
  };
  StepTimer timer(*module, "rocm", pipeline.stats());
  CompileTailOptions tail;
  tail.buffers.alignment = 256;
  tail.buffers.use_donated_parameters = false;
  tail.buffers.elementwise_state_updates = true;
  tail.context = "rocm compiler";
  KILN_ASSIGN_OR_RETURN(ScheduledModule scheduled, ScheduleAndAssignBuffers(*module, tail, timer));

  // Thunks and kernels, computation by computation (callees first), each in its schedule's
  // order (the order buffer assignment planned lifetimes for: what an executor must follow).
  CallGraph graph(*module);
  for (const HloComputation* c : graph.sequential_computations()) {
    std::vector<const HloInstruction*> order;
    if (scheduled.schedule->has_sequence(c)) {
      order = scheduled.schedule->sequence(c);
    } else {
      for (const HloInstruction* i : c->MakeInstructionPostOrder()) order.push_back(i);
    }
    for (const HloInstruction* i : order) {
      const HloOpcode op = i->opcode();
      if (IsFree(op)) continue;
      RocmThunk t;
      t.instruction = i->name();
      t.computation = c->name();
      if (op == HloOpcode::kWhile || op == HloOpcode::kConditional || op == HloOpcode::kCall) {
        t.kind = op == HloOpcode::kWhile ? RocmThunk::Kind::kWhile
                 : op == HloOpcode::kConditional ? RocmThunk::Kind::kConditional : RocmThunk::Kind::kCall;
        std::vector<std::string> names;
        for (const HloComputation* callee : i->called_computations()) names.push_back(callee->name());
        t.detail = StrCat("host-driven over ", StrJoin(names, ", "));
        out->thunks.push_back(std::move(t));
        continue;
      }
      if (IsCollectiveThunkOp(*i)) {
        // Note [Collectives on RCCL]
        if (Status applies = CollectiveThunkApplies(*i); !applies.ok()) {
          KILN_RETURN_IF_ERROR(host_fallback(*i, std::move(t), applies.message()));
          continue;
        }
        const HloInstruction& cop = UnwrapAsyncCollective(*i);
        const HloOpcode sync = CollectiveSyncOpcode(cop.opcode());
        const bool device_reduction =
            (sync == HloOpcode::kAllReduce || sync == HloOpcode::kReduceScatter) && !NcclReduces(cop);
        StatusOr<std::optional<CollectiveKernelSource>> kernels =
            CollectiveKernelsFor(cop, device_reduction, codegen::GpuDialect::kHip);
        if (!kernels.ok()) {
          if (kernels.status().code() != StatusCode::kUnimplemented) return kernels.status();
          KILN_RETURN_IF_ERROR(host_fallback(*i, std::move(t), kernels.status().message()));
          continue;
        }
        // The largest group: in the grid, or as its replica_groups state it (a module whose
        // header does not give the grid it was partitioned for).
        int64_t max_group = 1;
        for (int64_t d = 0; d < grid.num_devices(); ++d) {
          StatusOr<std::vector<int64_t>> g = CollectiveGroupOf(cop, grid, d);
          max_group = std::max<int64_t>(max_group, g.ok() ? static_cast<int64_t>(g->size()) : grid.num_devices());
        }
        if (cop.attrs().replica_groups)
          for (const std::vector<int64_t>& g : cop.attrs().replica_groups->Groups())
            max_group = std::max<int64_t>(max_group, static_cast<int64_t>(g.size()));
        t.kind = RocmThunk::Kind::kCollective;
        t.detail = CollectiveDetail(*i, cop, device_reduction, max_group);
        if (*kernels) {
          std::vector<std::string> entries;
          if (sync == HloOpcode::kRaggedAllToAll) {
            entries.push_back(kRaggedEntry);
          } else {
            for (int64_t k = 0; k < cop.operand_count(); ++k) entries.push_back(CombineEntry(k));
          }
          collective_entries.push_back({out->thunks.size(), std::move(entries)});
          collective_sources.push_back(HsacoSource{(*kernels)->name, (*kernels)->source, (*kernels)->headers});
        }
        out->thunks.push_back(std::move(t));
        continue;
      }
      if (IsCollectiveDoneOp(*i)) {
        t.kind = RocmThunk::Kind::kCollectiveDone;
        t.detail = i->operand_count() > 0 ? StrCat("waits for %", i->operand(0)->name()) : "waits for its start";
        out->thunks.push_back(std::move(t));
        continue;
      }
      if (op == HloOpcode::kDot && IsLibraryFloat(i->operand(0)->shape().element_type()) &&
          i->operand(0)->shape().element_type() == i->operand(1)->shape().element_type()) {
        t.kind = RocmThunk::Kind::kGemm;
        t.detail = TunedGemmDetail(*i);
        out->thunks.push_back(std::move(t));
        continue;
      }
      if (op == HloOpcode::kConvolution && IsLibraryFloat(i->operand(0)->shape().element_type()) &&
          i->operand(0)->shape().element_type() == i->operand(1)->shape().element_type()) {
        t.kind = RocmThunk::Kind::kConvolution;
        t.detail = ConvDetail(*i);
        out->thunks.push_back(std::move(t));
        continue;
      }
      KILN_ASSIGN_OR_RETURN(codegen::KernelConfig tuned, TunedKernelConfig(*i));
      StatusOr<codegen::KernelSpec> k = codegen::EmitKernel(*i, options.device, tuned);
      if (!k.ok() && k.status().code() == StatusCode::kUnimplemented && options.allow_host_fallback &&
          op != HloOpcode::kFusion) {
        KILN_RETURN_IF_ERROR(host_fallback(*i, std::move(t), k.status().message()));
        continue;
      }
      if (!k.ok()) {
        return Status(k.status().code(), StrCat("rocm: no kernel for %", i->name(), " (", HloOpcodeString(op),
                                                "): ", k.status().message()));
      }
      t.kind = RocmThunk::Kind::kKernel;
      t.detail = StrCat(k->emitter, " ", k->config.ToString(), ", ", k->launches.size(), " launch(es)");
      out->thunks.push_back(std::move(t));
      out->kernels.push_back(std::move(k).value());
    }
  }
  MakeEntriesUnique(out->kernels);
  timer.Done("thunk-emission");

  // Kernels to code objects: batches compiled in parallel.
  const size_t batch = static_cast<size_t>(std::max(1, options.kernels_per_code_object));
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t b = 0; b < out->kernels.size(); b += batch) ranges.push_back({b, std::min(out->kernels.size(), b + batch)});
  const size_t jobs = ranges.size() + collective_sources.size();
  out->code_objects.resize(jobs);
  std::vector<Status> errors(jobs);
  const auto kstart = std::chrono::steady_clock::now();
  auto compile_range = [&](int64_t r) {
    StatusOr<HsacoSource> source = r < static_cast<int64_t>(ranges.size()) ? StatusOr<HsacoSource>(HsacoSource{})
                                                                           : collective_sources[r - ranges.size()];
    if (r < static_cast<int64_t>(ranges.size())) {
      std::span<const codegen::KernelSpec> ks(out->kernels.data() + ranges[r].first, ranges[r].second - ranges[r].first);
      source = BatchKernelSource(ks, ranges.size() > 1 ? StrCat(module->name(), ".", r) : module->name());
    }
    if (!source.ok()) {
      errors[r] = source.status();
      return;
    }
    StatusOr<CompiledHsaco> co = hsaco->Compile(*source, options.device.arch(), options.path);
    if (!co.ok()) {
      errors[r] = co.status();
      return;
    }
    out->code_objects[r] = std::move(co).value();
  };
  const int threads = options.compile_threads > 0 ? options.compile_threads
                                                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (jobs > 1 && threads > 1) {
    ThreadPool pool(std::min<int>(threads - 1, static_cast<int>(jobs) - 1));
    pool.ParallelFor(static_cast<int64_t>(jobs), 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) compile_range(r);
    });
  } else {
    for (size_t r = 0; r < jobs; ++r) compile_range(static_cast<int64_t>(r));
  }
  for (const Status& s : errors) KILN_RETURN_IF_ERROR(s);
  out->stats.kernel_compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - kstart).count();
  timer.Done("kernel-compilation");
  // Targets without known CU limits (RDNA...) get the launch-bound check only.
  StatusOr<CuLimits> known_limits = CuLimitsFor(options.device.gfx_arch);
  const bool plan_occupancy = known_limits.ok();
  const CuLimits limits = plan_occupancy ? *known_limits : CuLimits{};
  for (size_t r = 0; r < ranges.size(); ++r) {
    const CompiledHsaco& co = out->code_objects[r];
    if (!co.log.empty()) {
      return Internal("rocm: the generated kernels of ", module->name(), " compiled with diagnostics:\n", co.log);
    }
    // Every entry point must be in its code object (what a launch looks up).
    KILN_ASSIGN_OR_RETURN(CodeObjectInfo info, InspectCodeObject(co.image));
    for (size_t k = ranges[r].first; k < ranges[r].second; ++k) {
      out->kernel_code_object.push_back(static_cast<int>(r));
      for (const std::string& e : out->kernels[k].Entries())
        if (info.Find(e) == nullptr) return Internal("rocm: entry ", e, " is missing from code object ", r);
      // Every launch must fit its entry's launch bounds and be resident (Note [CDNA occupancy]).
      KernelOccupancy lowest;
      for (const codegen::KernelLaunch& l : out->kernels[k].launches) {
        const runtime::Dim3& b = l.dims.block;
        const KernelMetadata& meta = *info.Find(l.entry);
        const int64_t threads = int64_t{b.x} * b.y * b.z;
        if (!plan_occupancy) {
          if (meta.max_flat_workgroup_size > 0 && threads > meta.max_flat_workgroup_size)
            return Internal("rocm: kernel ", l.entry, " is launched with workgroups of ", threads,
                            " work-items; its code object allows at most ", meta.max_flat_workgroup_size);
          continue;
        }
        // An impossible launch is a compiler bug (the emitters choose the block sizes).
        StatusOr<KernelOccupancy> occ = ComputeOccupancy(meta, threads, limits);
        if (!occ.ok()) return Internal(occ.status().message());
        if (lowest.waves_per_simd == 0 || occ->waves_per_simd < lowest.waves_per_simd) lowest = *occ;
      }
      out->kernel_occupancy.push_back(lowest);
      if (lowest.waves_per_simd > 0) {
        ++out->stats.occupancy_limiters[lowest.limiter];
        if (out->stats.min_waves_per_simd == 0 || lowest.waves_per_simd < out->stats.min_waves_per_simd) {
          out->stats.min_waves_per_simd = lowest.waves_per_simd;
          out->stats.min_occupancy_kernel = out->kernels[k].name;
        }
      }
    }
    if (co.from_cache) out->stats.kernels_from_cache += static_cast<int64_t>(ranges[r].second - ranges[r].first);
    out->stats.compiler = co.compiler;
  }
  // The collectives' kernels: clean, and every entry their thunk launches in its code object.
  for (size_t c = 0; c < collective_sources.size(); ++c) {
    const size_t index = ranges.size() + c;
    const CompiledHsaco& co = out->code_objects[index];
    RocmThunk& t = out->thunks[collective_entries[c].first];
    if (!co.log.empty())
      return Internal("rocm: the kernels of collective %", t.instruction, " compiled with diagnostics:\n", co.log);
    KILN_ASSIGN_OR_RETURN(CodeObjectInfo info, InspectCodeObject(co.image));
    for (const std::string& e : collective_entries[c].second)
      if (info.Find(e) == nullptr) return Internal("rocm: entry ", e, " is missing from code object ", index);
    t.code_object = static_cast<int>(index);
    t.detail += StrCat(", kernels ", StrJoin(collective_entries[c].second, ", "), " in code object ", index);
    if (out->stats.compiler.empty()) out->stats.compiler = co.compiler;
  }

  if (!options.kernel_dump_dir.empty()) {
    KILN_RETURN_IF_ERROR(codegen::DumpKernels(out->kernels, options.kernel_dump_dir));
    std::string index;
    for (size_t r = 0; r < out->code_objects.size(); ++r) {
      const std::string name = StrCat(module->name(), ".", r, ".", options.device.arch(), ".hsaco");
      std::ofstream f(options.kernel_dump_dir + "/" + name, std::ios::binary);
      f.write(out->code_objects[r].image.data(), static_cast<std::streamsize>(out->code_objects[r].image.size()));
      if (!f) return Internal("rocm: cannot write ", options.kernel_dump_dir, "/", name);
      KILN_ASSIGN_OR_RETURN(CodeObjectInfo info, InspectCodeObject(out->code_objects[r].image));
      index += StrCat("== ", name, " (", out->code_objects[r].compiler, ")\n", info.ToString());
      for (size_t k = 0; k < out->kernels.size(); ++k)
        if (out->kernel_code_object[k] == static_cast<int>(r) && out->kernel_occupancy[k].waves_per_simd > 0)
          index += StrCat("  occupancy of ", out->kernels[k].name, ": ", out->kernel_occupancy[k].ToString(), "\n");
    }
    std::ofstream(options.kernel_dump_dir + "/code_objects.txt") << index;
  }

  out->stats.passes = timer.TakeSteps();
  out->stats.fusion_summary = FusionSummary(*module);
  out->stats.memory = scheduled.assignment->stats();
  out->stats.kernels = static_cast<int64_t>(out->kernels.size());
  for (const RocmThunk& t : out->thunks) ++out->stats.thunks_by_kind[std::string(RocmThunkKindName(t.kind))];
  out->module = std::move(module);
  out->schedule = std::move(scheduled.schedule);
  out->assignment = std::move(scheduled.assignment);
  out->stats.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::rocm
