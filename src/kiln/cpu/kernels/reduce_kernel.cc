// The reduction kernel: reduce, alone or rooting a kInput fusion (with its elementwise
// producers evaluated on the fly by a block expression program), several reductions over the
// same input space and loop outputs of the input's dimensions in one pass.
//
// Note [Reduction iteration]
//   The input dimensions are iterated as the loop space [K1, R, K2]: R the reduced dimensions
//   (in order), K2 the kept dimensions after the last reduced one, K1 the other kept ones (so
//   output element = k1 * |K2| + k2). With |K2| = 1 ("row" reductions: reduced dims innermost)
//   each output folds one contiguous range of the loop space; otherwise ("column" reductions)
//   each step adds a row of |K2| values to a vector of accumulators. Work is split across
//   threads by output rows / column tiles, and also along R (partial accumulators combined in
//   order at the end) when there are too few outputs to keep the threads busy -- only for the
//   native reducers (reduce_ops.h); a general reducer (any scalar computation, e.g. argmax's
//   (value, index) pairs) is folded sequentially per output, in the evaluator's order, through
//   the evaluator's compiled ScalarProgram.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/cpu/kernels/reduce_ops.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu::internal {
namespace {

struct ReduceSpec {
  const HloInstruction* reduce = nullptr;
  int n = 1;                      // inputs
  std::vector<int> input_roots;   // program roots of the inputs
  std::vector<int> outputs;       // output views
  std::vector<PrimitiveType> types;
  std::vector<int> widths;
  const FastReducer* fast = nullptr;
  std::unique_ptr<ScalarProgram> general;
  int acc_bytes = 0;  // per output element
  int init_offset = 0;  // in the init values program's roots
};

struct LoopOutput {
  int root;
  int output;
  int width;
};

class ReduceKernel final : public CpuKernel {
 public:
  std::string name_;
  std::unique_ptr<ExprProgram> program_;  // inputs of every reduce, then loop outputs
  std::unique_ptr<ExprProgram> inits_;    // init values (rank-0 roots)
  std::vector<ReduceSpec> reduces_;
  std::vector<LoopOutput> loop_outputs_;
  std::vector<int64_t> in_dims_, perm_;
  bool identity_perm_ = true;
  int64_t nk1_ = 1, nr_ = 1, nk2_ = 1;
  int num_outputs_ = 0;
  int num_inputs_ = 0;
  bool all_fast_ = true;
  CpuKernelOptions options_;

  std::string name() const override { return name_; }

  // Per-output-element accumulator storage of reduce r for `count` elements.
  void InitAccs(const ReduceSpec& r, uint8_t* acc, int64_t count, const uint8_t* init) const {
    if (r.fast) {
      r.fast->identity(acc, count);
      return;
    }
    for (int64_t i = 0; i < count; ++i)
      for (int k = 0; k < r.n; ++k)
        std::memcpy(acc + i * r.acc_bytes + k * 16, init + k * 16, r.widths[k]);
  }

  void FinishAccs(const ReduceSpec& r, const uint8_t* acc, int64_t count, const uint8_t* init,
                  std::span<const ArrayView> outputs, int64_t out_pos) const {
    if (r.fast) {
      uint8_t* o = static_cast<uint8_t*>(outputs[r.outputs[0]].data) + out_pos * r.widths[0];
      r.fast->finish(acc, init, o, count);
      return;
    }
    for (int k = 0; k < r.n; ++k) {
      uint8_t* o = static_cast<uint8_t*>(outputs[r.outputs[k]].data) + out_pos * r.widths[k];
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(o + i * r.widths[k], acc + i * r.acc_bytes + k * 16, r.widths[k]);
    }
  }

  // acc (one output element) folds values [off, off + len) of the block.
  void FoldRow(const ReduceSpec& r, uint8_t* acc, const void* const* vals, int64_t off,
               int64_t len) const {
    if (r.fast) {
      r.fast->row(acc, static_cast<const uint8_t*>(vals[r.input_roots[0]]) + off * r.widths[0],
                  len);
      return;
    }
    const void* args[32];
    void* res[16];
    for (int k = 0; k < r.n; ++k) {
      args[k] = acc + k * 16;
      res[k] = acc + k * 16;
    }
    for (int64_t i = 0; i < len; ++i) {
      for (int k = 0; k < r.n; ++k)
        args[r.n + k] = static_cast<const uint8_t*>(vals[r.input_roots[k]]) + (off + i) * r.widths[k];
      r.general->Run({args, static_cast<size_t>(2 * r.n)}, {res, static_cast<size_t>(r.n)});
    }
  }

  // acc[i] (consecutive output elements) folds value off + i of the block, i < len.
  void FoldCols(const ReduceSpec& r, uint8_t* acc, const void* const* vals, int64_t off,
                int64_t len) const {
    if (r.fast) {
      r.fast->cols(acc, static_cast<const uint8_t*>(vals[r.input_roots[0]]) + off * r.widths[0],
                   len);
      return;
    }
    const void* args[32];
    void* res[16];
    for (int64_t i = 0; i < len; ++i) {
      uint8_t* a = acc + i * r.acc_bytes;
      for (int k = 0; k < r.n; ++k) {
        args[k] = a + k * 16;
        res[k] = a + k * 16;
        args[r.n + k] =
            static_cast<const uint8_t*>(vals[r.input_roots[k]]) + (off + i) * r.widths[k];
      }
      r.general->Run({args, static_cast<size_t>(2 * r.n)}, {res, static_cast<size_t>(r.n)});
    }
  }

  // Writes the loop outputs of block [start, start + n) when they could not go straight to
  // their destination (a permuted loop space).
  void WriteLoopOutputs(const void* const* vals, int64_t start, int64_t n,
                        std::span<const ArrayView> outputs) const {
    if (loop_outputs_.empty()) return;
    const int64_t rank = static_cast<int64_t>(perm_.size());
    const std::vector<int64_t> istr = RowMajorStrides(in_dims_);
    std::vector<int64_t> ldims(rank);
    for (int64_t k = 0; k < rank; ++k) ldims[k] = in_dims_[perm_[k]];
    int64_t pos = start;
    while (pos < start + n) {
      int64_t rem = pos, base = 0;
      for (int64_t k = rank - 1; k >= 0; --k) {
        base += (rem % ldims[k]) * istr[perm_[k]];
        rem /= ldims[k];
      }
      const int64_t inner = ldims[rank - 1];
      const int64_t len = std::min(start + n - pos, inner - pos % inner);
      const int64_t st = istr[perm_[rank - 1]];
      for (const LoopOutput& lo : loop_outputs_) {
        const uint8_t* src = static_cast<const uint8_t*>(vals[lo.root]) + (pos - start) * lo.width;
        uint8_t* dst = static_cast<uint8_t*>(outputs[lo.output].data);
        for (int64_t t = 0; t < len; ++t)
          std::memcpy(dst + (base + t * st) * lo.width, src + t * lo.width, lo.width);
      }
      pos += len;
    }
  }

  // Evaluates block [start, start + n) of the loop space; loop outputs are written.
  void Eval(ExprScratch& scratch, int64_t start, int64_t n, std::span<const ArrayView> outputs,
            std::vector<void*>& dest, std::vector<const void*>& vals) const {
    if (identity_perm_) {
      for (const LoopOutput& lo : loop_outputs_)
        dest[lo.root] = static_cast<uint8_t*>(outputs[lo.output].data) + start * lo.width;
    }
    program_->EvalBlock(scratch, start, n, dest, vals);
    if (!identity_perm_) WriteLoopOutputs(vals.data(), start, n, outputs);
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (static_cast<int>(outputs.size()) != num_outputs_ ||
        static_cast<int>(inputs.size()) < num_inputs_)
      return InvalidArgument(name_, ": expected ", num_inputs_, " inputs and ", num_outputs_,
                             " outputs, got ", inputs.size(), " and ", outputs.size());
    std::vector<const void*> in;
    for (const ArrayView& v : inputs) in.push_back(v.data);
    // Init values.
    std::vector<uint8_t> init_bytes;
    {
      KILN_ASSIGN_OR_RETURN(ExprRunState s, inits_->Prepare(in));
      ExprScratch scratch = inits_->NewScratch(s);
      std::vector<const void*> vals(inits_->num_roots());
      inits_->EvalBlock(scratch, 0, 1, {}, vals);
      init_bytes.assign(vals.size() * 16, 0);
      for (size_t i = 0; i < vals.size(); ++i)
        std::memcpy(init_bytes.data() + i * 16, vals[i],
                    PrimitiveByteWidth(inits_->root_type(static_cast<int>(i))));
    }
    auto init_of = [&](const ReduceSpec& r) { return init_bytes.data() + r.init_offset * 16; };
    const int64_t nout = nk1_ * nk2_;
    if (nout == 0 && loop_outputs_.empty()) return OkStatus();
    if (nr_ == 0 || program_->loop_elements() == 0) {
      // Nothing to fold: every output is its init value.
      for (const ReduceSpec& r : reduces_) {
        std::vector<uint8_t> acc(std::max<int64_t>(1, nout) * std::max(r.acc_bytes, 1));
        InitAccs(r, acc.data(), nout, init_of(r));
        FinishAccs(r, acc.data(), nout, init_of(r), outputs, 0);
      }
      return OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(ExprRunState state, program_->Prepare(in));
    const int64_t block = program_->block_elements();
    const int threads = NumThreads(ctx);
    const int64_t total = program_->loop_elements();
    // Note [Parallel grain] (common.h); each reduce adds a unit of work per element.
    const int64_t wpe = program_->work_per_element() + static_cast<int64_t>(reduces_.size());
    const bool parallel = threads > 1 && WorthParallel(options_, total, wpe);
    const int64_t chunk_elems = MinChunkElements(options_, wpe);
    const int64_t want_tasks = parallel ? 4 * threads : 1;
    const int nroots = program_->num_roots();

    if (nk2_ == 1) {
      // ---- Row reductions: output o folds loop positions [o * nr, (o + 1) * nr). ----
      int64_t parts = 1;
      if (all_fast_ && nk1_ < want_tasks) {
        parts = std::min<int64_t>((want_tasks + nk1_ - 1) / nk1_,
                                  std::max<int64_t>(1, nr_ / std::max<int64_t>(2048, chunk_elems)));
      }
      if (parts == 1) {
        const int64_t min_rows = std::max<int64_t>(1, chunk_elems / std::max<int64_t>(1, nr_));
        ParallelFor(parallel ? ctx : KernelContext{}, nk1_, min_rows, [&](int64_t o0, int64_t o1) {
          ExprScratch scratch = program_->NewScratch(state);
          std::vector<void*> dest(nroots, nullptr);
          std::vector<const void*> vals(nroots);
          std::vector<std::vector<uint8_t>> accs(reduces_.size());
          for (size_t i = 0; i < reduces_.size(); ++i) {
            accs[i].resize((o1 - o0) * reduces_[i].acc_bytes);
            InitAccs(reduces_[i], accs[i].data(), o1 - o0, init_of(reduces_[i]));
          }
          const int64_t a = o0 * nr_, b = o1 * nr_;
          for (int64_t s = a; s < b; s += block) {
            const int64_t len = std::min(block, b - s);
            Eval(scratch, s, len, outputs, dest, vals);
            int64_t pos = s;
            while (pos < s + len) {
              const int64_t row = pos / nr_;
              const int64_t seg = std::min(s + len, (row + 1) * nr_) - pos;
              for (size_t i = 0; i < reduces_.size(); ++i)
                FoldRow(reduces_[i], accs[i].data() + (row - o0) * reduces_[i].acc_bytes,
                        vals.data(), pos - s, seg);
              pos += seg;
            }
          }
          for (size_t i = 0; i < reduces_.size(); ++i)
            FinishAccs(reduces_[i], accs[i].data(), o1 - o0, init_of(reduces_[i]), outputs, o0);
        });
        return OkStatus();
      }
      // Few long rows: split each row into parts, fold partials in order.
      const int64_t plen = (nr_ + parts - 1) / parts;
      std::vector<std::vector<uint8_t>> partials(reduces_.size());
      for (size_t i = 0; i < reduces_.size(); ++i)
        partials[i].resize(nk1_ * parts * reduces_[i].acc_bytes);
      ParallelFor(ctx, nk1_ * parts, 1, [&](int64_t t0, int64_t t1) {
        ExprScratch scratch = program_->NewScratch(state);
        std::vector<void*> dest(nroots, nullptr);
        std::vector<const void*> vals(nroots);
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t row = t / parts, part = t % parts;
          std::vector<uint8_t*> acc(reduces_.size());
          for (size_t i = 0; i < reduces_.size(); ++i) {
            acc[i] = partials[i].data() + t * reduces_[i].acc_bytes;
            reduces_[i].fast->identity(acc[i], 1);
          }
          const int64_t a = row * nr_ + part * plen, b = row * nr_ + std::min(nr_, (part + 1) * plen);
          for (int64_t s = a; s < b; s += block) {
            const int64_t len = std::min(block, b - s);
            Eval(scratch, s, len, outputs, dest, vals);
            for (size_t i = 0; i < reduces_.size(); ++i) FoldRow(reduces_[i], acc[i], vals.data(), 0, len);
          }
        }
      });
      for (size_t i = 0; i < reduces_.size(); ++i) {
        const ReduceSpec& r = reduces_[i];
        for (int64_t row = 0; row < nk1_; ++row) {
          uint8_t* first = partials[i].data() + row * parts * r.acc_bytes;
          for (int64_t part = 1; part < parts; ++part)
            r.fast->combine(first, first + part * r.acc_bytes, 1);
          FinishAccs(r, first, 1, init_of(r), outputs, row);
        }
      }
      return OkStatus();
    }

    // ---- Column reductions: output (k1, k2) folds loop positions (k1 * nr + r) * nk2 + k2. ----
    // Tasks are (k1, column tile, part of R). With too few outputs rows for the threads, R is
    // split into parts (partial accumulators, combined in order at the end, in parallel over
    // the columns) and then the columns into tiles of at least kMinTile, so that e.g. the bias
    // gradient of a [256,1024] activation (one output row) runs as 64 tasks, not 4.
    constexpr int64_t kMaxParts = 16, kMinPartRows = 4, kMinTile = 128;
    int64_t tile = std::min(nk2_, block);
    int64_t tiles = (nk2_ + tile - 1) / tile;
    int64_t parts = 1;
    if (parallel && all_fast_ && nk1_ * tiles < want_tasks) {
      const int64_t need = (want_tasks + nk1_ * tiles - 1) / (nk1_ * tiles);
      const int64_t rows_min = std::max(kMinPartRows, (chunk_elems + tile - 1) / tile);
      parts = std::max<int64_t>(1, std::min({need, kMaxParts, nr_ / rows_min}));
      if (nk1_ * tiles * parts < want_tasks && tile >= 2 * kMinTile) {
        const int64_t split = std::min((want_tasks + nk1_ * tiles * parts - 1) / (nk1_ * tiles * parts),
                                       tile / kMinTile);
        tile = ((tile + split - 1) / split + 15) / 16 * 16;
        tiles = (nk2_ + tile - 1) / tile;
      }
    }
    const int64_t plen = (nr_ + parts - 1) / parts;
    parts = (nr_ + plen - 1) / plen;
    // Rows of one tile per block when the whole row fits.
    const int64_t rows_per_block = tile == nk2_ ? std::max<int64_t>(1, block / nk2_) : 1;
    std::vector<std::vector<uint8_t>> partials(reduces_.size());
    if (parts > 1)
      for (size_t i = 0; i < reduces_.size(); ++i)
        partials[i].resize(nk1_ * parts * nk2_ * reduces_[i].acc_bytes);
    const int64_t tasks = nk1_ * tiles * parts;
    const int64_t min_tasks = std::max<int64_t>(1, chunk_elems / std::max<int64_t>(1, plen * tile));
    ParallelFor(parallel ? ctx : KernelContext{}, tasks, min_tasks, [&](int64_t t0, int64_t t1) {
      ExprScratch scratch = program_->NewScratch(state);
      std::vector<void*> dest(nroots, nullptr);
      std::vector<const void*> vals(nroots);
      std::vector<std::vector<uint8_t>> local(reduces_.size());
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t part = t % parts, k1 = t / parts / tiles, ti = t / parts % tiles;
        const int64_t c0 = ti * tile, w = std::min(tile, nk2_ - c0);
        const int64_t r0 = part * plen, r1 = std::min(nr_, r0 + plen);
        std::vector<uint8_t*> acc(reduces_.size());
        for (size_t i = 0; i < reduces_.size(); ++i) {
          const ReduceSpec& r = reduces_[i];
          if (parts > 1) {
            acc[i] = partials[i].data() + ((k1 * parts + part) * nk2_ + c0) * r.acc_bytes;
          } else {
            local[i].resize(w * r.acc_bytes);
            acc[i] = local[i].data();
          }
          InitAccs(r, acc[i], w, init_of(r));
        }
        for (int64_t rr = r0; rr < r1; rr += rows_per_block) {
          const int64_t nrows = std::min(rows_per_block, r1 - rr);
          const int64_t s = (k1 * nr_ + rr) * nk2_ + c0;
          const int64_t len = nrows == 1 ? w : nrows * nk2_;
          Eval(scratch, s, len, outputs, dest, vals);
          for (int64_t q = 0; q < nrows; ++q)
            for (size_t i = 0; i < reduces_.size(); ++i)
              FoldCols(reduces_[i], acc[i], vals.data(), q * nk2_, w);
        }
        if (parts == 1)
          for (size_t i = 0; i < reduces_.size(); ++i)
            FinishAccs(reduces_[i], acc[i], w, init_of(reduces_[i]), outputs, k1 * nk2_ + c0);
      }
    });
    if (parts > 1) {
      // Combine the parts in order, over column ranges in parallel.
      constexpr int64_t kCombineCols = 256;
      const int64_t ranges = (nk2_ + kCombineCols - 1) / kCombineCols;
      ParallelFor(parallel ? ctx : KernelContext{}, nk1_ * ranges,
                  std::max<int64_t>(1, chunk_elems / (kCombineCols * parts)),
                  [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          const int64_t k1 = q / ranges, c0 = (q % ranges) * kCombineCols;
          const int64_t w = std::min(kCombineCols, nk2_ - c0);
          for (size_t i = 0; i < reduces_.size(); ++i) {
            const ReduceSpec& r = reduces_[i];
            uint8_t* first = partials[i].data() + ((k1 * parts) * nk2_ + c0) * r.acc_bytes;
            for (int64_t part = 1; part < parts; ++part)
              r.fast->combine(first, first + part * nk2_ * r.acc_bytes, w);
            FinishAccs(r, first, w, init_of(r), outputs, k1 * nk2_ + c0);
          }
        }
      });
    }
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateReduceKernel(const HloInstruction& instr,
                                                        const CpuKernelOptions& options) {
  LoopRoots lr = RootsOf(instr);
  auto k = std::make_unique<ReduceKernel>();
  k->options_ = options;
  for (const HloInstruction* op : instr.operands())
    k->num_inputs_ += static_cast<int>(op->shape().LeafCount());
  // Classify the roots: reduces (with their inputs as program roots) and loop outputs.
  std::vector<const HloInstruction*> roots;
  std::vector<const HloInstruction*> init_roots;
  const HloInstruction* first = nullptr;
  for (const HloInstruction* r : lr.roots)
    if (r->opcode() == HloOpcode::kReduce) first = r;
  if (!first) return Unimplemented("reduce kernel: no reduce root");
  const int64_t nin0 = first->operand_count() / 2;
  const Shape& in_shape = first->operand(0)->shape();
  if (!in_shape.IsArray()) return Unimplemented("reduce kernel: input");
  std::vector<int64_t> red = first->attrs().dimensions;
  std::sort(red.begin(), red.end());
  int output = 0;
  for (const HloInstruction* r : lr.roots) {
    if (r->opcode() != HloOpcode::kReduce) {
      if (!r->shape().IsArray() || r->shape().dimensions() != in_shape.dimensions())
        return Unimplemented("reduce kernel: a loop output of other dimensions");
      k->loop_outputs_.push_back({static_cast<int>(roots.size()), output++,
                                  PrimitiveByteWidth(r->shape().element_type())});
      roots.push_back(r);
      continue;
    }
    ReduceSpec spec;
    spec.reduce = r;
    if (r->operand_count() % 2 != 0 || r->operand_count() == 0)
      return InvalidArgument("reduce %", r->name(), " needs N inputs and N inits");
    spec.n = static_cast<int>(r->operand_count() / 2);
    if (spec.n > 16) return Unimplemented("reduce kernel: more than 16 inputs");
    std::vector<int64_t> rd = r->attrs().dimensions;
    std::sort(rd.begin(), rd.end());
    if (rd != red) return Unimplemented("reduce kernel: reductions over different dimensions");
    (void)nin0;
    for (int i = 0; i < spec.n; ++i) {
      const HloInstruction* x = r->operand(i);
      const HloInstruction* init = r->operand(spec.n + i);
      if (!x->shape().IsArray() || x->shape().dimensions() != in_shape.dimensions())
        return Unimplemented("reduce kernel: inputs of different dimensions");
      if (!init->shape().IsArray() || init->shape().rank() != 0 ||
          init->shape().element_type() != x->shape().element_type())
        return InvalidArgument("reduce %", r->name(), ": bad init value");
      spec.input_roots.push_back(static_cast<int>(roots.size()));
      roots.push_back(x);
      spec.types.push_back(x->shape().element_type());
      spec.widths.push_back(PrimitiveByteWidth(x->shape().element_type()));
      spec.outputs.push_back(output++);
    }
    spec.init_offset = static_cast<int>(init_roots.size());
    for (int i = 0; i < spec.n; ++i) init_roots.push_back(r->operand(spec.n + i));
    // The reducer.
    const HloComputation* f = r->to_apply();
    if (!f) return InvalidArgument("reduce %", r->name(), " has no to_apply");
    std::unique_ptr<ScalarProgram> prog = ScalarProgram::Compile(*f);
    if (!prog) return Unimplemented("reduce kernel: reducer is not a scalar computation");
    bool ok = prog->num_parameters() == 2 * spec.n && prog->num_results() == spec.n;
    for (int i = 0; ok && i < spec.n; ++i)
      ok = prog->parameter_type(i) == spec.types[i] &&
           prog->parameter_type(spec.n + i) == spec.types[i] &&
           prog->result_type(i) == spec.types[i];
    if (!ok) return InvalidArgument("reduce %", r->name(), ": reducer does not match the inputs");
    if (spec.n == 1 && prog->single_op_instr() && prog->single_op_params().size() == 2 &&
        prog->single_op_params()[0] != prog->single_op_params()[1] &&
        prog->single_op_instr()->shape().element_type() == spec.types[0])
      spec.fast = FindFastReducer(prog->single_op_instr()->opcode(), spec.types[0]);
    if (spec.fast) {
      spec.acc_bytes = spec.fast->acc_size;
    } else {
      spec.general = std::move(prog);
      spec.acc_bytes = 16 * spec.n;
      k->all_fast_ = false;
    }
    k->reduces_.push_back(std::move(spec));
  }
  k->num_outputs_ = output;
  // Loop space [K1, R, K2].
  const int64_t rank = in_shape.rank();
  std::vector<bool> is_red(rank, false);
  for (int64_t d : red) {
    if (d < 0 || d >= rank || is_red[d]) return InvalidArgument("reduce: bad dimensions");
    is_red[d] = true;
  }
  int64_t last_red = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (is_red[d]) last_red = d;
  std::vector<int64_t> k1, k2;
  for (int64_t d = 0; d < rank; ++d) {
    if (is_red[d]) continue;
    (d > last_red ? k2 : k1).push_back(d);
  }
  k->perm_ = k1;
  for (int64_t d : red) k->perm_.push_back(d);
  for (int64_t d : k2) k->perm_.push_back(d);
  k->in_dims_ = in_shape.dimensions();
  for (int64_t d : k1) k->nk1_ *= in_shape.dimensions(d);
  for (int64_t d : red) k->nr_ *= in_shape.dimensions(d);
  for (int64_t d : k2) k->nk2_ *= in_shape.dimensions(d);
  std::vector<int64_t> loop_dims;
  for (int64_t d : k->perm_) loop_dims.push_back(in_shape.dimensions(d));
  for (int64_t i = 0; i < rank; ++i) k->identity_perm_ &= k->perm_[i] == i;
  ExprProgram::Options po;
  po.block_elements = options.block_elements;
  po.fuse_chains = options.expr_chains;
  KILN_ASSIGN_OR_RETURN(k->program_,
                        ExprProgram::Compile(roots, loop_dims,
                                             k->identity_perm_ ? std::vector<int64_t>{} : k->perm_,
                                             lr.leaves, po));
  ExprProgram::Options so;
  so.block_elements = 1;
  so.fuse_chains = options.expr_chains;
  KILN_ASSIGN_OR_RETURN(k->inits_, ExprProgram::Compile(init_roots, {}, {}, lr.leaves, so));
  k->name_ = StrCat(instr.opcode() == HloOpcode::kFusion ? "reduce_fusion[" : "reduce[",
                    ShapeText(in_shape), " dims={", StrJoin(red, ","), "}",
                    k->nk2_ == 1 ? " rows" : " columns", ", ", k->reduces_.size(), " reduce",
                    k->reduces_.size() == 1 ? "" : "s",
                    k->loop_outputs_.empty() ? "" : StrCat(" + ", k->loop_outputs_.size(), " loop"),
                    k->all_fast_ ? "" : ", general reducer", "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
