#include "kiln/cuda/compiler/library_thunks.h"

#include <cmath>
#include <limits>
#include <random>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_policy.h"

namespace kiln::cuda {

namespace {

bool Declined(const Status& s) {
  return s.code() == StatusCode::kUnimplemented || s.code() == StatusCode::kInvalidArgument;
}

}  // namespace

// ---- GEMM ----

double PeakMatmulFlops(const runtime::DeviceDescription& device, PrimitiveType type, bool highest) {
  // Dense FLOPs per clock per SM (tensor cores where the type uses them): Hopper (sm_90) and
  // Ampere (sm_80) data-sheet rates; other architectures are estimated as Ampere.
  const bool hopper = device.compute_capability_major >= 9;
  double per_clock;
  switch (type) {
    case PrimitiveType::kBF16: case PrimitiveType::kF16: per_clock = hopper ? 4096 : 2048; break;
    case PrimitiveType::kF8E4M3FN: case PrimitiveType::kF8E5M2: per_clock = hopper ? 8192 : 2048; break;
    case PrimitiveType::kF32: per_clock = highest ? 256 : (hopper ? 2048 : 1024); break;
    case PrimitiveType::kF64: per_clock = hopper ? 512 : 256; break;
    case PrimitiveType::kS8: per_clock = hopper ? 8192 : 4096; break;
    default: per_clock = 256; break;
  }
  const double clock = device.core_clock_khz > 0 ? static_cast<double>(device.core_clock_khz) * 1e3 : 1.755e9;
  const double sms = device.multiprocessor_count > 0 ? device.multiprocessor_count : 132;
  return per_clock * sms * clock;
}

GemmThunk::GemmThunk(std::string name, libs::GemmDesc desc, std::vector<BufferSlice> operands, BufferSlice output,
                     std::unique_ptr<GpuThunk> fallback, std::optional<libs::GemmAlgorithm> tuned)
    : GpuThunk(Kind::kGemm, std::move(name),
               [&] {
                 int64_t b = output.size;
                 for (const BufferSlice& s : operands) b += s.size;
                 return b;
               }(),
               2 * desc.batch * desc.m * desc.n * desc.k),
      desc_(desc),
      operands_(std::move(operands)),
      output_(output),
      fallback_(std::move(fallback)),
      tuned_(std::move(tuned)) {}

std::string GemmThunk::ToString() const {
  const bool planned = plan_ || cublas_plan_;
  return StrCat("gemm %", name(), " ", desc_.ToString(), use_fallback_ ? " [host fallback]" : "",
                planned ? StrCat(" ", algorithm_.description) : tuned_ ? StrCat(" ", tuned_->description) : "",
                tuned_ ? " [tuned]" : "");
}

Status GemmThunk::Initialize(const ThunkInitParams& params) {
  if (plan_ || cublas_plan_) return OkStatus();
  Status s = [&]() -> Status {
    if (tuned_ && tuned_->backend == libs::GemmAlgorithm::Backend::kCublas) {
      KILN_ASSIGN_OR_RETURN(cublas_plan_, libs::CublasGemmPlan::Create(desc_, *params.device));
      algorithm_ = *tuned_;
      return OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(plan_, libs::GemmPlan::Create(desc_, *params.device));
    if (tuned_) {
      algorithm_ = *tuned_;
      return OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(std::vector<libs::GemmAlgorithm> algos, plan_->ListAlgorithms(8));
    algorithm_ = algos.front();
    return OkStatus();
  }();
  if (s.ok()) return OkStatus();
  if (!Declined(s) || !fallback_) return s;
  KILN_LOG(Warning) << "gemm %" << name() << " runs on the host: " << s.message();
  plan_.reset();
  cublas_plan_.reset();
  use_fallback_ = true;
  return fallback_->Initialize(params);
}

double GemmThunk::PeakFlops(const runtime::DeviceDescription& device) const {
  return PeakMatmulFlops(device, desc_.lhs.dtype, desc_.precision == Precision::kHighest);
}

uint64_t GemmThunk::workspace_bytes() const {
  if (use_fallback_) return fallback_->workspace_bytes();
  return plan_ || cublas_plan_ ? algorithm_.workspace_bytes : 0;
}

Status GemmThunk::Execute(const ThunkExecuteParams& params) const {
  if (use_fallback_) return fallback_->Execute(params);
  if (!plan_ && !cublas_plan_) return FailedPrecondition("gemm %", name(), " is not initialized");
  libs::GemmBuffers b;
  b.lhs = params.buffers->Get(operands_[0]);
  b.rhs = params.buffers->Get(operands_[1]);
  b.out = params.buffers->Get(output_);
  size_t next = 2;
  if (desc_.beta != 0) b.c = params.buffers->Get(operands_[next++]);
  if (libs::GemmEpilogueHasBias(desc_.epilogue)) b.bias = params.buffers->Get(operands_[next++]);
  runtime::DeviceMemory ws = params.workspace;
  if (ws.size > algorithm_.workspace_bytes) ws.size = algorithm_.workspace_bytes;
  if (cublas_plan_) return cublas_plan_->Run(algorithm_, b, ws, *params.stream);
  return plan_->Run(algorithm_, b, ws, *params.stream);
}

// ---- Convolution ----

ConvThunk::ConvThunk(std::string name, libs::ConvDesc desc, std::vector<BufferSlice> operands, BufferSlice output,
                     std::unique_ptr<GpuThunk> fallback, std::optional<libs::ConvAlgorithm> tuned)
    : GpuThunk(Kind::kConv, std::move(name),
               [&] {
                 int64_t b = output.size;
                 for (const BufferSlice& s : operands) b += s.size;
                 return b;
               }(),
               [&] {
                 int64_t f = 2 * desc.batch * desc.output_features *
                             (desc.input_features / std::max<int64_t>(1, desc.feature_group_count));
                 for (int64_t s : desc.output_spatial) f *= s;
                 for (int64_t s : desc.filter_spatial) f *= s;
                 return f;
               }()),
      desc_(std::move(desc)),
      operands_(std::move(operands)),
      output_(output),
      fallback_(std::move(fallback)),
      tuned_(std::move(tuned)) {}

std::string ConvThunk::ToString() const {
  return StrCat("conv %", name(), " ", desc_.ToString(), use_fallback_ ? " [host fallback]" : "",
                plan_ ? StrCat(" ", algorithm_.description) : tuned_ ? StrCat(" ", tuned_->description) : "",
                tuned_ ? " [tuned]" : "");
}

Status ConvThunk::Initialize(const ThunkInitParams& params) {
  if (plan_) return OkStatus();
  Status s = [&]() -> Status {
    KILN_ASSIGN_OR_RETURN(plan_, libs::ConvPlan::Create(desc_, *params.device));
    if (tuned_) {
      algorithm_ = *tuned_;
      algorithm_.kind = desc_.kind;  // the tuned algorithm numbers are of this kind
      return OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(std::vector<libs::ConvAlgorithm> algos, plan_->ListAlgorithms());
    algorithm_ = algos.front();
    return OkStatus();
  }();
  if (s.ok()) return OkStatus();
  if (!Declined(s) || !fallback_) return s;
  KILN_LOG(Warning) << "convolution %" << name() << " runs on the host: " << s.message();
  plan_.reset();
  use_fallback_ = true;
  return fallback_->Initialize(params);
}

double ConvThunk::PeakFlops(const runtime::DeviceDescription& device) const {
  return PeakMatmulFlops(device, desc_.dtype, desc_.precision == Precision::kHighest);
}

uint64_t ConvThunk::workspace_bytes() const {
  if (use_fallback_) return fallback_->workspace_bytes();
  return plan_ ? algorithm_.workspace_bytes : 0;
}

Status ConvThunk::Execute(const ThunkExecuteParams& params) const {
  if (use_fallback_) return fallback_->Execute(params);
  if (!plan_) return FailedPrecondition("conv %", name(), " is not initialized");
  libs::ConvBuffers b;
  const runtime::DeviceMemory in0 = params.buffers->Get(operands_[0]);
  const runtime::DeviceMemory in1 = params.buffers->Get(operands_[1]);
  const runtime::DeviceMemory out = params.buffers->Get(output_);
  switch (desc_.kind) {  // the call's operands and result by kind (conv_config.h)
    case libs::ConvKind::kForward: b.x = in0, b.w = in1, b.y = out; break;
    case libs::ConvKind::kBackwardData: b.y = in0, b.w = in1, b.x = out; break;
    case libs::ConvKind::kBackwardFilter: b.x = in0, b.y = in1, b.w = out; break;
  }
  size_t next = 2;
  if (desc_.has_bias) b.bias = params.buffers->Get(operands_[next++]);
  if (desc_.side_input_scale != 0) b.side_input = params.buffers->Get(operands_[next++]);
  runtime::DeviceMemory ws = params.workspace;
  if (ws.size > algorithm_.workspace_bytes) ws.size = algorithm_.workspace_bytes;
  return plan_->Run(algorithm_, b, ws, *params.stream);
}

// ---- Attention ----

AttentionThunk::AttentionThunk(std::string name, libs::AttentionDesc desc, BufferSlice q, BufferSlice k, BufferSlice v,
                               BufferSlice output, std::unique_ptr<GpuThunk> fallback,
                               std::optional<libs::AttentionKernelConfig> tuned, int64_t cudnn_plan)
    : GpuThunk(Kind::kAttention, std::move(name),
               // The floor moves q, k, v and the output once.
               [&] {
                 const int64_t w = PrimitiveByteWidth(desc.type);
                 return w * desc.batch_count() * desc.head_dim * (2 * desc.q_len + 2 * desc.kv_len);
               }(),
               static_cast<int64_t>(desc.Flops())),
      desc_(desc),
      q_(q),
      k_(k),
      v_(v),
      output_(output),
      fallback_(std::move(fallback)),
      tuned_(std::move(tuned)),
      cudnn_index_(cudnn_plan) {}

std::string AttentionThunk::ToString() const {
  std::string how = use_fallback_ ? "host" : "-";
  if (plan_) how = StrCat("flash ", plan_->config().ToString());
  if (cudnn_plan_) how = StrCat("cudnn_sdpa plan ", cudnn_plan_->plan_index());
  if (!plan_ && !cudnn_plan_ && !use_fallback_) how = cudnn_index_ >= -1 ? "cudnn_sdpa" : "flash";
  return StrCat("attention %", name(), " ", how, " ", desc_.ToString());
}

double AttentionThunk::PeakFlops(const runtime::DeviceDescription& device) const {
  return PeakMatmulFlops(device, desc_.type, false);
}

Status AttentionThunk::Initialize(const ThunkInitParams& params) {
  if (plan_ || cudnn_plan_) return OkStatus();
  Status s;
  // Untuned, cuDNN's heuristic plan where this build has it (the library's favourite, as for
  // GEMMs), else the flash kernel's default config.
  const bool try_cudnn = cudnn_index_ >= -1 || (!tuned_ && libs::CudnnAttentionBuilt());
  if (try_cudnn) {
    StatusOr<std::unique_ptr<libs::CudnnAttentionPlan>> plan =
        libs::CudnnAttentionPlan::Create(desc_, *params.device, std::max<int64_t>(cudnn_index_, -1));
    if (plan.ok()) {
      cudnn_plan_ = std::move(plan).value();
      return OkStatus();
    }
    s = plan.status();
    if (cudnn_index_ >= -1) {
      KILN_LOG(Warning) << "attention %" << name() << ": cuDNN SDPA declined the tuned plan (" << s.message()
                        << "); the flash kernel runs it";
    }
  }
  const libs::AttentionKernelConfig config = tuned_ ? *tuned_ : libs::DefaultAttentionConfig(desc_);
  StatusOr<std::unique_ptr<libs::AttentionPlan>> plan = libs::AttentionPlan::Create(desc_, *params.device, config);
  if (plan.ok()) {
    plan_ = std::move(plan).value();
    return OkStatus();
  }
  if (!Declined(plan.status()) || !fallback_) return plan.status();
  KILN_LOG(Warning) << "attention %" << name() << " runs on the host: " << plan.status().message();
  use_fallback_ = true;
  return fallback_->Initialize(params);
}

Status AttentionThunk::Execute(const ThunkExecuteParams& params) const {
  if (use_fallback_) return fallback_->Execute(params);
  if (cudnn_plan_) {
    runtime::DeviceMemory ws = params.workspace;
    runtime::DeviceMemory lse;
    if (desc_.stats) lse = params.buffers->Get(lse_);
    return cudnn_plan_->Run(params.buffers->Get(q_), params.buffers->Get(k_), params.buffers->Get(v_),
                            params.buffers->Get(output_), ws, *params.stream, lse);
  }
  if (!plan_) return FailedPrecondition("attention %", name(), " is not initialized");
  runtime::DeviceMemory bias, mask;
  if (desc_.has_bias) bias = params.buffers->Get(bias_);
  if (desc_.has_mask) mask = params.buffers->Get(mask_);
  return plan_->Run(params.buffers->Get(q_), params.buffers->Get(k_), params.buffers->Get(v_),
                    params.buffers->Get(output_), *params.stream, bias, mask);
}

// ---- AttentionBackward ----

AttentionBackwardThunk::AttentionBackwardThunk(std::string name, libs::AttentionDesc desc,
                                               std::array<BufferSlice, 6> inputs, std::array<BufferSlice, 3> outputs,
                                               std::unique_ptr<GpuThunk> fallback)
    : GpuThunk(Kind::kAttention, std::move(name),
               // The floor reads q, k, v, dO and writes dQ, dK, dV once.
               [&] {
                 const int64_t w = PrimitiveByteWidth(desc.type);
                 return w * desc.batch_count() * desc.head_dim * (3 * desc.q_len + 4 * desc.kv_len);
               }(),
               // The forward again (2 products, unless its statistics are given) and the
               // backward's 5.
               static_cast<int64_t>(desc.Flops() * (desc.stats ? 2.5 : 3.5))),
      desc_(desc),
      in_(inputs),
      out_(outputs),
      fallback_(std::move(fallback)) {}

std::string AttentionBackwardThunk::ToString() const {
  return StrCat("attention backward %", name(), " ", use_fallback_ ? "host" : "cudnn_sdpa", " ", desc_.ToString());
}

double AttentionBackwardThunk::PeakFlops(const runtime::DeviceDescription& device) const {
  return PeakMatmulFlops(device, desc_.type, false);
}

Status AttentionBackwardThunk::Initialize(const ThunkInitParams& params) {
  if (plan_ || use_fallback_) return use_fallback_ ? fallback_->Initialize(params) : OkStatus();
  StatusOr<std::unique_ptr<libs::CudnnAttentionBackwardPlan>> plan =
      libs::CudnnAttentionBackwardPlan::Create(desc_, *params.device);
  if (plan.ok()) {
    plan_ = std::move(plan).value();
    return OkStatus();
  }
  if (!Declined(plan.status()) && plan.status().code() != StatusCode::kUnavailable) return plan.status();
  if (!fallback_) return plan.status();
  KILN_LOG(Warning) << "attention backward %" << name() << " runs on the host: " << plan.status().message();
  use_fallback_ = true;
  return fallback_->Initialize(params);
}

Status AttentionBackwardThunk::Execute(const ThunkExecuteParams& params) const {
  if (use_fallback_) return fallback_->Execute(params);
  if (!plan_) return FailedPrecondition("attention backward %", name(), " is not initialized");
  auto get = [&](const BufferSlice& s) { return params.buffers->Get(s); };
  runtime::DeviceMemory o, lse;
  if (desc_.stats) {
    o = get(in_[4]);
    lse = get(in_[5]);
  }
  return plan_->Run(get(in_[0]), get(in_[1]), get(in_[2]), get(in_[3]), get(out_[0]), get(out_[1]), get(out_[2]),
                    params.workspace, *params.stream, o, lse);
}

// ---- Sort ----

SortThunk::SortThunk(std::string name, libs::SortDesc desc, BufferSlice key_in, BufferSlice key_out,
                     std::vector<BufferSlice> values_in, std::vector<BufferSlice> values_out, BufferSlice indices_out)
    : GpuThunk(Kind::kSort, std::move(name),
               [&] {
                 int64_t b = key_in.size + key_out.size + indices_out.size;
                 for (const BufferSlice& s : values_in) b += s.size;
                 for (const BufferSlice& s : values_out) b += s.size;
                 return b;
               }()),
      desc_(std::move(desc)),
      key_in_(key_in),
      key_out_(key_out),
      values_in_(std::move(values_in)),
      values_out_(std::move(values_out)),
      indices_out_(indices_out) {}

std::string SortThunk::ToString() const { return StrCat("sort %", name(), " ", desc_.ToString()); }

Status SortThunk::Initialize(const ThunkInitParams& params) {
  if (plan_) return OkStatus();
  KILN_ASSIGN_OR_RETURN(plan_, libs::SortPlan::Create(desc_, *params.device));
  return OkStatus();
}

uint64_t SortThunk::workspace_bytes() const { return plan_ ? plan_->workspace_bytes() : 0; }

Status SortThunk::Execute(const ThunkExecuteParams& params) const {
  if (!plan_) return FailedPrecondition("sort %", name(), " is not initialized");
  libs::SortBuffers b;
  b.keys_in = params.buffers->Get(key_in_);
  b.keys_out = params.buffers->Get(key_out_);
  for (const BufferSlice& s : values_in_) b.values_in.push_back(params.buffers->Get(s));
  for (const BufferSlice& s : values_out_) b.values_out.push_back(params.buffers->Get(s));
  if (indices_out_.valid()) b.indices_out = params.buffers->Get(indices_out_);
  runtime::DeviceMemory ws = params.workspace;
  if (ws.size > plan_->workspace_bytes()) ws.size = plan_->workspace_bytes();
  return plan_->Run(b, ws, *params.stream);
}

namespace {

struct SortOrderGuess {
  libs::SortOrder order;
  bool canonicalize;
};

// Sample keys of type t, and their rank in XLA's total order (ties share a rank).
struct Sample {
  double value;
  int rank;            // total order
  int canonical_rank;  // total order after -0 -> +0, NaN -> +NaN
};

std::vector<Sample> SampleKeys(PrimitiveType t) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  if (IsFloatingPointType(t)) {
    // -NaN < -inf < -2.5 < -1 < -0 < +0 < 0.25 < 1 < 3 < +inf < +NaN
    return {{-nan, 0, 10},  {-inf, 1, 1}, {-2.5, 2, 2}, {-1.0, 3, 3}, {-0.0, 4, 5}, {0.0, 5, 5},
            {0.25, 6, 6},   {1.0, 7, 7},  {3.0, 8, 8},  {inf, 9, 9},  {nan, 10, 10}};
  }
  if (t == PrimitiveType::kPred) return {{0, 0, 0}, {1, 1, 1}};
  if (IsUnsignedIntegralType(t)) return {{0, 0, 0}, {1, 1, 1}, {7, 2, 2}, {100, 3, 3}};
  return {{-100, 0, 0}, {-1, 1, 1}, {0, 2, 2}, {1, 3, 3}, {7, 4, 4}, {100, 5, 5}};
}

Literal ScalarLiteral(PrimitiveType t, double v) {
  Literal l(Shape::Scalar(t));
  l.SetFromDouble(0, v);
  return l;
}

// Which operand the comparator orders by, and how; nullopt when it is not a single-key total
// order the sort kernels implement.
std::optional<std::pair<int64_t, SortOrderGuess>> ClassifyComparator(const HloInstruction& sort) {
  const HloComputation* cmp = sort.to_apply();
  if (!cmp) return std::nullopt;
  const int64_t n = sort.operand_count();
  if (cmp->num_parameters() != 2 * n) return std::nullopt;
  Evaluator ev;
  std::mt19937 rng(7);
  for (int64_t key = 0; key < n; ++key) {
    const PrimitiveType kt = sort.operand(key)->shape().element_type();
    if (IsComplexType(kt) || IsSubByteType(kt)) continue;
    std::vector<Sample> samples = SampleKeys(kt);
    // The comparator's answers for every pair of samples, with the other operands' parameters
    // set four different ways (they must not matter): (0, 1) and (1, 0) -- a tie-breaker on
    // another operand answers differently for equal keys --, then twice at random.
    bool consistent = true;
    std::vector<std::vector<bool>> less(samples.size(), std::vector<bool>(samples.size()));
    for (int trial = 0; trial < 4 && consistent; ++trial) {
      std::vector<Literal> others(2 * n);
      for (int64_t j = 0; j < n; ++j) {
        if (j == key) continue;
        const PrimitiveType t = sort.operand(j)->shape().element_type();
        for (int s = 0; s < 2; ++s) {
          const double v = trial == 0 ? s : trial == 1 ? 1 - s : static_cast<double>(rng() % 5);
          others[2 * j + s] = IsComplexType(t) ? Literal(Shape::Scalar(t)) : ScalarLiteral(t, v);
        }
      }
      for (size_t a = 0; a < samples.size() && consistent; ++a)
        for (size_t b = 0; b < samples.size() && consistent; ++b) {
          others[2 * key] = ScalarLiteral(kt, samples[a].value);
          others[2 * key + 1] = ScalarLiteral(kt, samples[b].value);
          std::vector<const Literal*> args;
          for (const Literal& l : others) args.push_back(&l);
          StatusOr<Literal> r = ev.EvaluateScalar(*cmp, args);
          if (!r.ok() || !r->shape().IsScalar() || r->shape().element_type() != PrimitiveType::kPred) return std::nullopt;
          bool v = r->GetAsBool(0);
          if (trial == 0) less[a][b] = v;
          else if (less[a][b] != v) consistent = false;
        }
    }
    if (!consistent) continue;
    for (bool canonicalize : {false, true})
      for (libs::SortOrder order : {libs::SortOrder::kAscending, libs::SortOrder::kDescending}) {
        bool match = true;
        for (size_t a = 0; a < samples.size() && match; ++a)
          for (size_t b = 0; b < samples.size() && match; ++b) {
            int ra = canonicalize ? samples[a].canonical_rank : samples[a].rank;
            int rb = canonicalize ? samples[b].canonical_rank : samples[b].rank;
            bool want = order == libs::SortOrder::kAscending ? ra < rb : ra > rb;
            match = less[a][b] == want;
          }
        if (match) return std::make_pair(key, SortOrderGuess{order, canonicalize});
      }
  }
  return std::nullopt;
}

int64_t RowsOf(const Shape& s) {
  int64_t r = 1;
  for (int64_t i = 0; i + 1 < s.rank(); ++i) r *= s.dimensions(i);
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<GpuThunk>> MakeSortThunk(const HloInstruction& instr, const std::vector<BufferSlice>& inputs,
                                                  const std::vector<BufferSlice>& outputs) {
  const bool topk = instr.opcode() == HloOpcode::kTopK ||
                    (instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == "TopK");
  if (instr.operand_count() < 1) return InvalidArgument("sort without operands");
  const Shape& key_shape = instr.operand(0)->shape();
  if (!key_shape.IsArray() || key_shape.rank() < 1)
    return Unimplemented("sort %", instr.name(), ": keys must be an array of rank >= 1");
  libs::SortDesc d;
  d.rows = RowsOf(key_shape);
  d.row_length = key_shape.dimensions(key_shape.rank() - 1);
  if (topk) {
    if (outputs.size() != 2 || inputs.size() != 1) return Unimplemented("topk %", instr.name(), ": expected 1 operand and 2 outputs");
    d.key_type = key_shape.element_type();
    const bool largest = instr.opcode() == HloOpcode::kTopK ? instr.attrs().largest : true;
    d.order = largest ? libs::SortOrder::kDescending : libs::SortOrder::kAscending;
    const Shape& out0 = instr.shape().tuple_shapes(0);
    d.k = out0.dimensions(out0.rank() - 1);
    d.index_type = instr.shape().tuple_shapes(1).element_type();
    KILN_RETURN_IF_ERROR(libs::ValidateSortDesc(d));
    return std::unique_ptr<GpuThunk>(
        new SortThunk(instr.name(), d, inputs[0], outputs[0], {}, {}, outputs[1]));
  }
  const std::vector<int64_t>& dims = instr.attrs().dimensions;
  if (dims.size() != 1 || dims[0] != key_shape.rank() - 1)
    return Unimplemented("sort %", instr.name(), ": only sorts along the minor dimension run on the device");
  auto guess = ClassifyComparator(instr);
  if (!guess) return Unimplemented("sort %", instr.name(), ": the comparator is not a single-key total order");
  const int64_t key = guess->first;
  d.key_type = instr.operand(key)->shape().element_type();
  d.order = guess->second.order;
  d.canonicalize_floats = guess->second.canonicalize && IsFloatingPointType(d.key_type);
  std::vector<BufferSlice> vin, vout;
  for (int64_t j = 0; j < instr.operand_count(); ++j) {
    if (j == key) continue;
    d.value_types.push_back(instr.operand(j)->shape().element_type());
    vin.push_back(inputs[j]);
    vout.push_back(outputs[j]);
  }
  KILN_RETURN_IF_ERROR(libs::ValidateSortDesc(d));
  return std::unique_ptr<GpuThunk>(
      new SortThunk(instr.name(), d, inputs[key], outputs[key], std::move(vin), std::move(vout), BufferSlice{}));
}

bool LibrarySortApplies(const HloInstruction& instr) {
  // The thunk only records slices: placeholders answer the question.
  std::vector<BufferSlice> inputs(instr.operand_count());
  std::vector<BufferSlice> outputs(ArrayLeafIndices(instr.shape()).size());
  return MakeSortThunk(instr, inputs, outputs).ok();
}

// ---- FFT ----

StatusOr<libs::FftDesc> MakeFftDesc(const HloInstruction& fft) {
  libs::FftDesc d;
  d.type = fft.attrs().fft_type;
  const PrimitiveType in = fft.operand(0)->shape().element_type();
  d.precision = (in == PrimitiveType::kF64 || in == PrimitiveType::kC128) ? PrimitiveType::kF64 : PrimitiveType::kF32;
  d.fft_length = fft.attrs().fft_length;
  const Shape& s = fft.operand(0)->shape();
  const int64_t lead = s.rank() - static_cast<int64_t>(d.fft_length.size());
  if (lead < 0) return InvalidArgument("fft %", fft.name(), ": more fft dimensions than operand dimensions");
  d.batch = 1;
  for (int64_t i = 0; i < lead; ++i) d.batch *= s.dimensions(i);
  KILN_RETURN_IF_ERROR(libs::ValidateFftDesc(d));
  return d;
}

FftThunk::FftThunk(std::string name, libs::FftDesc desc, BufferSlice input, BufferSlice output)
    : GpuThunk(Kind::kFft, std::move(name), input.size + output.size), desc_(std::move(desc)), input_(input),
      output_(output) {}

Status FftThunk::Initialize(const ThunkInitParams& params) {
  if (plan_) return OkStatus();
  KILN_ASSIGN_OR_RETURN(plan_, libs::FftPlan::GetOrCreate(desc_, *params.device));
  return OkStatus();
}

uint64_t FftThunk::workspace_bytes() const { return plan_ ? plan_->workspace_bytes() : 0; }

Status FftThunk::Execute(const ThunkExecuteParams& params) const {
  if (!plan_) return FailedPrecondition("fft %", name(), " is not initialized");
  runtime::DeviceMemory ws = params.workspace;
  if (ws.size > plan_->workspace_bytes()) ws.size = plan_->workspace_bytes();
  return plan_->Run(params.buffers->Get(input_), params.buffers->Get(output_), ws, *params.stream);
}

}  // namespace kiln::cuda
