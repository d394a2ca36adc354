#include "kiln/cpu/compiler.h"


#include <chrono>
#include <cstdlib>
#include <string_view>

#include "kiln/base/strings.h"
#include "kiln/cpu/divide_to_multiply.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/cpu/dot_transpose_folding.h"
#include "kiln/cpu/layout_normalization.h"
#include "kiln/cpu/row_tiles_thunk.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/async_inliner.h"
#include "kiln/passes/batch_norm_expander.h"
#include "kiln/passes/map_expander.h"
#include "kiln/passes/compile_tail.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/compile_summary.h"
#include "kiln/passes/cpu_fusion_policy.h"
#include "kiln/passes/fusion_passes.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/simple_passes.h"
#include "kiln/passes/simplification_pipeline.h"
#include "kiln/passes/unfuse_all.h"
#include "kiln/passes/while_loop_simplifier.h"

namespace kiln::cpu {

namespace {

// CpuFusionPolicy, with floating division counted as expensive: a divide costs several
// multiplies on the CPU, so the fusion policy must not recompute one per element of a
// broadcast (the reciprocals DivideByBroadcastToMultiply makes stay their own small kernel).
class CompilerFusionPolicy : public CpuFusionPolicy {
 public:
  bool IsExpensive(const HloInstruction& instr) const override {
    if (instr.opcode() == HloOpcode::kDivide && instr.shape().IsArray() &&
        IsFloatingPointType(instr.shape().element_type()))
      return true;
    return CpuFusionPolicy::IsExpensive(instr);
  }
};

// Wraps a pass that needs an object living as long as the pipeline (the fusion policy).
class FusionPass : public HloPass {
 public:
  explicit FusionPass(bool multi_output) : multi_output_(multi_output) {}
  std::string_view name() const override {
    return multi_output_ ? "multi-output-fusion" : "instruction-fusion";
  }
  StatusOr<bool> Run(HloModule& module) override {
    if (multi_output_) {
      MultiOutputFusion pass(policy_);
      return pass.Run(module);
    }
    InstructionFusion pass(policy_);
    return pass.Run(module);
  }

 private:
  bool multi_output_;
  CompilerFusionPolicy policy_;
};

}  // namespace

KernelFactory DefaultKernelFactory(const CpuKernelOptions& options) {
  return [options](const HloInstruction& instr) { return CreateCpuKernel(instr, options); };
}

StatusOr<std::unique_ptr<CpuExecutable>> CpuCompiler::Compile(std::unique_ptr<HloModule> module,
                                                              const CpuCompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (!module || !module->entry_computation())
    return InvalidArgument("cpu compiler: no module or no entry computation");
  if (options.verify_input) {
    Status s = VerifyModule(*module);
    if (!s.ok()) return InvalidArgument("cpu compiler: the module does not verify:\n", s.message());
  } else {
    // Unverified modules still may not index outside their operands.
    Status s = CheckOperandsInRange(*module);
    if (!s.ok()) return InvalidArgument("cpu compiler: the module is invalid (checked without the verifier too): ", s.message());
  }
  EntryLayouts entry_layouts = GetEntryLayouts(*module);

  PipelineOptions po;
  po.dump_dir = options.dump_dir;
  if (options.verify_between_passes) po.verifier = [](const HloModule& m) { return VerifyModule(m); };
  HloPassPipeline pipeline("cpu", po);
  pipeline.AddPass<AsyncInliner>(/*collectives=*/true);  // Note [Async wrappers]
  pipeline.AddPass<BatchNormExpander>();  // Note [Batch norm expansion]
  pipeline.AddPass<MapExpander>();  // Note [Map expansion]
  pipeline.AddPass<UnfuseAll>();
  pipeline.AddPass<LayoutNormalization>();
  // Before simplification, so that reciprocals of constants fold and CSE shares reciprocals.
  pipeline.AddPass<DivideByBroadcastToMultiply>();
  SimplificationOptions so;
  so.hoist_scan_dots = true;
  so.hoist_loop_invariants = options.hoist_loop_invariants;
  so.canonicalize_dots = options.canonicalize_dots;
  if (options.fused_attention) {
    AttentionRewriterOptions ao;
    ao.supported = [](const AttentionConfig& c) { return internal::CpuAttentionSupported(c); };
    ao.backward = true;
    ao.supported_backward = [](const AttentionConfig& c) { return internal::CpuAttentionBackwardSupported(c); };
    so.attention = std::move(ao);
  }
  AddSimplificationPasses(pipeline, so);
  if (options.canonicalize_dots) pipeline.AddPass<DotTransposeFolding>();
  pipeline.AddPass<FlattenCallGraph>();
  // Before fusion hides the loop counter (Note [Known trip counts]).
  pipeline.AddPass<WhileTripCountAnnotator>();
  if (options.fusion) {
    pipeline.AddPass<FusionPass>(/*multi_output=*/false);
    pipeline.AddPass<FusionPass>(/*multi_output=*/true);
  }
  pipeline.AddPass<DeadCodeElimination>();
  KILN_RETURN_IF_ERROR(pipeline.Run(*module).status());
  // The steps after the pipeline (passes/compile_tail.h), timed like passes.
  StepTimer timer(*module, "cpu", pipeline.stats());
  CompileTailOptions tail;
  tail.memory_aware_schedule = options.memory_aware_schedule;
  tail.buffers.alignment = 64;
  // Loop state computed elementwise from its old value is computed in place (no copy per
  // iteration); the loop kernels take outputs that overlap inputs (Note [In-place loop
  // kernels], kernels/loop_kernel.cc), and every other kernel that may define such a leaf --
  // elementwise ops the loop kernels decline -- is the evaluator's, which copies its inputs.
  tail.buffers.elementwise_state_updates = options.elementwise_state_updates;
  tail.check_buffer_assignment = options.check_buffer_assignment;
  tail.context = "cpu compiler";
  KILN_ASSIGN_OR_RETURN(ScheduledModule scheduled, ScheduleAndAssignBuffers(*module, tail, timer));
  std::unique_ptr<HloSchedule> schedule = std::move(scheduled.schedule);
  std::unique_ptr<BufferAssignment> assignment = std::move(scheduled.assignment);

  ThunkEmitterOptions eo;
  eo.kernel_factory = options.kernel_factory ? options.kernel_factory : DefaultKernelFactory(options.kernel_options);
  eo.executor = options.executor;
  // The backend flags cpu_row_tiling (off, force) and cpu_row_tile_bytes set these
  // (ApplyCpuFlags in cpu_backend.cc).
  eo.row_tiling = options.row_tiling;
  eo.row_tiling_options = options.row_tiling_options;
  eo.threads = options.thread_pool ? options.thread_pool->num_threads()
               : options.threads > 0 ? options.threads
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  KILN_ASSIGN_OR_RETURN(EmittedThunks thunks, EmitThunks(*module, *assignment, *schedule, eo));
  timer.Done("thunk-emission");

  CpuExecutable::Parts parts;
  parts.stats.passes = timer.TakeSteps();
  parts.stats.fusion_summary = FusionSummary(*module);
  parts.stats.memory = assignment->stats();
  parts.stats.thunks = static_cast<int64_t>(thunks.all.size());
  parts.stats.evaluator_fallbacks = thunks.evaluator_fallbacks;
  for (const Thunk* t : thunks.all) parts.stats.kernel_thunks += t->kind() == Thunk::Kind::kKernel;
  for (const Thunk* t : thunks.all)
    if (t->kind() == Thunk::Kind::kRowTiles) {
      ++parts.stats.row_tiled_chains;
      parts.stats.kernel_thunks += static_cast<const RowTilesThunk*>(t)->members();
    }
  if (options.thread_pool) {
    parts.pool = options.thread_pool;
  } else {
    int threads = options.threads > 0 ? options.threads
                                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // `threads` workers, not threads - 1: Eigen's contraction blocks the calling thread while
    // the workers compute, and the kernels size their work by the pool's worker count (see
    // Note [Nested parallelism]).
    if (threads > 1) parts.pool = std::make_shared<ThreadPool>(threads);
  }
  parts.stats.threads = parts.pool ? parts.pool->num_threads() : 1;
  parts.module = std::move(module);
  parts.assignment = std::move(assignment);
  parts.schedule = std::move(schedule);
  parts.thunks = std::move(thunks);
  parts.entry_layouts = std::move(entry_layouts);
  parts.executor = options.executor;
  parts.stats.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return CpuExecutable::Create(std::move(parts));
}

}  // namespace kiln::cpu
