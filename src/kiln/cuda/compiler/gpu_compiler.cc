#include "kiln/cuda/compiler/gpu_compiler.h"

#include "kiln/cuda/libs/attention_cudnn.h"

#include <chrono>
#include <thread>

#include "kiln/base/strings.h"
#include "kiln/base/thread_pool.h"
#include "kiln/codegen/emitters.h"
#include "kiln/cuda/compiler/sort_dimension_rewriter.h"
#include "kiln/cuda/compiler/thunk_emitter.h"
#include "kiln/cuda/libs/attention_cudnn.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/async_inliner.h"
#include "kiln/passes/batch_norm_expander.h"
#include "kiln/passes/map_expander.h"
#include "kiln/passes/algebraic_simplifier.h"
#include "kiln/passes/compile_tail.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/compile_summary.h"
#include "kiln/passes/fusion_passes.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/layout_normalization.h"
#include "kiln/passes/simple_passes.h"
#include "kiln/cuda/compiler/library_calls.h"
#include "kiln/passes/simplification_pipeline.h"
#include "kiln/passes/unfuse_all.h"
#include "kiln/passes/while_loop_simplifier.h"

namespace kiln::cuda {

namespace {

class FusionPass : public HloPass {
 public:
  FusionPass(GpuFusionOptions options, bool multi_output) : policy_(options), multi_output_(multi_output) {}
  std::string_view name() const override { return multi_output_ ? "multi-output-fusion" : "instruction-fusion"; }
  StatusOr<bool> Run(HloModule& module) override {
    if (multi_output_) {
      MultiOutputFusion pass(policy_);
      return pass.Run(module);
    }
    InstructionFusion pass(policy_);
    return pass.Run(module);
  }

 private:
  GpuFusionPolicy policy_;
  bool multi_output_;
};

// Note [Normalization fusion] in gpu_fusion_policy.h: fusions the kernel emitters cannot take
// are undone and re-fused without normalization fusion; what still fails is left unfused (each
// op its own kernel, or a host fallback).
class FusionLegalization : public HloPass {
 public:
  FusionLegalization(GpuFusionOptions options, codegen::DeviceSpec device)
      : options_(options), device_(std::move(device)) {}
  std::string_view name() const override { return "fusion-legalization"; }
  StatusOr<bool> Run(HloModule& module) override {
    KILN_ASSIGN_OR_RETURN(bool changed, UnfuseRejected(module));
    if (!changed) return false;
    GpuFusionOptions conservative = options_;
    conservative.normalization_fusion = false;
    GpuFusionPolicy policy(conservative);
    InstructionFusion fusion(policy);
    KILN_RETURN_IF_ERROR(fusion.Run(module).status());
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

  GpuFusionOptions options_;
  codegen::DeviceSpec device_;
};

void AppendListing(const GpuThunk& t, int depth, std::string& out) {
  out += std::string(2 * depth, ' ') + t.ToString() + "\n";
  for (const GpuThunk* n : t.nested()) AppendListing(*n, depth + 1, out);
}

}  // namespace

std::string GpuCompileStats::ToString() const {
  std::string s = "passes:\n";
  for (const PassStats& p : passes)
    s += StrCat("  ", p.name, ": ", RoundTripDouble(std::round(p.seconds * 1e5) / 100), " ms", p.changed ? " (changed)" : "",
                ", ", p.instructions_before, " -> ", p.instructions_after, " instructions\n");
  s += fusion_summary;
  if (!s.empty() && s.back() != '\n') s += "\n";
  s += memory.ToString() + "\n";
  s += StrCat("thunks: ", thunks, " (");
  bool first = true;
  for (const auto& [k, n] : thunks_by_kind) {
    s += StrCat(first ? "" : ", ", k, " ", n);
    first = false;
  }
  s += StrCat(")\nkernels: ", kernels, " generated, ", kernels_from_cache, " from the NVRTC cache\n");
  if (!host_fallbacks.empty()) {  // the form of backend/executable.h's HostFallbackLine
    int64_t total = 0;
    for (const auto& [k, n] : host_fallbacks) total += n;
    s += StrCat("on the host (evaluator): ", total, total == 1 ? " instruction:" : " instructions:");
    bool first = true;
    for (const auto& [k, n] : host_fallbacks) {
      s += StrCat(first ? " " : ", ", k, " x", n);
      first = false;
    }
    s += "\n";
  }
  if (autotune) s += autotune->SummaryLine() + "\n";
  s += StrCat("compile time: ", RoundTripDouble(std::round(compile_seconds * 1e5) / 100), " ms\n");
  return s;
}

std::string CompiledGpuModule::ThunkListing() const {
  std::string out;
  for (const auto& t : entry.thunks()) AppendListing(*t, 0, out);
  return out;
}

StatusOr<std::unique_ptr<CompiledGpuModule>> GpuCompiler::Compile(std::unique_ptr<HloModule> module,
                                                                  const GpuCompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (!module || !module->entry_computation()) return InvalidArgument("gpu compiler: no module or no entry computation");
  if (options.verify_input) {
    Status s = VerifyModule(*module);
    if (!s.ok()) return InvalidArgument("gpu compiler: the module does not verify:\n", s.message());
  } else {
    // Unverified modules still may not index outside their operands.
    Status s = CheckOperandsInRange(*module);
    if (!s.ok()) return InvalidArgument("gpu compiler: the module is invalid (checked without the verifier too): ", s.message());
  }
  PipelineOptions po;
  po.dump_dir = options.dump_dir;
  if (options.verify_between_passes) po.verifier = [](const HloModule& m) { return VerifyModule(m); };
  HloPassPipeline pipeline("gpu", po);
  pipeline.AddPass<AsyncInliner>();  // Note [Async wrappers]
  pipeline.AddPass<BatchNormExpander>();  // Note [Batch norm expansion]
  pipeline.AddPass<MapExpander>();  // Note [Map expansion]
  pipeline.AddPass<UnfuseAll>();
  pipeline.AddPass<LayoutNormalization>();
  SimplificationOptions so;
  so.hoist_scan_dots = true;
  so.hoist_loop_invariants = options.hoist_loop_invariants;
  so.canonicalize_dots = true;
  if (options.fused_attention) {
    AttentionRewriterOptions ao;
    const int cc = options.device.compute_capability_major;
    ao.supported = [cc](const AttentionConfig& c) { return AttentionDescForConfig(c, cc).ok(); };
    // Backward graphs where cuDNN's SDPA backward is built (kiln has no backward kernel of its own yet).
    ao.backward = libs::CudnnAttentionBuilt();
    ao.supported_backward = ao.supported;
    so.attention = std::move(ao);
  }
  AddSimplificationPasses(pipeline, so);
  pipeline.AddPass<GemmRewriter>(options.gemm);
  pipeline.AddPass<ConvRewriter>(options.conv);
  // Sorts along a non-minor dimension -> transposes around a row sort the device runs.
  pipeline.AddPass<SortDimensionRewriter>();
  pipeline.AddPass<AlgebraicSimplifier>();
  pipeline.AddPass<CommonSubexpressionElimination>();
  pipeline.AddPass<DeadCodeElimination>();
  pipeline.AddPass<FlattenCallGraph>();
  // Before fusion hides the loop counter (Note [Known trip counts]).
  pipeline.AddPass<WhileTripCountAnnotator>();
  if (options.fusion) {
    pipeline.AddPass<FusionPass>(options.fusion_options, /*multi_output=*/false);
    pipeline.AddPass<FusionPass>(options.fusion_options, /*multi_output=*/true);
    pipeline.AddPass<FusionLegalization>(options.fusion_options, options.device);
  }
  auto autotune_report = std::make_shared<autotune::AutotuneReport>();
  if (options.autotune.enabled()) pipeline.AddPass<GpuAutotunePass>(options.autotune, autotune_report.get());
  pipeline.AddPass<DeadCodeElimination>();
  KILN_RETURN_IF_ERROR(pipeline.Run(*module).status());

  auto out = std::make_unique<CompiledGpuModule>();
  // The steps after the pipeline (passes/compile_tail.h), timed like passes.
  StepTimer timer(*module, "gpu", pipeline.stats());
  CompileTailOptions tail;
  tail.memory_aware_schedule = options.memory_aware_schedule;
  tail.buffers.alignment = 256;
  tail.buffers.use_donated_parameters = false;
  tail.buffers.elementwise_state_updates = true;
  tail.check_buffer_assignment = options.check_buffer_assignment;
  tail.context = "gpu compiler";
  KILN_ASSIGN_OR_RETURN(ScheduledModule scheduled, ScheduleAndAssignBuffers(*module, tail, timer));
  std::unique_ptr<HloSchedule> schedule = std::move(scheduled.schedule);
  std::unique_ptr<BufferAssignment> assignment = std::move(scheduled.assignment);

  KILN_ASSIGN_OR_RETURN(std::unique_ptr<NvrtcCompiler> nvrtc, NvrtcCompiler::Create(options.nvrtc));
  const int threads = options.compile_threads > 0
                          ? options.compile_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::unique_ptr<ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<ThreadPool>(threads - 1);
  ThunkEmitterOptions eo;
  eo.device = options.device;
  eo.nvrtc = nvrtc.get();
  eo.pool = pool.get();
  eo.allow_host_fallback = options.allow_host_fallback;
  KILN_ASSIGN_OR_RETURN(EmittedThunks thunks, EmitGpuThunks(*module, *assignment, *schedule, eo));
  timer.Done("thunk-emission");
  if (!options.kernel_dump_dir.empty())
    KILN_RETURN_IF_ERROR(codegen::DumpKernels(thunks.kernels, options.kernel_dump_dir));

  out->stats.passes = timer.TakeSteps();
  out->stats.fusion_summary = FusionSummary(*module);
  out->stats.memory = assignment->stats();
  for (const GpuThunk* t : thunks.entry.Flatten()) {
    ++out->stats.thunks;
    ++out->stats.thunks_by_kind[std::string(ThunkKindName(t->kind()))];
  }
  out->stats.kernels = static_cast<int64_t>(thunks.kernels.size());
  out->stats.kernels_from_cache = thunks.kernels_from_cache;
  out->stats.host_fallbacks = thunks.host_fallbacks;
  if (options.autotune.enabled()) out->stats.autotune = std::move(autotune_report);
  out->module = std::move(module);
  out->schedule = std::move(schedule);
  out->assignment = std::move(assignment);
  out->entry = std::move(thunks.entry);
  out->kernels = std::move(thunks.kernels);
  out->stats.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::cuda
