// The loop kernel (kLoop fusions and standalone elementwise/shape ops) and the
// dynamic-update-slice kernel.
#include <cstring>
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/stream_store.h"
#include "kiln/cpu/kernels/expr_internal.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln::cpu::internal {

LoopRoots RootsOf(const HloInstruction& instr) {
  LoopRoots r;
  if (instr.opcode() == HloOpcode::kFusion && instr.fused_computation()) {
    const HloInstruction* root = instr.fused_computation()->root_instruction();
    if (root->opcode() == HloOpcode::kTuple) {
      for (const HloInstruction* op : root->operands()) r.roots.push_back(op);
    } else {
      r.roots.push_back(root);
    }
    r.leaves = [](const HloInstruction* n) -> int {
      return n->opcode() == HloOpcode::kParameter ? static_cast<int>(n->parameter_number()) : -1;
    };
  } else {
    r.roots.push_back(&instr);
    std::vector<const HloInstruction*> ops(instr.operands().begin(), instr.operands().end());
    r.leaves = [ops](const HloInstruction* n) -> int {
      for (size_t i = 0; i < ops.size(); ++i)
        if (ops[i] == n) return static_cast<int>(i);
      return -1;
    };
  }
  return r;
}

namespace {

std::vector<const void*> InputPointers(std::span<const ArrayView> inputs) {
  std::vector<const void*> ptrs;
  for (const ArrayView& v : inputs) ptrs.push_back(v.data);
  return ptrs;
}

// Note [Streaming stores]
//   A store to a line not in the cache first reads the line (write-allocate): writing a large
//   output costs twice its size in memory traffic, and evicts data that is still to be read.
//   Streaming (non-temporal) stores write whole lines straight to memory. On the 2-core dev VM,
//   writing 16 MiB from a block in L1 took 1.8-2.3 ms with plain stores and 1.05 ms streamed;
//   the final passes of softmax and layernorm (a 16-MiB output each) are such writes. So a
//   loop kernel whose outputs total kStreamOutputBytes (4 MiB) or more -- too large to stay in
//   a core's L2 for the consumer anyway -- or whose caller says so (KernelContext::
//   stream_outputs: the row tiles of such an array) computes each block in its scratch and
//   streams it out (StreamCopy); each thread fences its streamed stores before it reports its
//   chunk done.
// Note [In-place loop kernels]
//   Buffer assignment may give a loop kernel an output that is one of its inputs (a while
//   body's state leaf computed elementwise from its old value: BufferAssignmentOptions::
//   elementwise_state_updates, Note [While loop buffers]); the fused computation then reads
//   that input only at the element it writes. A block program does not promise to read every
//   input of a block before writing the block's outputs (a multi-output program writes its
//   first root before computing the second, some ops read their operand again after writing),
//   so an output overlapping an input goes through the scratch: each block is evaluated into
//   the thread's scratch, reading only that block's positions, and then copied out. Blocks are
//   disjoint, so threads never see each other's writes.
bool OutputsOverlapInputs(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs) {
  for (const ArrayView& o : outputs) {
    const auto* ob = static_cast<const uint8_t*>(o.data);
    const auto* oe = ob + o.byte_size();
    for (const ArrayView& i : inputs) {
      const auto* ib = static_cast<const uint8_t*>(i.data);
      if (ib < oe && ob < ib + i.byte_size()) return true;
    }
  }
  return false;
}

class LoopKernel final : public CpuKernel {
 public:
  LoopKernel(std::string name, std::unique_ptr<ExprProgram> program, int num_inputs,
             const CpuKernelOptions& options)
      : name_(std::move(name)),
        program_(std::move(program)),
        num_inputs_(num_inputs),
        options_(options) {}

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    const int nr = program_->num_roots();
    if (static_cast<int>(outputs.size()) != nr)
      return InvalidArgument(name_, ": expected ", nr, " outputs, got ", outputs.size());
    if (static_cast<int>(inputs.size()) < num_inputs_)
      return InvalidArgument(name_, ": expected ", num_inputs_, " inputs, got ", inputs.size());
    const int64_t n = program_->loop_elements();
    for (int r = 0; r < nr; ++r)
      if (outputs[r].shape.num_elements() != n ||
          outputs[r].shape.element_type() != program_->root_type(r))
        return InvalidArgument(name_, ": output ", r, " is ", ShapeText(outputs[r].shape));
    if (n == 0) return OkStatus();
    std::vector<const void*> in = InputPointers(inputs);
    KILN_ASSIGN_OR_RETURN(ExprRunState state, program_->Prepare(in));
    const int64_t block = program_->block_elements();
    const int64_t blocks = (n + block - 1) / block;
    std::vector<int> widths;
    for (int r = 0; r < nr; ++r) widths.push_back(PrimitiveByteWidth(program_->root_type(r)));
    // Note [Parallel grain] (common.h): chunks of whole blocks, sized by the program's work.
    const int64_t wpe = program_->work_per_element();
    const int64_t min_chunk = std::max<int64_t>(1, MinChunkElements(options_, wpe) / block);
    const KernelContext run_ctx = WorthParallel(options_, n, wpe) ? ctx : KernelContext{};
    int64_t out_bytes = 0;
    for (int r = 0; r < nr; ++r) out_bytes += n * widths[r];
    const bool stream = ctx.stream_outputs || out_bytes >= kStreamOutputBytes;
    const bool in_place = OutputsOverlapInputs(inputs, outputs);  // Note [In-place loop kernels]
    ParallelFor(run_ctx, blocks, min_chunk, [&](int64_t b0, int64_t b1) {
      ExprScratch scratch = program_->NewScratch(state);
      std::vector<void*> dest(nr);
      std::vector<const void*> results(nr);
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t start = b * block, len = std::min(block, n - start);
        for (int r = 0; r < nr; ++r)
          dest[r] = static_cast<uint8_t*>(outputs[r].data) + start * widths[r];
        if (!stream && !in_place) {
          program_->EvalBlock(scratch, start, len, dest, results);
          continue;
        }
        // Note [Streaming stores] / [In-place loop kernels]: the block in the scratch, then out.
        program_->EvalBlock(scratch, start, len, {}, results);
        for (int r = 0; r < nr; ++r) {
          const size_t bytes = static_cast<size_t>(len) * widths[r];
          if (in_place) {
            if (results[r] != dest[r]) std::memmove(dest[r], results[r], bytes);
          } else {
            StreamCopy(dest[r], results[r], bytes);
          }
        }
      }
      if (stream && !in_place) StreamFence();
    });
    return OkStatus();
  }

 private:
  std::string name_;
  std::unique_ptr<ExprProgram> program_;
  int num_inputs_;
  CpuKernelOptions options_;
};

int NumInputLeaves(const HloInstruction& instr) {
  int n = 0;
  for (const HloInstruction* op : instr.operands()) n += static_cast<int>(op->shape().LeafCount());
  return n;
}

// Note [Contiguous dynamic slices]
//   A scan over stacked weights (lax.scan over layers: gpt_scan) starts each step with
//   dynamic-slice(stacked, i, 0, 0) and a reshape dropping the unit dimension: one contiguous
//   range of the stacked array (every dimension after the first sliced one taken whole, every
//   one before it of size 1). Through the block expression program that copy cost ~1 ns an
//   element (index maps, per-block dispatch); as one memcpy from the clamped start's offset
//   (split over the pool when large) it runs at memory speed. Any chain of reshapes, bitcasts
//   and copies above the slice keeps the elements in order (layouts are normalized row-major),
//   so it is the same copy.
class ContiguousSliceKernel final : public CpuKernel {
 public:
  std::string name_;
  int operand = 0;                   // input leaf of the sliced array
  std::unique_ptr<ExprProgram> starts;  // the start indices (rank-0 roots)
  std::vector<int64_t> dims, sizes;
  int width = 0;
  int num_inputs = 0;

  std::string name() const override { return name_; }
  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (outputs.size() != 1 || static_cast<int>(inputs.size()) < num_inputs)
      return InvalidArgument(name_, ": expected ", num_inputs, " inputs and 1 output");
    const ArrayView& in = inputs[operand];
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    if (in.shape.dimensions() != dims || outputs[0].shape.num_elements() != n)
      return InvalidArgument(name_, ": shapes differ from the compiled ones");
    if (n == 0) return OkStatus();
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<const void*> ptrs = InputPointers(inputs);
    KILN_ASSIGN_OR_RETURN(ExprRunState ss, starts->Prepare(ptrs));
    ExprScratch scratch = starts->NewScratch(ss);
    std::vector<const void*> vals(rank);
    starts->EvalBlock(scratch, 0, 1, {}, vals);
    const std::vector<int64_t> strides = RowMajorStrides(dims);
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += ClampedIndexValue(vals[d], starts->root_type(static_cast<int>(d)), dims[d] - sizes[d]) *
                strides[d];
    ParallelCopy(ctx, outputs[0].data, static_cast<const uint8_t*>(in.data) + offset * width, n * width);
    return OkStatus();
  }
};

// The kernel of Note [Contiguous dynamic slices] when `lr` is such a slice; null otherwise.
StatusOr<std::unique_ptr<CpuKernel>> MaybeContiguousSlice(const HloInstruction& instr,
                                                          const LoopRoots& lr,
                                                          const CpuKernelOptions& options) {
  if (lr.roots.size() != 1) return std::unique_ptr<CpuKernel>();
  const HloInstruction* node = lr.roots[0];
  const Shape& out = node->shape();
  while (node->opcode() == HloOpcode::kReshape || node->opcode() == HloOpcode::kBitcast ||
         node->opcode() == HloOpcode::kCopy) {
    if (lr.leaves(node) >= 0 || node->operand_count() != 1 || !node->operand(0)->shape().IsArray() ||
        node->operand(0)->shape().element_type() != out.element_type() ||
        node->operand(0)->shape().num_elements() != out.num_elements())
      return std::unique_ptr<CpuKernel>();
    node = node->operand(0);
  }
  if (node->opcode() != HloOpcode::kDynamicSlice || lr.leaves(node) >= 0)
    return std::unique_ptr<CpuKernel>();
  const HloInstruction* src = node->operand(0);
  const int leaf = lr.leaves(src);
  const Shape& ss = src->shape();
  const std::vector<int64_t>& sizes = node->attrs().dynamic_slice_sizes;
  if (leaf < 0 || !ss.IsArray() || ss.rank() == 0 || ss.element_type() != out.element_type() ||
      static_cast<int64_t>(sizes.size()) != ss.rank() || node->operand_count() != ss.rank() + 1)
    return std::unique_ptr<CpuKernel>();
  // One range: some dim k with every slice size before it 1 and every dim after it whole.
  int64_t kd = 0;
  while (kd < ss.rank() - 1 && sizes[kd] == 1) ++kd;
  for (int64_t d = 0; d < ss.rank(); ++d)
    if (sizes[d] < 0 || sizes[d] > ss.dimensions(d) || (d > kd && sizes[d] != ss.dimensions(d)))
      return std::unique_ptr<CpuKernel>();
  std::vector<const HloInstruction*> starts;
  for (int64_t d = 0; d < ss.rank(); ++d) {
    const HloInstruction* s = node->operand(1 + d);
    if (!s->shape().IsArray() || s->shape().rank() != 0 || !IsIntegralType(s->shape().element_type()))
      return std::unique_ptr<CpuKernel>();
    starts.push_back(s);
  }
  auto k = std::make_unique<ContiguousSliceKernel>();
  ExprProgram::Options so;
  so.block_elements = 1;
  so.fuse_chains = options.expr_chains;
  KILN_ASSIGN_OR_RETURN(k->starts, ExprProgram::Compile(starts, {}, {}, lr.leaves, so));
  k->operand = leaf;
  k->dims = ss.dimensions();
  k->sizes = sizes;
  k->width = PrimitiveByteWidth(out.element_type());
  k->num_inputs = NumInputLeaves(instr);
  k->name_ = StrCat(instr.opcode() == HloOpcode::kFusion ? "slice_copy_fusion[" : "slice_copy[",
                    ShapeText(out), " <- ", ShapeText(ss), "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateLoopKernel(const HloInstruction& instr,
                                                      const CpuKernelOptions& options) {
  for (const HloInstruction* op : instr.operands())
    if (!op->shape().IsArray()) return Unimplemented("loop kernel: non-array operand");
  LoopRoots lr = RootsOf(instr);
  for (const HloInstruction* r : lr.roots)
    if (r->opcode() == HloOpcode::kDynamicUpdateSlice)
      return Unimplemented("loop kernel: dynamic-update-slice root");
  if (lr.roots.empty() || !lr.roots[0]->shape().IsArray())
    return Unimplemented("loop kernel: non-array root");
  {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<CpuKernel> slice, MaybeContiguousSlice(instr, lr, options));
    if (slice) return slice;
  }
  ExprProgram::Options po;
  po.block_elements = options.block_elements;
  po.fuse_chains = options.expr_chains;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ExprProgram> program,
                        ExprProgram::Compile(lr.roots, lr.roots[0]->shape().dimensions(), {},
                                             lr.leaves, po));
  std::string name = StrCat(instr.opcode() == HloOpcode::kFusion ? "loop_fusion" : "loop", "[",
                            HloOpcodeString(instr.opcode()) == "fusion"
                                ? ShapeText(lr.roots[0]->shape())
                                : StrCat(HloOpcodeString(instr.opcode()), " ",
                                         ShapeText(lr.roots[0]->shape())),
                            ", ", program->num_ops(), " ops", lr.roots.size() > 1
                                ? StrCat(", ", lr.roots.size(), " outputs")
                                : std::string(), "]");
  return std::unique_ptr<CpuKernel>(
      new LoopKernel(std::move(name), std::move(program), NumInputLeaves(instr), options));
}

// ---- dynamic-update-slice ----

namespace {

class DusKernel final : public CpuKernel {
 public:
  std::string name_;
  std::unique_ptr<ExprProgram> update_;  // the update over its own dims
  std::unique_ptr<ExprProgram> starts_;  // the start indices (rank-0 roots), or null
  int buffer_input = 0;
  bool in_place_ok = false;
  std::vector<int64_t> buffer_dims, update_dims;
  PrimitiveType type = PrimitiveType::kInvalid;
  int num_inputs = 0;
  CpuKernelOptions options;

  std::string name() const override { return name_; }
  bool SupportsInPlace(int64_t output, int64_t operand) const override {
    return in_place_ok && output == 0 && operand == buffer_input;
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (outputs.size() != 1 || static_cast<int>(inputs.size()) < num_inputs)
      return InvalidArgument(name_, ": expected ", num_inputs, " inputs and 1 output");
    const ArrayView& out = outputs[0];
    const ArrayView& buf = inputs[buffer_input];
    if (out.shape.dimensions() != buffer_dims || buf.shape.dimensions() != buffer_dims)
      return InvalidArgument(name_, ": buffer shapes differ");
    const int w = PrimitiveByteWidth(type);
    const int64_t total = out.shape.num_elements();
    if (out.data != buf.data) ParallelCopy(ctx, out.data, buf.data, total * w);
    const int64_t n = update_->loop_elements();
    if (n == 0 || total == 0) return OkStatus();
    std::vector<const void*> in = InputPointers(inputs);
    const int64_t rank = static_cast<int64_t>(buffer_dims.size());
    std::vector<int64_t> start(rank, 0);
    if (starts_) {
      KILN_ASSIGN_OR_RETURN(ExprRunState ss, starts_->Prepare(in));
      ExprScratch scratch = starts_->NewScratch(ss);
      std::vector<const void*> vals(rank);
      starts_->EvalBlock(scratch, 0, 1, {}, vals);
      for (int64_t d = 0; d < rank; ++d)
        start[d] = ClampedIndexValue(vals[d], starts_->root_type(static_cast<int>(d)),
                                     buffer_dims[d] - update_dims[d]);
    }
    // Rows: the update's dims from `k` on are contiguous in the output (all later dims full).
    int64_t k = rank;
    int64_t seg = 1;
    while (k > 0) {
      seg *= update_dims[k - 1];
      --k;
      if (update_dims[k] != buffer_dims[k]) break;
    }
    if (rank == 0) seg = 1;
    const std::vector<int64_t> ostr = RowMajorStrides(buffer_dims);
    int64_t base = 0;
    for (int64_t d = 0; d < rank; ++d) base += start[d] * ostr[d];
    const int64_t rows = n / seg;
    KILN_ASSIGN_OR_RETURN(ExprRunState state, update_->Prepare(in));
    const int64_t block = update_->block_elements();
    const int64_t blocks_per_row = (seg + block - 1) / block;
    const int64_t min_chunk =
        std::max<int64_t>(1, options.min_parallel_elements / std::min(block, seg));
    ParallelFor(ctx, rows * blocks_per_row, min_chunk, [&](int64_t b0, int64_t b1) {
      ExprScratch scratch = update_->NewScratch(state);
      std::vector<int64_t> idx(rank);
      void* dest[1];
      const void* res[1];
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t row = b / blocks_per_row, off = (b % blocks_per_row) * block;
        const int64_t len = std::min(block, seg - off);
        const int64_t lin = row * seg + off;  // loop position in the update
        // Output position of update element `lin`.
        int64_t rem = lin, o = base;
        for (int64_t d = rank - 1; d >= 0; --d) {
          const int64_t i = rem % update_dims[d];
          rem /= update_dims[d];
          o += i * ostr[d];
        }
        dest[0] = static_cast<uint8_t*>(out.data) + o * w;
        update_->EvalBlock(scratch, lin, len, dest, res);
      }
    });
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateDynamicUpdateSliceKernel(
    const HloInstruction& instr, const CpuKernelOptions& options) {
  LoopRoots lr = RootsOf(instr);
  if (lr.roots.size() != 1 || lr.roots[0]->opcode() != HloOpcode::kDynamicUpdateSlice)
    return Unimplemented("dynamic-update-slice kernel: not a dynamic-update-slice");
  const HloInstruction* dus = lr.roots[0];
  const Shape& bs = dus->shape();
  if (!bs.IsArray() || dus->operand_count() != bs.rank() + 2)
    return Unimplemented("dynamic-update-slice kernel: operands");
  const int buffer = lr.leaves(dus->operand(0));
  if (buffer < 0) return Unimplemented("dynamic-update-slice kernel: computed buffer operand");
  const HloInstruction* update = dus->operand(1);
  if (!update->shape().IsArray() || update->shape().rank() != bs.rank() ||
      update->shape().element_type() != bs.element_type())
    return Unimplemented("dynamic-update-slice kernel: update shape");
  for (int64_t d = 0; d < bs.rank(); ++d)
    if (update->shape().dimensions(d) > bs.dimensions(d))
      return InvalidArgument("dynamic-update-slice %", dus->name(), ": update larger than buffer");
  auto k = std::make_unique<DusKernel>();
  ExprProgram::Options po;
  po.block_elements = options.block_elements;
  po.fuse_chains = options.expr_chains;
  const HloInstruction* roots[] = {update};
  KILN_ASSIGN_OR_RETURN(k->update_, ExprProgram::Compile(roots, update->shape().dimensions(), {},
                                                         lr.leaves, po));
  if (bs.rank() > 0) {
    std::vector<const HloInstruction*> starts;
    for (int64_t d = 0; d < bs.rank(); ++d) {
      const HloInstruction* s = dus->operand(2 + d);
      if (!s->shape().IsArray() || s->shape().rank() != 0 ||
          !IsIntegralType(s->shape().element_type()))
        return Unimplemented("dynamic-update-slice kernel: start indices");
      starts.push_back(s);
    }
    ExprProgram::Options so;
    so.block_elements = 1;
    so.fuse_chains = options.expr_chains;
    KILN_ASSIGN_OR_RETURN(k->starts_, ExprProgram::Compile(starts, {}, {}, lr.leaves, so));
  }
  k->buffer_input = buffer;
  k->buffer_dims = bs.dimensions();
  k->update_dims = update->shape().dimensions();
  k->type = bs.element_type();
  k->num_inputs = NumInputLeaves(instr);
  k->options = options;
  // In place only when nothing else reads the buffer: every use of the buffer's value is the
  // dynamic-update-slice's operand 0.
  if (instr.opcode() == HloOpcode::kFusion) {
    const HloInstruction* param = dus->operand(0);
    k->in_place_ok = param->user_count() == 1;
    for (int64_t i = 1; i < dus->operand_count(); ++i)
      if (dus->operand(i) == param) k->in_place_ok = false;
  } else {
    k->in_place_ok = true;
    for (int64_t i = 1; i < dus->operand_count(); ++i)
      if (dus->operand(i) == dus->operand(0)) k->in_place_ok = i == 1;
  }
  k->name_ = StrCat(instr.opcode() == HloOpcode::kFusion ? "dus_fusion[" : "dynamic_update_slice[",
                    ShapeText(bs), " <- ", ShapeText(update->shape()), "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
