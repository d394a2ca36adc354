#include "kiln/cuda/compiler/thunk_emitter.h"

#include <atomic>
#include <unordered_map>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/codegen/emitters.h"
#include "kiln/cuda/compiler/collective_kernels.h"
#include "kiln/cuda/compiler/collective_thunks.h"
#include "kiln/cuda/compiler/control_flow_thunks.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/gpu_autotune.h"
#include "kiln/cuda/compiler/kernel_thunk.h"
#include "kiln/cuda/compiler/library_calls.h"
#include "kiln/cuda/compiler/library_thunks.h"
#include "kiln/cuda/compiler/solver_thunk.h"
#include "kiln/eval/collective_ops.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/thunk_util.h"
#include "kiln/passes/while_loop_simplifier.h"

namespace kiln::cuda {

namespace {

// How a scatter combines: windows that overlap combine in an unspecified order under the
// atomic mode, which only gives the evaluator's (sequential, in order) result when the combiner
// does not care about the order -- add, multiply, min, max, and, or, xor of its two parameters
// (floating-point sums and products up to rounding). Any other combiner (replace -- JAX's
// x.at[i].set -- or a general computation) is serialized unless the scatter promises unique
// indices. Serialized scatters run in one block: deterministic, slow for many windows.
codegen::ScatterMode ScatterModeFor(const HloInstruction& scatter) {
  if (scatter.attrs().unique_indices) return codegen::ScatterMode::kAuto;
  const HloComputation* c = scatter.to_apply();
  if (c == nullptr || c->num_parameters() != 2 || scatter.operand_count() != 3)
    return codegen::ScatterMode::kSerialized;
  const HloInstruction* root = c->root_instruction();
  if (root->operand_count() == 2 && root->operand(0)->opcode() == HloOpcode::kParameter &&
      root->operand(1)->opcode() == HloOpcode::kParameter && root->operand(0) != root->operand(1)) {
    switch (root->opcode()) {
      case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMinimum: case HloOpcode::kMaximum:
      case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
        return codegen::ScatterMode::kAuto;
      default:
        break;
    }
  }
  return codegen::ScatterMode::kSerialized;
}

enum class How { kNone, kCollective, kCollectiveDone, kKernel, kGemm, kConv, kAttention, kAttentionBackward, kSort, kFft, kSolver, kCopy, kWhile, kConditional, kCall, kHost };

bool RowMajor(const Shape& s) { return !s.has_layout() || s.layout().IsDefaultFor(s.rank()); }

bool IsIdentityCustomCall(const HloInstruction& i) {
  const std::string& t = i.attrs().custom_call_target;
  return i.opcode() == HloOpcode::kCustomCall && i.operand_count() == 1 &&
         (t == "Sharding" || t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape" || t == "MoveToHost" ||
          t == "MoveToDevice" || t == "annotate_device_placement") &&
         Shape::Equal(i.shape(), i.operand(0)->shape(), false);
}

class Emitter {
 public:
  Emitter(const HloModule& module, const BufferAssignment& assignment, const HloSchedule& schedule,
          const ThunkEmitterOptions& options)
      : module_(module), assignment_(assignment), schedule_(schedule), options_(options) {}

  StatusOr<EmittedThunks> Run() {
    const HloComputation* entry = module_.entry_computation();
    KILN_RETURN_IF_ERROR(CollectKernels(*entry));
    KILN_RETURN_IF_ERROR(CompileAll());
    KILN_ASSIGN_OR_RETURN(ThunkSequence seq, EmitComputation(*entry));
    EmittedThunks out;
    out.entry = std::move(seq);
    for (Pending& p : pending_)
      if (p.compiled) out.kernels.push_back(std::move(p.spec));
    out.kernels_from_cache = from_cache_;
    out.host_fallbacks = std::move(host_fallbacks_);
    int64_t id = 0;
    for (const GpuThunk* t : out.entry.Flatten()) const_cast<GpuThunk*>(t)->set_id(id++);
    return out;
  }

 private:
  struct Pending {
    const HloInstruction* instr;
    codegen::KernelSpec spec;
    std::string cubin;
    bool compiled = false;
    std::string error;
  };

  StatusOr<BufferSlice> Slice(const HloInstruction& instr, const ShapeIndex& index = {}) {
    return CheckedSlice(assignment_, instr, index);
  }

  StatusOr<std::vector<BufferSlice>> Leaves(const HloInstruction& instr) {
    std::vector<BufferSlice> out;
    for (const ShapeIndex& leaf : ArrayLeafIndices(instr.shape())) {
      KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(instr, leaf));
      out.push_back(s);
    }
    return out;
  }

  StatusOr<bool> IsView(const HloInstruction& instr) { return IsBufferView(assignment_, instr); }

  StatusOr<How> Classify(const HloInstruction& instr) {
    // Collectives on NCCL (collective_thunks.h); host transfers stay errors below.
    if (IsCollectiveThunkOp(instr)) return How::kCollective;
    if (IsCollectiveDoneOp(instr)) return How::kCollectiveDone;
    switch (instr.opcode()) {
      case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast: case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kDomain: case HloOpcode::kAddDependency: case HloOpcode::kAfterAll:
        return How::kNone;
      case HloOpcode::kInfeed: case HloOpcode::kOutfeed: case HloOpcode::kSend: case HloOpcode::kSendDone:
      case HloOpcode::kRecv: case HloOpcode::kRecvDone:
        return Unimplemented("cuda: ", HloOpcodeString(instr.opcode()), " (%", instr.name(),
                             ") is not supported: the GPU runtime has no host channels");
      case HloOpcode::kWhile: return How::kWhile;
      case HloOpcode::kConditional: return How::kConditional;
      case HloOpcode::kCall: return How::kCall;
      case HloOpcode::kSort:
        // The library radix sort takes single-key orders; any other comparator runs as a
        // generated comparison sort (codegen/emit_sort.cc).
        if (!LibrarySortApplies(instr) && codegen::ChooseEmitter(instr).ok()) return How::kKernel;
        return How::kSort;
      case HloOpcode::kTopK: return How::kSort;
      case HloOpcode::kFft: return How::kFft;
      case HloOpcode::kCustomCall:
        if (IsGemmCall(instr)) return How::kGemm;
        if (IsConvCall(instr)) return How::kConv;
        if (IsAttentionCall(instr)) return How::kAttention;
        if (IsAttentionBackwardCall(instr)) return How::kAttentionBackward;
        if (instr.attrs().custom_call_target == "TopK") return How::kSort;
        if (IsSolverCall(instr)) return How::kSolver;
        if (IsIdentityCustomCall(instr)) return How::kCopy;
        return How::kHost;
      case HloOpcode::kReshape: {
        KILN_ASSIGN_OR_RETURN(bool view, IsView(instr));
        if (view) return How::kNone;
        if (RowMajor(instr.shape()) && RowMajor(instr.operand(0)->shape())) return How::kCopy;
        break;
      }
      case HloOpcode::kCopy:
        if (RowMajor(instr.shape()) && RowMajor(instr.operand(0)->shape())) return How::kCopy;
        break;
      default:
        break;
    }
    if (ArrayLeafIndices(instr.shape()).empty()) return How::kNone;  // token plumbing
    if (codegen::ChooseEmitter(instr).ok()) return How::kKernel;
    return How::kHost;
  }

  Status CollectKernels(const HloComputation& c) {
    if (!schedule_.has_sequence(&c)) return Internal("cuda: computation ", c.name(), " has no schedule");
    for (const HloInstruction* instr : schedule_.sequence(&c)) {
      KILN_ASSIGN_OR_RETURN(How how, Classify(*instr));
      switch (how) {
        case How::kKernel: {
          Pending p{instr, {}, {}, false, ""};
          // The autotuner's launch configuration, when it chose one (gpu_autotune.h); scatters
          // in the mode ScatterModeFor picks.
          KILN_ASSIGN_OR_RETURN(codegen::KernelConfig tuned, TunedKernelConfig(*instr));
          auto emit = [&](const codegen::KernelConfig& config) {
            return instr->opcode() == HloOpcode::kScatter
                       ? codegen::EmitScatter(*instr, options_.device, config, ScatterModeFor(*instr))
                       : codegen::EmitKernel(*instr, options_.device, config);
          };
          StatusOr<codegen::KernelSpec> spec = emit(tuned);
          if (!spec.ok() && !(tuned == codegen::KernelConfig{})) {
            KILN_LOG(Warning) << "cuda: %" << instr->name() << ": the tuned config " << tuned.ToString()
                              << " does not emit (" << spec.status().message() << "); using the default";
            spec = emit(codegen::KernelConfig{});
          }
          if (spec.ok()) p.spec = std::move(*spec);
          else p.error = spec.status().message();
          index_[instr] = pending_.size();
          pending_.push_back(std::move(p));
          break;
        }
        case How::kWhile:
          KILN_RETURN_IF_ERROR(CollectKernels(*instr->while_condition()));
          KILN_RETURN_IF_ERROR(CollectKernels(*instr->while_body()));
          break;
        case How::kConditional:
          for (const HloComputation* b : instr->branch_computations()) KILN_RETURN_IF_ERROR(CollectKernels(*b));
          break;
        case How::kCall:
          KILN_RETURN_IF_ERROR(CollectKernels(*instr->to_apply()));
          break;
        default:
          break;
      }
    }
    return OkStatus();
  }

  Status CompileAll() {
    if (!options_.nvrtc) return InvalidArgument("cuda: no NVRTC compiler");
    const std::string arch = options_.device.arch();
    auto compile = [&](int64_t i) {
      Pending& p = pending_[i];
      if (!p.error.empty()) return;
      NvrtcRequest r;
      r.source = p.spec.source;
      r.headers = p.spec.headers;
      r.arch = arch;
      r.program_name = StrCat(p.spec.name, ".cu");
      StatusOr<NvrtcProgram> prog = options_.nvrtc->Compile(r);
      if (!prog.ok()) {
        p.error = prog.status().message();
        return;
      }
      p.cubin = std::move(prog->cubin);
      p.compiled = true;
      if (prog->from_cache) cached_.fetch_add(1);
    };
    const int64_t n = static_cast<int64_t>(pending_.size());
    if (options_.pool && n > 1) {
      options_.pool->ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) compile(i);
      });
    } else {
      for (int64_t i = 0; i < n; ++i) compile(i);
    }
    from_cache_ = cached_.load();
    return OkStatus();
  }

  Status AddHost(const HloInstruction& instr, const std::string& why, std::vector<std::unique_ptr<GpuThunk>>& out) {
    std::string what(HloOpcodeString(instr.opcode()));
    if (instr.opcode() == HloOpcode::kCustomCall) what = StrCat("custom-call ", instr.attrs().custom_call_target);
    if (!options_.allow_host_fallback)
      return Unimplemented("cuda: %", instr.name(), " (", what, ") has no device implementation: ", why);
    if (host_fallbacks_[what]++ == 0) {
      KILN_LOG(Warning) << "cuda: " << what << " (%" << instr.name() << ") runs on the host (evaluator): " << why;
    }
    KILN_ASSIGN_OR_RETURN(auto thunk, MakeHost(instr));
    out.push_back(std::move(thunk));
    return OkStatus();
  }

  StatusOr<std::unique_ptr<HostThunk>> MakeHost(const HloInstruction& instr) {
    std::vector<std::vector<BufferSlice>> ops;
    for (const HloInstruction* o : instr.operands()) {
      KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> l, Leaves(*o));
      ops.push_back(std::move(l));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> outs, Leaves(instr));
    return HostThunk::Create(instr, std::move(ops), std::move(outs));
  }

  StatusOr<std::vector<BufferSlice>> OperandSlices(const HloInstruction& instr) {
    std::vector<BufferSlice> out;
    for (const HloInstruction* o : instr.operands()) {
      if (!o->shape().IsArray()) return Unimplemented("operand %", o->name(), " is not an array");
      KILN_ASSIGN_OR_RETURN(BufferSlice s, Slice(*o));
      out.push_back(s);
    }
    return out;
  }

  uint64_t Alignment(const std::vector<BufferSlice>& slices) {
    uint64_t a = 256;
    for (const BufferSlice& s : slices)
      while (a > 1 && s.offset % static_cast<int64_t>(a) != 0) a /= 2;
    return a;
  }

  StatusOr<ThunkSequence> EmitComputation(const HloComputation& c) {
    std::vector<std::unique_ptr<GpuThunk>> out;
    for (const HloInstruction* instr : schedule_.sequence(&c)) {
      const size_t before = out.size();
      KILN_RETURN_IF_ERROR(EmitInstruction(*instr, out));
      SetBufferUses(*instr, out, before);
    }
    return ThunkSequence(std::move(out));
  }

  // Kernels and library calls record the slices they read (the operands' leaves) and write
  // (the result's leaves): ThunkSequence::PlanSideStream runs independent ones concurrently.
  void SetBufferUses(const HloInstruction& instr, std::vector<std::unique_ptr<GpuThunk>>& out, size_t from) {
    std::vector<BufferSlice> reads;
    for (const HloInstruction* o : instr.operands()) {
      StatusOr<std::vector<BufferSlice>> l = Leaves(*o);
      if (!l.ok()) return;
      reads.insert(reads.end(), l->begin(), l->end());
    }
    StatusOr<std::vector<BufferSlice>> writes = Leaves(instr);
    if (!writes.ok()) return;
    for (size_t i = from; i < out.size(); ++i) {
      const GpuThunk::Kind k = out[i]->kind();
      if (k == GpuThunk::Kind::kKernel || k == GpuThunk::Kind::kGemm || k == GpuThunk::Kind::kConv)
        out[i]->set_buffer_uses(reads, *writes);
    }
  }

  Status EmitInstruction(const HloInstruction& instr, std::vector<std::unique_ptr<GpuThunk>>& out) {
    KILN_ASSIGN_OR_RETURN(How how, Classify(instr));
    switch (how) {
      case How::kNone:
        return OkStatus();
      case How::kCollective:
        return EmitCollective(instr, out);
      case How::kCollectiveDone:
        return EmitCollectiveDone(instr, out);
      case How::kHost:
        return AddHost(instr, "no device implementation", out);
      case How::kKernel: {
        Pending& p = pending_[index_.at(&instr)];
        if (!p.compiled) return AddHost(instr, p.error, out);
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> ops, OperandSlices(instr));
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> outs, Leaves(instr));
        out.push_back(std::make_unique<KernelThunk>(instr.name(), p.spec, std::move(p.cubin), std::move(ops),
                                                    std::move(outs)));
        p.cubin.clear();
        return OkStatus();
      }
      case How::kCopy: {
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> src, Leaves(*instr.operand(0)));
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> dst, Leaves(instr));
        if (src.size() != dst.size()) return Internal("copy %", instr.name(), ": leaf counts differ");
        std::vector<CopyThunk::Copy> copies;
        for (size_t i = 0; i < src.size(); ++i)
          if (src[i] != dst[i]) copies.push_back({src[i], dst[i]});
        if (!copies.empty()) out.push_back(std::make_unique<CopyThunk>(instr.name(), std::move(copies)));
        return OkStatus();
      }
      case How::kGemm:
      case How::kConv: {
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> ops, OperandSlices(instr));
        KILN_ASSIGN_OR_RETURN(BufferSlice o, Slice(instr));
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostThunk> fallback, MakeHost(instr));
        if (how == How::kGemm) {
          std::vector<BufferSlice> all = ops;
          all.push_back(o);
          KILN_ASSIGN_OR_RETURN(libs::GemmDesc d, GemmDescForCall(instr, Alignment(all)));
          KILN_ASSIGN_OR_RETURN(std::optional<libs::GemmAlgorithm> tuned, TunedGemmAlgorithm(instr, d));
          out.push_back(std::make_unique<GemmThunk>(instr.name(), d, std::move(ops), o, std::move(fallback),
                                                    std::move(tuned)));
        } else {
          KILN_ASSIGN_OR_RETURN(libs::ConvDesc d, ConvDescForCall(instr));
          KILN_ASSIGN_OR_RETURN(std::optional<libs::ConvAlgorithm> tuned, TunedConvAlgorithm(instr));
          out.push_back(std::make_unique<ConvThunk>(instr.name(), d, std::move(ops), o, std::move(fallback),
                                                    std::move(tuned)));
        }
        return OkStatus();
      }
      case How::kAttention: {
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostThunk> fallback, MakeHost(instr));
        KILN_ASSIGN_OR_RETURN(AttentionConfig c, AttentionConfigOf(instr));
        StatusOr<libs::AttentionDesc> d = AttentionDescForConfig(c, options_.device.compute_capability_major);
        if (!d.ok()) return AddHost(instr, d.status().message(), out);
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> ops, OperandSlices(instr));
        // (out, lse) with statistics (Note [Attention statistics]), else the output alone.
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> leaves, Leaves(instr));
        if (leaves.size() != (c.stats ? 2u : 1u)) return AddHost(instr, "an attention call with unexpected results", out);
        KILN_ASSIGN_OR_RETURN(std::optional<AttentionChoice> tuned, TunedAttentionChoice(instr));
        std::optional<libs::AttentionKernelConfig> flash;
        int64_t cudnn_plan = -2;
        if (tuned && tuned->cudnn) cudnn_plan = tuned->cudnn_plan;
        if (tuned && !tuned->cudnn) flash = tuned->flash;
        if (c.stats && cudnn_plan < -1) cudnn_plan = -1;  // only cuDNN writes statistics
        auto t = std::make_unique<AttentionThunk>(instr.name(), *d, ops.at(c.q.operand), ops.at(c.k.operand),
                                                  ops.at(c.v.operand), leaves[0], std::move(fallback), flash, cudnn_plan);
        if (c.stats) t->set_statistics(leaves[1]);
        if (c.has_bias || c.has_mask)
          t->set_bias_and_mask(c.has_bias ? ops.at(c.bias.operand) : BufferSlice{},
                               c.has_mask ? ops.at(c.mask_view.operand) : BufferSlice{});
        out.push_back(std::move(t));
        return OkStatus();
      }
      case How::kAttentionBackward: {
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostThunk> fallback, MakeHost(instr));
        KILN_ASSIGN_OR_RETURN(AttentionConfig c, AttentionConfigOf(instr));
        StatusOr<libs::AttentionDesc> d = AttentionDescForConfig(c, options_.device.compute_capability_major);
        if (!d.ok()) return AddHost(instr, d.status().message(), out);
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> ops, OperandSlices(instr));
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> leaves, Leaves(instr));
        // Three results, or one array holding all three gradients (Note [Packed gradients]).
        for (const AttentionView* g : {&c.dq, &c.dk, &c.dv})
          if (g->operand < 0 || g->operand >= static_cast<int64_t>(leaves.size()))
            return AddHost(instr, "an attention backward whose gradient views name no result", out);
        std::array<BufferSlice, 6> in = {ops.at(c.q.operand), ops.at(c.k.operand), ops.at(c.v.operand),
                                         ops.at(c.d_out.operand), BufferSlice{}, BufferSlice{}};
        if (c.stats) {
          in[4] = ops.at(c.o.operand);
          in[5] = ops.at(c.lse.operand);
        }
        std::array<BufferSlice, 3> res = {leaves.at(c.dq.operand), leaves.at(c.dk.operand), leaves.at(c.dv.operand)};
        out.push_back(std::make_unique<AttentionBackwardThunk>(instr.name(), *d, in, res, std::move(fallback)));
        return OkStatus();
      }
      case How::kSort: {
        StatusOr<std::vector<BufferSlice>> ops = OperandSlices(instr);
        if (!ops.ok()) return AddHost(instr, ops.status().message(), out);
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> outs, Leaves(instr));
        StatusOr<std::unique_ptr<GpuThunk>> t = MakeSortThunk(instr, *ops, outs);
        if (!t.ok()) return AddHost(instr, t.status().message(), out);
        out.push_back(std::move(*t));
        return OkStatus();
      }
      case How::kFft: {
        StatusOr<libs::FftDesc> d = MakeFftDesc(instr);
        if (!d.ok()) return AddHost(instr, d.status().message(), out);
        KILN_ASSIGN_OR_RETURN(BufferSlice in, Slice(*instr.operand(0)));
        KILN_ASSIGN_OR_RETURN(BufferSlice o, Slice(instr));
        out.push_back(std::make_unique<FftThunk>(instr.name(), std::move(*d), in, o));
        return OkStatus();
      }
      case How::kSolver: {
        // Note [Solver custom calls] (solver_thunk.h): what the plan cannot run stays on the host.
        StatusOr<libs::SolverDesc> d = SolverDescForCall(instr);
        if (!d.ok()) return AddHost(instr, d.status().message(), out);
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> ops, OperandSlices(instr));
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> outs, Leaves(instr));
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostThunk> fallback, MakeHost(instr));
        out.push_back(std::make_unique<SolverThunk>(instr.name(), std::move(*d), std::move(ops), std::move(outs),
                                                    std::move(fallback)));
        return OkStatus();
      }
      case How::kWhile: {
        KILN_ASSIGN_OR_RETURN(ThunkSequence condition, EmitComputation(*instr.while_condition()));
        KILN_ASSIGN_OR_RETURN(ThunkSequence body, EmitComputation(*instr.while_body()));
        KILN_ASSIGN_OR_RETURN(BufferSlice pred, Slice(*instr.while_condition()->root_instruction()));
        KILN_ASSIGN_OR_RETURN(WhileCopyPlan plan, assignment_.GetWhileCopyPlan(instr));
        std::optional<WhileThunk::TripCount> trips;
        if (std::optional<int64_t> n = KnownTripCount(instr))
          trips = WhileThunk::TripCount{*n, !IsSideEffectFreeComputation(*instr.while_condition())};
        auto w = std::make_unique<WhileThunk>(instr.name(), std::move(condition), std::move(body), pred,
                                              std::move(plan), trips);
        if (!trips && options_.nvrtc) {
          // Note [Device-side loops]: without the kernel the loop reads its predicate on the host.
          StatusOr<std::string> cubin = CompileSetConditionKernel(*options_.nvrtc, options_.device.arch());
          if (cubin.ok()) w->set_device_loop_cubin(std::move(*cubin));
          else KILN_LOG(Info) << "cuda: no set-condition kernel (" << cubin.status().message() << ")";
        }
        out.push_back(std::move(w));
        return OkStatus();
      }
      case How::kConditional: {
        const HloInstruction* index = instr.operand(0);
        KILN_ASSIGN_OR_RETURN(BufferSlice index_slice, Slice(*index));
        std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr.shape());
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> results, Leaves(instr));
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
        auto c = std::make_unique<ConditionalThunk>(instr.name(), index_slice, index->shape().element_type(),
                                                    std::move(branches), std::move(copies));
        if (options_.nvrtc) {
          // Note [Device-side conditionals]: without the kernel the index is read on the host.
          StatusOr<std::string> cubin = CompileSetConditionKernel(*options_.nvrtc, options_.device.arch());
          if (cubin.ok()) c->set_device_conditional_cubin(std::move(*cubin));
          else KILN_LOG(Info) << "cuda: no set-condition kernel (" << cubin.status().message() << ")";
        }
        out.push_back(std::move(c));
        return OkStatus();
      }
      case How::kCall: {
        KILN_ASSIGN_OR_RETURN(ThunkSequence callee, EmitComputation(*instr.to_apply()));
        // A call's value is its callee's root (buffer assignment aliases them): run inline.
        for (auto& t : std::move(callee).TakeThunks()) out.push_back(std::move(t));
        return OkStatus();
      }
    }
    return Internal("unreachable");
  }

  // A collective on NCCL, or on the host evaluator (one-member groups only) where no NCCL call
  // does it (collective_thunks.h).
  Status EmitCollective(const HloInstruction& instr, std::vector<std::unique_ptr<GpuThunk>>& out) {
    if (Status applies = CollectiveThunkApplies(instr); !applies.ok()) return AddHost(instr, applies.message(), out);
    std::vector<BufferSlice> ops;
    if (instr.opcode() == HloOpcode::kAsyncStart) {
      // The wrapped collective's operands are the wrapper's parameters.
      const HloInstruction* root = instr.called_computations()[0]->root_instruction();
      for (const HloInstruction* o : root->operands()) {
        if (!o->shape().IsArray()) continue;
        if (o->opcode() != HloOpcode::kParameter || o->parameter_number() >= instr.operand_count())
          return AddHost(instr, "an async-start whose collective does not take the wrapper's parameters", out);
        KILN_ASSIGN_OR_RETURN(BufferSlice sl, Slice(*instr.operand(o->parameter_number())));
        ops.push_back(sl);
      }
    } else {
      for (const HloInstruction* o : instr.operands()) {
        if (!o->shape().IsArray()) continue;
        KILN_ASSIGN_OR_RETURN(BufferSlice sl, Slice(*o));
        ops.push_back(sl);
      }
    }
    KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> leaves, Leaves(instr));
    // What NCCL cannot do alone runs as generated kernels beside it (collective_kernels.h).
    const HloInstruction& op = UnwrapAsyncCollective(instr);
    const HloOpcode sync = CollectiveSyncOpcode(op.opcode());
    const bool device_reduction =
        (sync == HloOpcode::kAllReduce || sync == HloOpcode::kReduceScatter) && !NcclReduces(op);
    CollectiveThunkOptions to;
    StatusOr<std::optional<CollectiveKernelSource>> kernels = CollectiveKernelsFor(op, device_reduction);
    if (!kernels.ok()) {
      if (kernels.status().code() == StatusCode::kUnimplemented) return AddHost(instr, kernels.status().message(), out);
      return kernels.status();
    }
    if (*kernels) {
      NvrtcRequest r;
      r.source = (*kernels)->source;
      r.headers = (*kernels)->headers;
      r.arch = options_.device.arch();
      r.program_name = (*kernels)->name;
      KILN_ASSIGN_OR_RETURN(NvrtcProgram prog, options_.nvrtc->Compile(r));
      to.cubin = std::move(prog.cubin);
      if (prog.from_cache) ++from_cache_;
    }
    // The run's grid: the module header's (the cuda backend writes the run's into it).
    const DeviceGrid grid{std::max<int64_t>(1, module_.header().replica_count),
                          std::max<int64_t>(1, module_.header().num_partitions)};
    for (int64_t d = 0; d < grid.num_devices(); ++d) {
      StatusOr<std::vector<int64_t>> g = CollectiveGroupOf(op, grid, d);
      to.max_group = std::max<int64_t>(to.max_group, g.ok() ? static_cast<int64_t>(g->size()) : grid.num_devices());
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<CollectiveThunk> t,
                          CollectiveThunk::Create(instr, std::move(ops), std::move(leaves), std::move(to)));
    collective_starts_[&instr] = t.get();
    out.push_back(std::move(t));
    return OkStatus();
  }

  Status EmitCollectiveDone(const HloInstruction& instr, std::vector<std::unique_ptr<GpuThunk>>& out) {
    KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> leaves, Leaves(instr));
    const HloOpcode op = instr.opcode();
    if (op == HloOpcode::kSendDone || op == HloOpcode::kRecvDone) {
      out.push_back(std::make_unique<CollectiveDoneThunk>(instr, nullptr, std::vector<BufferSlice>{}, std::move(leaves)));
      return OkStatus();
    }
    const HloInstruction* start = instr.operand(0);
    while (start->opcode() == HloOpcode::kAsyncUpdate && start->operand_count() == 1) start = start->operand(0);
    auto it = collective_starts_.find(start);
    if (it == collective_starts_.end()) return AddHost(instr, "its start runs on the host", out);
    std::vector<BufferSlice> sources;
    const Shape& ss = instr.operand(0)->shape();
    if (op == HloOpcode::kAsyncUpdate || Shape::Equal(ss, instr.shape(), false)) {
      KILN_ASSIGN_OR_RETURN(sources, Leaves(*instr.operand(0)));
    } else {
      for (const ShapeIndex& leaf : ArrayLeafIndices(ss)) {
        if (leaf.empty() || leaf[0] != 1) continue;
        KILN_ASSIGN_OR_RETURN(BufferSlice sl, Slice(*instr.operand(0), leaf));
        sources.push_back(sl);
      }
    }
    if (sources.size() != leaves.size())
      return Internal(HloOpcodeString(op), " %", instr.name(), ": ", leaves.size(), " leaves for ", sources.size(),
                      " results of its start");
    out.push_back(std::make_unique<CollectiveDoneThunk>(instr, it->second, std::move(sources), std::move(leaves)));
    return OkStatus();
  }

  std::unordered_map<const HloInstruction*, const CollectiveThunk*> collective_starts_;
  const HloModule& module_;
  const BufferAssignment& assignment_;
  const HloSchedule& schedule_;
  const ThunkEmitterOptions& options_;
  std::vector<Pending> pending_;
  std::unordered_map<const HloInstruction*, size_t> index_;
  std::atomic<int64_t> cached_{0};
  int64_t from_cache_ = 0;
  std::map<std::string, int64_t> host_fallbacks_;
};

}  // namespace

StatusOr<EmittedThunks> EmitGpuThunks(const HloModule& module, const BufferAssignment& assignment,
                                      const HloSchedule& schedule, const ThunkEmitterOptions& options) {
  if (!module.entry_computation()) return InvalidArgument("cuda: module ", module.name(), " has no entry");
  Emitter e(module, assignment, schedule, options);
  return e.Run();
}

}  // namespace kiln::cuda
