#include "kiln/cpu/thunk_emitter.h"

#include "kiln/backend/executable.h"
#include "kiln/base/strings.h"
#include "kiln/cpu/control_flow_thunks.h"
#include "kiln/cpu/kernel_thunk.h"
#include "kiln/cpu/row_tiles_thunk.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_policy.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/thunk_util.h"
#include "kiln/passes/while_loop_simplifier.h"

namespace kiln::cpu {

namespace {

class Emitter {
 public:
  Emitter(const HloModule& module, const BufferAssignment& assignment, const HloSchedule& schedule,
          const ThunkEmitterOptions& options)
      : module_(module), assignment_(assignment), schedule_(schedule), options_(options) {}

  StatusOr<ThunkSequence> EmitComputation(const HloComputation& c) {
    std::vector<std::unique_ptr<Thunk>> thunks;
    if (!schedule_.has_sequence(&c))
      return Internal("cpu: computation ", c.name(), " has no schedule");
    const std::vector<const HloInstruction*> seq(schedule_.sequence(&c).begin(), schedule_.sequence(&c).end());
    std::vector<RowTiledChain> chains;
    if (options_.row_tiling) {
      std::vector<bool> emits(seq.size());
      for (size_t i = 0; i < seq.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(bool e, EmitsThunk(*seq[i]));
        emits[i] = e;
      }
      KILN_ASSIGN_OR_RETURN(chains, FindRowTiledChains(seq, emits, assignment_, options_.row_tiling_options));
    }
    size_t next_chain = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(seq.size()); ++i) {
      if (next_chain < chains.size() && chains[next_chain].begin == i) {
        const RowTiledChain& chain = chains[next_chain++];
        KILN_ASSIGN_OR_RETURN(bool tiled, EmitRowTiles(chain, thunks));
        if (tiled) {
          i = chain.end - 1;
          continue;
        }
      }
      Status s = EmitInstruction(*seq[i], thunks);
      if (!s.ok()) return s;
    }
    return ThunkSequence(std::move(thunks), options_.executor);
  }

  std::vector<const Thunk*> all;
  std::map<std::string, int64_t> evaluator_fallbacks;

 private:
  StatusOr<BufferSlice> Slice(const HloInstruction& instr, const ShapeIndex& index) {
    return CheckedSlice(assignment_, instr, index);
  }

  template <typename T>
  void Add(std::vector<std::unique_ptr<Thunk>>& out, std::unique_ptr<T> thunk) {
    thunk->set_id(static_cast<int64_t>(all.size()));
    all.push_back(thunk.get());
    out.push_back(std::move(thunk));
  }

  // Whether EmitInstruction makes a thunk for `instr` (a kernel, copy, loop, branch or call).
  StatusOr<bool> EmitsThunk(const HloInstruction& instr) {
    switch (instr.opcode()) {
      case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast: case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kDomain: case HloOpcode::kAddDependency: case HloOpcode::kAfterAll:
        return false;
      default:
        break;
    }
    KILN_ASSIGN_OR_RETURN(bool view, IsView(instr));
    return !view;
  }

  // The chain's kernels: for each member, kernels for the tile rows (and the remainder),
  // compiled from row clones held by one module the thunk owns. Declines (false, nothing
  // emitted) when a member would run the evaluator's fallback kernel: once per tile, that
  // costs more than the chain saves.
  StatusOr<bool> EmitRowTiles(const RowTiledChain& chain,
                      std::vector<std::unique_ptr<Thunk>>& out) {
    const int64_t tile = ChooseTileRows(chain, options_.threads, options_.row_tiling_options);
    const int64_t rest = chain.rows % tile;
    auto clones = std::make_shared<HloModule>("row_tiles");
    std::vector<RowTilesThunk::Member> members;
    int64_t cost = 0;
    std::string first, last;
    for (const RowTiledMember& plan : chain.members) {
      const HloInstruction& instr = *plan.instr;
      RowLocality loc = AnalyzeRowLocality(instr);
      if (!loc.ok) return Internal("cpu: %", instr.name(), " in a row-tiled chain is not row-local");
      RowTilesThunk::Member m;
      m.name = instr.name();
      for (int64_t k = 0; k < instr.operand_count(); ++k) {
        KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(*instr.operand(k), {}));
        m.inputs.push_back({s, instr.operand(k)->shape(), static_cast<bool>(loc.row_operand[k]), plan.input_value[k]});
      }
      const std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr.shape());
      for (size_t l = 0; l < leaves.size(); ++l) {
        KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(instr, leaves[l]));
        m.outputs.push_back({s, instr.shape().Subshape(leaves[l]), true, plan.output_value[l]});
      }
      KILN_ASSIGN_OR_RETURN(const HloInstruction* tile_instr, CloneForRows(instr, loc, tile, *clones));
      StatusOr<std::unique_ptr<CpuKernel>> k = options_.kernel_factory(*tile_instr);
      if (!k.ok()) return k.status().WithContext(StrCat("cpu: cannot compile %", instr.name(), " for row tiles"));
      m.tile_kernel = std::move(*k);
      if (m.tile_kernel->runs_evaluator()) return false;
      if (rest > 0) {
        KILN_ASSIGN_OR_RETURN(const HloInstruction* rest_instr, CloneForRows(instr, loc, rest, *clones));
        StatusOr<std::unique_ptr<CpuKernel>> rk = options_.kernel_factory(*rest_instr);
        if (!rk.ok()) return rk.status().WithContext(StrCat("cpu: cannot compile %", instr.name(), " for row tiles"));
        m.rest_kernel = std::move(*rk);
      }
      cost += EstimateKernelCost(instr);
      if (first.empty()) first = instr.name();
      last = instr.name();
      members.push_back(std::move(m));
    }
    Add(out, std::make_unique<RowTilesThunk>(StrCat(first, "..", last), std::move(clones), std::move(members),
                                             chain.internal_row_bytes, chain.rows, tile, cost));
    return true;
  }

  StatusOr<bool> IsView(const HloInstruction& instr) { return IsBufferView(assignment_, instr); }

  Status EmitInstruction(const HloInstruction& instr, std::vector<std::unique_ptr<Thunk>>& out) {
    switch (instr.opcode()) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kBitcast:
      case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kDomain:
      case HloOpcode::kAddDependency:
      case HloOpcode::kAfterAll:
        return OkStatus();
      case HloOpcode::kSend:
      case HloOpcode::kSendDone:
      case HloOpcode::kRecv:
      case HloOpcode::kRecvDone:
        // Between devices (docs/collectives.md): native kernels at the run's rendezvous
        // (kernels/collectives.cc).
        if (!instr.attrs().is_host_transfer) break;
        [[fallthrough]];
      case HloOpcode::kInfeed:
      case HloOpcode::kOutfeed:
        return Unimplemented("cpu: ", HloOpcodeString(instr.opcode()), " (%", instr.name(),
                             ") is not supported: the CPU runtime has no host channels");
      case HloOpcode::kWhile:
        return EmitWhile(instr, out);
      case HloOpcode::kConditional:
        return EmitConditional(instr, out);
      case HloOpcode::kCall: {
        if (!instr.to_apply()) return Internal("cpu: call %", instr.name(), " has no callee");
        KILN_ASSIGN_OR_RETURN(ThunkSequence callee, EmitComputation(*instr.to_apply()));
        Add(out, std::make_unique<CallThunk>(instr.name(), std::move(callee)));
        return OkStatus();
      }
      default:
        break;
    }
    KILN_ASSIGN_OR_RETURN(bool view, IsView(instr));
    if (view) return OkStatus();
    return EmitKernel(instr, out);
  }

  Status EmitKernel(const HloInstruction& instr, std::vector<std::unique_ptr<Thunk>>& out) {
    std::vector<KernelThunk::Operand> inputs, outputs;
    for (const HloInstruction* op : instr.operands())
      for (const ShapeIndex& leaf : ArrayLeafIndices(op->shape())) {
        KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(*op, leaf));
        inputs.push_back({s, op->shape().Subshape(leaf)});
      }
    for (const ShapeIndex& leaf : ArrayLeafIndices(instr.shape())) {
      KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(instr, leaf));
      outputs.push_back({s, instr.shape().Subshape(leaf)});
    }
    if (outputs.empty()) return OkStatus();  // token plumbing: nothing to compute
    StatusOr<std::unique_ptr<CpuKernel>> kernel = options_.kernel_factory(instr);
    if (!kernel.ok())
      return kernel.status().WithContext(StrCat("cpu: cannot compile %", instr.name()));
    if ((*kernel)->runs_evaluator()) ++evaluator_fallbacks[HostFallbackKind(instr)];
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<KernelThunk> thunk,
                          KernelThunk::Create(instr, std::move(*kernel), std::move(inputs),
                                              std::move(outputs), EstimateKernelCost(instr)));
    Add(out, std::move(thunk));
    return OkStatus();
  }

  Status EmitWhile(const HloInstruction& instr, std::vector<std::unique_ptr<Thunk>>& out) {
    KILN_ASSIGN_OR_RETURN(ThunkSequence condition, EmitComputation(*instr.while_condition()));
    KILN_ASSIGN_OR_RETURN(ThunkSequence body, EmitComputation(*instr.while_body()));
    KILN_ASSIGN_OR_RETURN(BufferSlice pred, Slice(*instr.while_condition()->root_instruction(), {}));
    KILN_ASSIGN_OR_RETURN(WhileCopyPlan plan, assignment_.GetWhileCopyPlan(instr));
    std::optional<WhileThunk::TripCount> trips;
    if (std::optional<int64_t> n = KnownTripCount(instr))
      trips = WhileThunk::TripCount{*n, !IsSideEffectFreeComputation(*instr.while_condition())};
    Add(out, std::make_unique<WhileThunk>(instr.name(), std::move(condition), std::move(body), pred,
                                          std::move(plan), trips));
    return OkStatus();
  }

  Status EmitConditional(const HloInstruction& instr, std::vector<std::unique_ptr<Thunk>>& out) {
    const HloInstruction* index = instr.operand(0);
    KILN_ASSIGN_OR_RETURN(BufferSlice index_slice, Slice(*index, {}));
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr.shape());
    std::vector<BufferUse> writes;
    std::vector<BufferSlice> results;
    for (const ShapeIndex& leaf : leaves) {
      KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(instr, leaf));
      results.push_back(s);
      writes.push_back(BufferUse::Write(s));
    }
    std::vector<ThunkSequence> branches;
    std::vector<std::vector<ConditionalThunk::Copy>> copies;
    for (const HloComputation* b : instr.branch_computations()) {
      KILN_ASSIGN_OR_RETURN(ThunkSequence seq, EmitComputation(*b));
      branches.push_back(std::move(seq));
      copies.emplace_back();
      for (size_t j = 0; j < leaves.size(); ++j) {
        KILN_ASSIGN_OR_RETURN(BufferSlice src, Slice(*b->root_instruction(), leaves[j]));
        if (src != results[j]) copies.back().push_back({src, results[j]});
      }
    }
    Add(out, std::make_unique<ConditionalThunk>(instr.name(), index_slice, index->shape().element_type(),
                                                std::move(branches), std::move(copies), std::move(writes)));
    return OkStatus();
  }

  const HloModule& module_;
  const BufferAssignment& assignment_;
  const HloSchedule& schedule_;
  const ThunkEmitterOptions& options_;
};

int64_t ProductOf(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (d >= 0 && d < s.rank()) p *= s.dimensions(d);
  return p;
}

}  // namespace

int64_t EstimateKernelCost(const HloInstruction& instr) {
  int64_t bytes = ShapeBytes(instr.shape());
  for (const HloInstruction* op : instr.operands()) bytes += ShapeBytes(op->shape());
  int64_t cost = bytes / 4;
  const int64_t out_elements = instr.shape().IsArray() ? instr.shape().num_elements() : 0;
  switch (instr.opcode()) {
    case HloOpcode::kDot:
      if (instr.attrs().dot_dimension_numbers)
        cost += out_elements *
                ProductOf(instr.operand(0)->shape(), instr.attrs().dot_dimension_numbers->lhs_contracting_dimensions);
      break;
    case HloOpcode::kConvolution: {
      const Shape& k = instr.operand(1)->shape();
      const auto& dn = instr.attrs().convolution_dimension_numbers;
      int64_t out_features = dn && dn->kernel_output_feature_dimension < k.rank()
                                 ? std::max<int64_t>(1, k.dimensions(dn->kernel_output_feature_dimension))
                                 : 1;
      cost += out_elements * (k.num_elements() / out_features);
      break;
    }
    case HloOpcode::kFusion:
      cost = cost * std::max<int64_t>(1, FusedInstructionCount(instr) / 4);
      break;
    default:
      break;
  }
  return cost;
}

StatusOr<EmittedThunks> EmitThunks(const HloModule& module, const BufferAssignment& assignment,
                                   const HloSchedule& schedule, const ThunkEmitterOptions& options) {
  if (!options.kernel_factory) return InvalidArgument("cpu: no kernel factory");
  const HloComputation* entry = module.entry_computation();
  if (!entry) return InvalidArgument("cpu: module ", module.name(), " has no entry computation");
  Emitter e(module, assignment, schedule, options);
  KILN_ASSIGN_OR_RETURN(ThunkSequence seq, e.EmitComputation(*entry));
  EmittedThunks out;
  out.entry = std::move(seq);
  out.all = std::move(e.all);
  out.evaluator_fallbacks = std::move(e.evaluator_fallbacks);
  return out;
}

}  // namespace kiln::cpu
