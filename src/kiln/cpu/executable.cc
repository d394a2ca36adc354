#include "kiln/cpu/executable.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "kiln/backend/executable.h"
#include "kiln/base/strings.h"
#include "kiln/cpu/collective_context.h"
#include "kiln/cpu/control_flow_thunks.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu {

namespace {

constexpr int64_t kAlignment = 64;

int64_t RoundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

AlignedBlock AllocateBlock(int64_t size) {
  size = std::max<int64_t>(kAlignment, RoundUp(size, kAlignment));
  return AlignedBlock(static_cast<uint8_t*>(std::aligned_alloc(kAlignment, static_cast<size_t>(size))));
}

Literal& MutableSubliteral(Literal& l, const ShapeIndex& index) {
  Literal* cur = &l;
  for (int64_t i : index) cur = &cur->mutable_tuple_element(i);
  return *cur;
}

// Walks the logical row-major index space of `shape`, calling fn(logical_offset,
// physical_offset) in elements.
template <typename Fn>
[[gnu::noinline]] void ForEachElement(const Shape& shape, const Layout& layout, Fn fn) {
  const int64_t rank = shape.rank();
  const int64_t n = shape.num_elements();
  if (n == 0) return;
  if (rank == 0) {
    fn(0, 0);
    return;
  }
  std::vector<int64_t> order = MajorToMinor(layout, rank);
  std::vector<int64_t> physical_dims(rank);
  for (int64_t k = 0; k < rank; ++k) physical_dims[k] = shape.dimensions(order[k]);
  std::vector<int64_t> pstride_phys = RowMajorStrides(physical_dims);
  std::vector<int64_t> pstride(rank);  // physical stride of each logical dimension
  for (int64_t k = 0; k < rank; ++k) pstride[order[k]] = pstride_phys[k];
  std::vector<int64_t> idx(rank, 0);
  int64_t phys = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(i, phys);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < shape.dimensions(d)) {
        phys += pstride[d];
        break;
      }
      phys -= pstride[d] * (idx[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

void RelayoutToRowMajor(const uint8_t* physical, const Shape& shape, const Layout& layout, uint8_t* row_major) {
  const int64_t w = PrimitiveByteWidth(shape.element_type());
  if (IsDefaultOrder(layout, shape.rank())) {
    if (shape.num_elements() > 0) std::memcpy(row_major, physical, static_cast<size_t>(shape.num_elements() * w));
    return;
  }
  ForEachElement(shape, layout, [&](int64_t logical, int64_t phys) {
    std::memcpy(row_major + logical * w, physical + phys * w, static_cast<size_t>(w));
  });
}

void RelayoutFromRowMajor(const uint8_t* row_major, const Shape& shape, const Layout& layout, uint8_t* physical) {
  const int64_t w = PrimitiveByteWidth(shape.element_type());
  if (IsDefaultOrder(layout, shape.rank())) {
    if (shape.num_elements() > 0) std::memcpy(physical, row_major, static_cast<size_t>(shape.num_elements() * w));
    return;
  }
  ForEachElement(shape, layout, [&](int64_t logical, int64_t phys) {
    std::memcpy(physical + phys * w, row_major + logical * w, static_cast<size_t>(w));
  });
}

void AlignedFree::operator()(uint8_t* p) const { std::free(p); }

ExecutionOutput& ExecutionOutput::operator=(ExecutionOutput&& other) noexcept {
  if (this == &other) return *this;
  if (arena_ && pool_) {
    std::lock_guard<std::mutex> lock(pool_->mu);
    pool_->free.push_back(std::move(arena_));
  }
  outputs_ = std::move(other.outputs_);
  sources_ = std::move(other.sources_);
  pool_ = std::move(other.pool_);
  arena_ = std::move(other.arena_);
  arena_size_ = other.arena_size_;
  owned_ = std::move(other.owned_);
  return *this;
}

ExecutionOutput::~ExecutionOutput() {
  if (arena_ && pool_) {
    std::lock_guard<std::mutex> lock(pool_->mu);
    pool_->free.push_back(std::move(arena_));
  }
}

std::string CpuCompileStats::ToString() const {
  // Passes that run several times (the simplification fixed point) are summed.
  struct Row {
    std::string name;
    double seconds = 0;
    int64_t runs = 0, changed = 0, before = 0, after = 0;
  };
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  double total = 0;
  for (const PassStats& p : passes) {
    // Nested pipelines report both their passes and themselves: count leaves only.
    bool is_pipeline = false;
    for (const PassStats& q : passes)
      if (q.name.size() > p.name.size() && StartsWith(q.name, p.name + "/")) is_pipeline = true;
    if (is_pipeline) continue;
    auto [it, inserted] = index.emplace(p.name, rows.size());
    if (inserted) rows.push_back({p.name, 0, 0, 0, p.instructions_before, 0});
    Row& r = rows[it->second];
    r.seconds += p.seconds;
    r.runs += 1;
    r.changed += p.changed;
    r.after = p.instructions_after;
    total += p.seconds;
  }
  char buf[256];
  std::string s = StrCat("passes (", rows.size(), " distinct, ", RoundTripDouble(std::round(total * 1e5) / 100),
                         " ms):\n");
  for (const Row& r : rows) {
    std::snprintf(buf, sizeof buf, "  %9.3f ms  %-52s %3lld run%s, %lld changed, %lld -> %lld instructions\n",
                  r.seconds * 1e3, r.name.c_str(), static_cast<long long>(r.runs), r.runs == 1 ? " " : "s",
                  static_cast<long long>(r.changed), static_cast<long long>(r.before),
                  static_cast<long long>(r.after));
    s += buf;
  }
  s += fusion_summary;
  if (!s.empty() && s.back() != '\n') s += "\n";
  s += memory.ToString() + "\n";
  std::snprintf(buf, sizeof buf,
                "thunks: %lld (%lld kernels, %lld row-tiled chains), threads %lld; compiled in %.3f ms\n",
                static_cast<long long>(thunks), static_cast<long long>(kernel_thunks),
                static_cast<long long>(row_tiled_chains), static_cast<long long>(threads), compile_seconds * 1e3);
  s += buf;
  s += HostFallbackLine({evaluator_fallbacks.begin(), evaluator_fallbacks.end()});
  return s;
}

CpuExecutable::CpuExecutable(Parts parts)
    : parts_(std::move(parts)), profile_(static_cast<int64_t>(parts_.thunks.all.size())) {}

CpuExecutable::~CpuExecutable() = default;

const Shape& CpuExecutable::result_shape() const {
  return parts_.module->entry_computation()->root_instruction()->shape();
}

StatusOr<std::unique_ptr<CpuExecutable>> CpuExecutable::Create(Parts parts) {
  if (!parts.module || !parts.assignment || !parts.module->entry_computation())
    return InvalidArgument("cpu executable: incomplete parts");
  std::unique_ptr<CpuExecutable> exe(new CpuExecutable(std::move(parts)));
  const Parts& p = exe->parts_;
  const HloComputation* entry = p.module->entry_computation();
  for (const HloComputation* c : p.module->computations())
    for (const HloInstruction* i : c->instructions())
      if ((i->opcode() == HloOpcode::kSend || i->opcode() == HloOpcode::kRecvDone) && !i->attrs().is_host_transfer)
        exe->point_to_point_ = true;
  const auto& allocs = p.assignment->allocations();
  // Arguments: one per entry parameter leaf.
  for (int64_t n = 0; n < entry->num_parameters(); ++n) {
    const Shape& ps = entry->parameter_instruction(n)->shape();
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(ps);
    for (size_t k = 0; k < leaves.size(); ++k) {
      int64_t alloc = -1;
      for (const BufferAllocation& a : allocs)
        if (a.kind == BufferAllocation::Kind::kParameter && a.parameter_number == n && a.parameter_index == leaves[k])
          alloc = a.index;
      if (alloc < 0) return Internal("cpu executable: no allocation for parameter ", n, " {", StrJoin(leaves[k], ","), "}");
      Layout layout = n < static_cast<int64_t>(p.entry_layouts.parameters.size()) &&
                              k < p.entry_layouts.parameters[n].size()
                          ? p.entry_layouts.parameters[n][k]
                          : Layout::Default(ps.Subshape(leaves[k]).rank());
      Shape s = ps.Subshape(leaves[k]);
      exe->arg_relayout_.push_back(!IsDefaultOrder(layout, s.rank()));
      s.set_layout(layout);
      exe->arg_shapes_.push_back(std::move(s));
      exe->arg_allocation_.push_back(alloc);
    }
  }
  // Results.
  const Shape& root = entry->root_instruction()->shape();
  std::vector<ShapeIndex> out_leaves = ArrayLeafIndices(root);
  if (out_leaves.size() != p.assignment->output_slices().size())
    return Internal("cpu executable: ", out_leaves.size(), " output leaves but ",
                    p.assignment->output_slices().size(), " output slices");
  for (size_t j = 0; j < out_leaves.size(); ++j) {
    Layout layout = j < p.entry_layouts.result.size() ? p.entry_layouts.result[j]
                                                       : Layout::Default(root.Subshape(out_leaves[j]).rank());
    Shape s = root.Subshape(out_leaves[j]);
    exe->result_relayout_.push_back(!IsDefaultOrder(layout, s.rank()));
    s.set_layout(layout);
    exe->result_shapes_.push_back(std::move(s));
  }
  exe->must_alias_arg_.assign(out_leaves.size(), -1);
  for (const InputOutputAlias& a : p.module->header().input_output_alias) {
    if (!a.must_alias) continue;
    auto out = std::find(out_leaves.begin(), out_leaves.end(), a.output_index);
    int64_t arg = 0, found = -1;
    for (int64_t n = 0; n < entry->num_parameters() && found < 0; ++n)
      for (const ShapeIndex& leaf : ArrayLeafIndices(entry->parameter_instruction(n)->shape())) {
        if (n == a.parameter_number && leaf == a.parameter_index) found = arg;
        ++arg;
      }
    if (out != out_leaves.end() && found >= 0) exe->must_alias_arg_[out - out_leaves.begin()] = found;
  }
  // Constants, once, into one aligned block.
  exe->constant_offset_.assign(allocs.size(), -1);
  int64_t total = 0;
  for (const BufferAllocation& a : allocs) {
    if (a.kind != BufferAllocation::Kind::kConstant) continue;
    exe->constant_offset_[a.index] = total;
    total += RoundUp(a.size, kAlignment);
  }
  if (total > 0) {
    exe->constants_ = AllocateBlock(total);
    if (!exe->constants_) return ResourceExhausted("out of memory allocating ", total, " bytes for the constants of ", p.module->name());
    for (const BufferAllocation& a : allocs) {
      if (a.kind != BufferAllocation::Kind::kConstant) continue;
      if (!a.constant || !a.constant->has_literal() || a.constant->literal_elided())
        return InvalidArgument("cpu: constant %", a.constant ? a.constant->name() : "?",
                               " has no value (elided in the text?)");
      const Literal& leaf = a.constant->literal().Subliteral(a.parameter_index);
      if (static_cast<int64_t>(leaf.size_bytes()) != a.size)
        return Internal("cpu: constant %", a.constant->name(), " holds ", leaf.size_bytes(), " bytes, its allocation ",
                        a.size);
      if (a.size > 0) std::memcpy(exe->constants_.get() + exe->constant_offset_[a.index], leaf.untyped_data(), a.size);
    }
  }
  if (p.assignment->temp_allocation() >= 0) exe->arena_size_ = allocs[p.assignment->temp_allocation()].size;
  return exe;
}

AlignedBlock CpuExecutable::LeaseArena() const {
  {
    std::lock_guard<std::mutex> lock(arenas_->mu);
    if (!arenas_->free.empty()) {
      AlignedBlock b = std::move(arenas_->free.back());
      arenas_->free.pop_back();
      return b;
    }
  }
  return AllocateBlock(arena_size_);
}

void CpuExecutable::ReturnArena(AlignedBlock arena) const {
  std::lock_guard<std::mutex> lock(arenas_->mu);
  arenas_->free.push_back(std::move(arena));
}

StatusOr<ExecutionOutput> CpuExecutable::Execute(std::span<void* const> arguments,
                                                 const CpuRunOptions& options) const {
  return ExecuteImpl(arguments, /*logical=*/false, options);
}

StatusOr<ExecutionOutput> CpuExecutable::ExecuteImpl(std::span<void* const> arguments, bool logical,
                                                     const CpuRunOptions& options) const {
  if (arguments.size() != arg_shapes_.size())
    return InvalidArgument("cpu executable: ", parts_.module->name(), " takes ", arg_shapes_.size(),
                           " argument arrays, got ", arguments.size());
  const auto& allocs = parts_.assignment->allocations();
  std::vector<BufferAllocations::Memory> memory(allocs.size());
  ExecutionOutput out;
  out.pool_ = arenas_;
  std::vector<uint8_t*> internal_args(arguments.size());
  for (size_t k = 0; k < arguments.size(); ++k) {
    const int64_t alloc = arg_allocation_[k];
    const int64_t size = allocs[alloc].size;
    auto* ptr = static_cast<uint8_t*>(arguments[k]);
    if (!ptr && size > 0) return InvalidArgument("cpu executable: argument ", k, " is null");
    if (!logical && arg_relayout_[k]) {
      AlignedBlock b = AllocateBlock(size);
      if (!b) return ResourceExhausted("out of memory allocating ", size, " bytes for a copy of argument ", k);
      RelayoutToRowMajor(ptr, arg_shapes_[k], arg_shapes_[k].layout(), b.get());
      ptr = b.get();
      out.owned_.push_back(std::move(b));
    }
    internal_args[k] = ptr;
    memory[alloc] = {ptr, size};
  }
  for (const BufferAllocation& a : allocs)
    if (a.kind == BufferAllocation::Kind::kConstant)
      memory[a.index] = {constants_.get() + constant_offset_[a.index], a.size};
  if (parts_.assignment->temp_allocation() >= 0) {
    out.arena_ = LeaseArena();
    if (!out.arena_) return ResourceExhausted("out of memory allocating ", arena_size_, " bytes for the temporaries of ", parts_.module->name());
    memory[parts_.assignment->temp_allocation()] = {out.arena_.get(), arena_size_};
  }
  BufferAllocations buffers(std::move(memory));
  ExecutorOptions executor = parts_.executor;
  executor.sequential |= options.sequential;
  std::atomic<uint64_t> rng_state(options.seed);
  ExecuteParams params;
  params.rng_state = &rng_state;
  params.collectives = options.collectives;
  std::unique_ptr<CollectiveContext> alone;
  std::unique_ptr<InProcessCommunicator> alone_communicator;
  if (params.collectives == nullptr && point_to_point_) {
    alone = std::make_unique<CollectiveContext>();
    alone->rendezvous = std::make_shared<Rendezvous>(1);
    alone_communicator = std::make_unique<InProcessCommunicator>(alone->rendezvous);
    alone->communicator = alone_communicator.get();
    params.collectives = alone.get();
  }
  params.buffers = &buffers;
  params.pool = parts_.pool.get();
  params.profile = options.profile ? &profile_ : nullptr;
  params.executor = &executor;
  KILN_RETURN_IF_ERROR(parts_.thunks.entry.Execute(params));

  const auto& slices = parts_.assignment->output_slices();
  for (size_t j = 0; j < slices.size(); ++j) {
    uint8_t* ptr = nullptr;
    if (slices[j].valid()) {
      KILN_ASSIGN_OR_RETURN(ptr, buffers.Get(slices[j]));
    }
    ArrayView view;
    view.data = ptr;
    {
      ExecutionOutput::Source source = ExecutionOutput::Source::kRun;
      int64_t arg = -1;
      if (slices[j].valid()) {
        const BufferAllocation& a = allocs[slices[j].allocation];
        if (a.kind == BufferAllocation::Kind::kConstant) source = ExecutionOutput::Source::kConstant;
        if (a.kind == BufferAllocation::Kind::kParameter) {
          source = ExecutionOutput::Source::kArgument;
          for (size_t k = 0; k < arg_allocation_.size(); ++k)
            if (arg_allocation_[k] == a.index) arg = static_cast<int64_t>(k);
        }
      }
      out.sources_.emplace_back(source, arg);
    }
    if (logical) {
      view.shape = result_shapes_[j];
      view.shape.set_layout(Layout::Default(view.shape.rank()));
      out.outputs_.push_back(std::move(view));
      continue;
    }
    view.shape = result_shapes_[j];
    const int64_t size = view.shape.byte_size();
    if (const int64_t k = must_alias_arg_[j]; k >= 0) {
      // The output belongs in its argument's memory (in the result layout).
      auto* dst = static_cast<uint8_t*>(arguments[k]);
      if (result_relayout_[j]) {
        std::vector<uint8_t> tmp(ptr, ptr + size);  // ptr may be the argument's own copy
        RelayoutFromRowMajor(tmp.data(), view.shape, view.shape.layout(), dst);
      } else if (ptr != dst && size > 0) {
        std::memmove(dst, ptr, static_cast<size_t>(size));
      }
      view.data = dst;
      out.sources_.back() = {ExecutionOutput::Source::kArgument, k};
    } else if (result_relayout_[j]) {
      out.sources_.back() = {ExecutionOutput::Source::kRun, -1};
      AlignedBlock b = AllocateBlock(size);
      if (!b) return ResourceExhausted("out of memory allocating ", size, " bytes for output ", j);
      RelayoutFromRowMajor(ptr, view.shape, view.shape.layout(), b.get());
      view.data = b.get();
      out.owned_.push_back(std::move(b));
    }
    out.outputs_.push_back(std::move(view));
  }
  return out;
}

StatusOr<Literal> CpuExecutable::Run(std::span<const Literal> arguments, const CpuRunOptions& options) const {
  const HloComputation* entry = parts_.module->entry_computation();
  if (static_cast<int64_t>(arguments.size()) != entry->num_parameters())
    return InvalidArgument("module ", parts_.module->name(), " takes ", entry->num_parameters(),
                           " arguments, got ", arguments.size());
  const auto& allocs = parts_.assignment->allocations();
  std::vector<void*> ptrs;
  std::vector<AlignedBlock> copies;
  for (int64_t n = 0; n < entry->num_parameters(); ++n) {
    const Shape& want = entry->parameter_instruction(n)->shape();
    if (!Shape::Compatible(want, arguments[n].shape()))
      return InvalidArgument("argument ", n, " has shape ", arguments[n].shape().ToString(false),
                             ", but parameter ", n, " of ", parts_.module->name(), " is ", want.ToString(false));
    for (const ShapeIndex& leaf : ArrayLeafIndices(want)) {
      const Literal& l = arguments[n].Subliteral(leaf);
      auto* data = const_cast<uint8_t*>(l.untyped_data());
      if (allocs[arg_allocation_[ptrs.size()]].written) {
        // A donated parameter the program writes: never write the caller's literal.
        AlignedBlock b = AllocateBlock(static_cast<int64_t>(l.size_bytes()));
        if (!b) return ResourceExhausted("out of memory allocating ", l.size_bytes(), " bytes for a copy of argument ", n);
        if (l.size_bytes() > 0) std::memcpy(b.get(), data, l.size_bytes());
        data = b.get();
        copies.push_back(std::move(b));
      }
      ptrs.push_back(data);
    }
  }
  KILN_ASSIGN_OR_RETURN(ExecutionOutput out, ExecuteImpl(ptrs, /*logical=*/true, options));
  KILN_ASSIGN_OR_RETURN(Literal result, Literal::Create(result_shape(), StrCat("the result of ", parts_.module->name())));
  std::vector<ShapeIndex> leaves = ArrayLeafIndices(result_shape());
  for (size_t j = 0; j < leaves.size(); ++j) {
    Literal& dst = MutableSubliteral(result, leaves[j]);
    if (dst.size_bytes() > 0) {
      if (!out.outputs_[j].data) return Internal("cpu executable: output ", j, " has no buffer");
      std::memcpy(dst.untyped_data(), out.outputs_[j].data, dst.size_bytes());
    }
  }
  return result;
}

namespace {

void ListThunks(const std::vector<const Thunk*>& thunks, int depth, std::string& s) {
  for (const Thunk* t : thunks) {
    s += std::string(2 * depth, ' ') + t->ToString() + "\n";
    ListThunks(t->nested(), depth + 1, s);
  }
}

}  // namespace

std::string CpuExecutable::ThunkListing() const {
  std::vector<const Thunk*> top;
  for (const auto& t : parts_.thunks.entry.thunks()) top.push_back(t.get());
  std::string s;
  ListThunks(top, 0, s);
  return s;
}

std::string CpuExecutable::ProfileReport(int64_t max_rows) const {
  const auto& all = parts_.thunks.all;
  double top_total = 0;
  for (const auto& t : parts_.thunks.entry.thunks()) top_total += profile_.nanos(t->id());
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < static_cast<int64_t>(all.size()); ++i)
    if (profile_.count(i) > 0) ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return profile_.nanos(a) > profile_.nanos(b); });
  std::string s = StrCat("profile: ", RoundTripDouble(std::round(top_total / 1e3) / 1e3),
                         " ms in top-level thunks (nested thunks count inside their loop or branch)\n");
  char buf[512];
  for (int64_t r = 0; r < static_cast<int64_t>(ids.size()) && r < max_rows; ++r) {
    int64_t i = ids[r];
    double ms = profile_.nanos(i) / 1e6;
    std::snprintf(buf, sizeof buf, "  %10.3f ms %5.1f%% %7lld calls  %s", ms,
                  top_total > 0 ? 100.0 * profile_.nanos(i) / top_total : 0.0,
                  static_cast<long long>(profile_.count(i)), all[i]->ToString().c_str());
    s += buf;
    // A loop: its iterations (runs of the body's first thunk) and the time of one.
    if (all[i]->kind() == Thunk::Kind::kWhile) {
      const auto* w = static_cast<const WhileThunk*>(all[i]);
      if (!w->body().thunks().empty()) {
        const int64_t iterations = profile_.count(w->body().thunks().front()->id());
        if (iterations > 0) {
          std::snprintf(buf, sizeof buf, " -- %lld iterations, %.4f ms each", static_cast<long long>(iterations),
                        profile_.nanos(i) / 1e6 / static_cast<double>(iterations));
          s += buf;
        }
      }
    }
    s += "\n";
  }
  return s;
}

}  // namespace kiln::cpu
