#include "kiln/backend/executable.h"

#include <new>
#include <stdexcept>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"

namespace kiln {

namespace {

Shape Logical(Shape s) {
  s.clear_layout();
  return s;
}

// Appends the array leaves of `shape` (ArrayLeafIndices order) with their index paths.
void Leaves(const Shape& shape, std::vector<int64_t>& path, std::vector<std::pair<Shape, std::vector<int64_t>>>& out) {
  if (shape.IsTuple()) {
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      path.push_back(i);
      Leaves(shape.tuple_shapes(i), path, out);
      path.pop_back();
    }
  } else if (shape.IsArray()) {
    out.emplace_back(WithDefaultLayout(shape), path);
  }
}

std::vector<std::pair<Shape, std::vector<int64_t>>> LeavesOf(const Shape& shape) {
  std::vector<std::pair<Shape, std::vector<int64_t>>> out;
  std::vector<int64_t> path;
  Leaves(shape, path, out);
  return out;
}

bool SameArray(const Shape& a, const Shape& b) {
  return a.element_type() == b.element_type() && a.dimensions() == b.dimensions();
}

void LeafPointers(const Literal& l, std::vector<const Literal*>& out) {
  if (l.shape().IsTuple()) {
    for (const Literal& e : l.tuple_elements()) LeafPointers(e, out);
  } else if (l.shape().IsArray()) {
    out.push_back(&l);
  }
}

}  // namespace

Executable::Executable(std::string platform, int ordinal, const HloModule& module, CompileReport report)
    : platform_(std::move(platform)), ordinal_(ordinal), module_name_(module.name()), report_(std::move(report)) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return;
  std::vector<std::pair<int64_t, std::vector<int64_t>>> donated_leaves;
  for (const InputOutputAlias& a : module.header().input_output_alias)
    donated_leaves.emplace_back(a.parameter_number, a.parameter_index);
  for (const BufferDonor& d : module.header().buffer_donors) donated_leaves.emplace_back(d.parameter_number, d.parameter_index);
  for (int64_t p = 0; p < entry->num_parameters(); ++p) {
    parameter_first_leaf_.push_back(static_cast<int64_t>(argument_shapes_.size()));
    for (auto& [shape, path] : LeavesOf(entry->parameter_instruction(p)->shape())) {
      bool donated = false;
      for (const auto& [dp, di] : donated_leaves) {
        // A donated tuple element donates every leaf below it.
        if (dp == p && di.size() <= path.size() && std::equal(di.begin(), di.end(), path.begin())) donated = true;
      }
      argument_shapes_.push_back(std::move(shape));
      donated_.push_back(donated);
    }
  }
  result_shape_ = Logical(entry->root_instruction()->shape());
  for (auto& [shape, path] : LeavesOf(result_shape_)) result_shapes_.push_back(std::move(shape));
}

Status Executable::CheckArguments(std::span<Buffer* const> arguments, bool any_device) const {
  if (arguments.size() != argument_shapes_.size())
    return InvalidArgument(module_name_, " takes ", argument_shapes_.size(), " argument buffer",
                           argument_shapes_.size() == 1 ? "" : "s", " (array leaves of ", num_parameters(),
                           " parameters), got ", arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Buffer* b = arguments[i];
    if (b == nullptr) return InvalidArgument("argument ", i, " of ", module_name_, " is null");
    if (b->is_deleted())
      return FailedPrecondition("argument ", i, " of ", module_name_, " was ", b->deleted_reason(),
                                "; a donated or deleted buffer cannot be passed again");
    if (!SameArray(b->shape(), argument_shapes_[i]))
      return InvalidArgument("argument ", i, " of ", module_name_, " is ", b->shape().ToString(false), ", expected ",
                             argument_shapes_[i].ToString(false));
    if (b->platform() != platform_ || (!any_device && b->device_ordinal() != ordinal_))
      return InvalidArgument("argument ", i, " of ", module_name_, " lives on ", b->device_name(),
                             ", the executable runs on ", platform_, ":", ordinal_,
                             " (copy it there first: Backend::BufferFromHost)");
    for (size_t j = 0; j < i; ++j)
      if ((donated_[i] || donated_[j]) && arguments[j] == b)
        return InvalidArgument("arguments ", j, " and ", i, " of ", module_name_,
                               " are the same buffer, and one of them is donated");
  }
  return OkStatus();
}

StatusOr<std::vector<std::unique_ptr<Buffer>>> Executable::Execute(std::span<Buffer* const> arguments,
                                                                    const ExecuteOptions& options) {
  if (!can_execute())
    return FailedPrecondition(module_name_, " was compiled for ", platform_, " without a device; it cannot run here");
  if (num_participants() != 1)
    return InvalidArgument(module_name_, " runs over ", num_participants(), " participants (", replica_count_,
                           " replicas x ", num_partitions_,
                           " partitions): run them with ExecuteParticipants, or compile with "
                           "replica_count=1 and num_partitions=1 for one");
  KILN_RETURN_IF_ERROR(CheckArguments(arguments));
  // No exception leaves the library: an allocation the host cannot satisfy (a Literal or a
  // vector deep in a backend) is a ResourceExhausted status, as the backends' own checks are.
  try {
    return ExecuteImpl(arguments, options);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of host memory running ", module_name_, " on ", platform_, ":", ordinal_);
  } catch (const std::length_error&) {
    return ResourceExhausted("out of host memory running ", module_name_, " on ", platform_, ":", ordinal_);
  }
}

StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> Executable::ExecuteParticipants(
    std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options) {
  if (!can_execute())
    return FailedPrecondition(module_name_, " was compiled for ", platform_, " without a device; it cannot run here");
  if (static_cast<int64_t>(arguments.size()) != num_participants())
    return InvalidArgument(module_name_, " runs over ", num_participants(), " participants (", replica_count_,
                           " replicas x ", num_partitions_, " partitions), got ", arguments.size(),
                           " argument sets");
  for (size_t i = 0; i < arguments.size(); ++i) {
    // A participant's arguments may live on any device of the platform (its own, typically).
    Status s = CheckArguments(arguments[i], /*any_device=*/true);
    if (!s.ok()) return Status(s.code(), StrCat("participant ", i, ": ", s.message()));
    for (size_t j = 0; j < i; ++j)
      for (Buffer* a : arguments[i])
        for (Buffer* b : arguments[j])
          if (a == b)
            for (size_t k = 0; k < arguments[i].size(); ++k)
              if (arguments[i][k] == a && donated_[k])
                return InvalidArgument("participants ", j, " and ", i, " of ", module_name_,
                                       " pass the same buffer, and one of them donates it");
  }
  try {
    return ExecuteParticipantsImpl(arguments, options);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of host memory running ", module_name_, " on ", platform_, ":", ordinal_);
  } catch (const std::length_error&) {
    return ResourceExhausted("out of host memory running ", module_name_, " on ", platform_, ":", ordinal_);
  }
}

StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> Executable::ExecuteParticipantsImpl(
    std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options) {
  if (arguments.size() != 1)
    return Unimplemented(platform_, " runs one participant; ", module_name_, " asks for ", arguments.size());
  std::vector<std::vector<std::unique_ptr<Buffer>>> out;
  KILN_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Buffer>> r, ExecuteImpl(arguments[0], options));
  out.push_back(std::move(r));
  return out;
}

Status Executable::BuffersFromLiterals(std::span<const Literal> arguments, std::vector<std::unique_ptr<Buffer>>& owned,
                                       std::vector<Buffer*>& raw) {
  if (static_cast<int64_t>(arguments.size()) != num_parameters())
    return InvalidArgument(module_name_, " takes ", num_parameters(), " arguments, got ", arguments.size());
  for (size_t p = 0; p < arguments.size(); ++p) {
    std::vector<const Literal*> leaves;
    LeafPointers(arguments[p], leaves);
    const int64_t first = parameter_first_leaf_[p];
    const int64_t count = (p + 1 < arguments.size() ? parameter_first_leaf_[p + 1] : static_cast<int64_t>(argument_shapes_.size())) - first;
    if (static_cast<int64_t>(leaves.size()) != count)
      return InvalidArgument("argument ", p, " of ", module_name_, " is ", arguments[p].shape().ToString(false),
                             "; parameter ", p, " has ", count, " array leaves");
    for (const Literal* leaf : leaves) {
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, BufferFromLiteral(*leaf));
      raw.push_back(b.get());
      owned.push_back(std::move(b));
    }
  }
  return OkStatus();
}

StatusOr<Literal> Executable::LiteralFromResults(const std::vector<std::unique_ptr<Buffer>>& results) const {
  std::vector<Literal> leaves;
  for (const auto& r : results) {
    KILN_ASSIGN_OR_RETURN(Literal l, r->ToLiteral());
    leaves.push_back(std::move(l));
  }
  return NestLiterals(std::move(leaves), result_shape_);
}

StatusOr<Literal> Executable::Run(std::span<const Literal> arguments, const ExecuteOptions& options) {
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> raw;
  KILN_RETURN_IF_ERROR(BuffersFromLiterals(arguments, owned, raw));
  ExecuteOptions o = options;
  o.discard_results = false;
  KILN_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Buffer>> results, Execute(raw, o));
  return LiteralFromResults(results);
}

StatusOr<std::vector<Literal>> Executable::RunParticipants(std::span<const std::vector<Literal>> arguments,
                                                           const ExecuteOptions& options) {
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::vector<Buffer*>> raw(arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    Status s = BuffersFromLiterals(arguments[i], owned, raw[i]);
    if (!s.ok()) return Status(s.code(), StrCat("participant ", i, ": ", s.message()));
  }
  ExecuteOptions o = options;
  o.discard_results = false;
  KILN_ASSIGN_OR_RETURN(auto results, ExecuteParticipants(raw, o));
  std::vector<bool> local(results.size(), false);
  for (int64_t i : local_participants())
    if (i >= 0 && i < static_cast<int64_t>(local.size())) local[i] = true;
  std::vector<Literal> out;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!local[i] && results[i].empty()) {
      out.emplace_back();  // run by another process
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Literal l, LiteralFromResults(results[i]));
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<int64_t> Executable::local_participants() const {
  std::vector<int64_t> all(static_cast<size_t>(num_participants()));
  for (int64_t i = 0; i < num_participants(); ++i) all[i] = i;
  return all;
}

StatusOr<std::pair<int64_t, int64_t>> ParticipantsOf(const HloModule& module, const CompileOptions& options) {
  const int64_t r = options.replica_count > 0 ? options.replica_count : module.header().replica_count;
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.header().num_partitions;
  if (r < 1 || p < 1 || options.replica_count < 0 || options.num_partitions < 0)
    return InvalidArgument("a run needs at least one replica and one partition, got ", r, " replicas x ", p,
                           " partitions");
  if (r * p > 4096) return InvalidArgument(r, " replicas x ", p, " partitions is more than 4096 participants");
  return std::make_pair(r, p);
}

std::vector<std::pair<std::string, double>> Executable::Metrics() const {
  const MemoryStats& m = report_.memory;
  return {{"argument_bytes", double(m.argument_bytes)}, {"output_bytes", double(m.output_bytes)},
          {"constant_bytes", double(m.constant_bytes)}, {"temp_bytes", double(m.temp_bytes)},
          {"peak_bytes", double(m.peak_bytes)},         {"aliased_bytes", double(m.aliased_bytes)},
          {"host_fallbacks", double(HostFallbackCount(report_.host_fallbacks))}};
}

std::string HostFallbackKind(const HloInstruction& instr) {
  if (instr.opcode() == HloOpcode::kCustomCall) return StrCat("custom-call ", instr.attrs().custom_call_target);
  if (instr.opcode() == HloOpcode::kFusion && instr.fused_computation() != nullptr)
    return StrCat("fusion(", HloOpcodeString(instr.fused_computation()->root_instruction()->opcode()), ")");
  return std::string(HloOpcodeString(instr.opcode()));
}

int64_t HostFallbackCount(const std::vector<std::pair<std::string, int64_t>>& fallbacks) {
  int64_t n = 0;
  for (const auto& [kind, count] : fallbacks) n += count;
  return n;
}

std::string HostFallbackLine(const std::vector<std::pair<std::string, int64_t>>& fallbacks) {
  const int64_t n = HostFallbackCount(fallbacks);
  if (n == 0) return "";
  std::string s = StrCat("on the host (evaluator): ", n, n == 1 ? " instruction:" : " instructions:");
  bool first = true;
  for (const auto& [kind, count] : fallbacks) {
    s += StrCat(first ? " " : ", ", kind, " x", count);
    first = false;
  }
  return s + "\n";
}

namespace {

void Flatten(const Literal& l, std::vector<Literal>& out) {
  if (l.shape().IsTuple()) {
    for (const Literal& e : l.tuple_elements()) Flatten(e, out);
  } else if (l.shape().IsArray()) {
    out.push_back(l);
  }
}

StatusOr<Literal> Nest(std::vector<Literal>& leaves, size_t& next, const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Literal e, Nest(leaves, next, shape.tuple_shapes(i)));
      elements.push_back(std::move(e));
    }
    return Literal::MakeTuple(std::move(elements));
  }
  if (!shape.IsArray()) return Literal(shape);
  if (next >= leaves.size()) return InvalidArgument("too few result leaves for ", shape.ToString(false));
  Literal& leaf = leaves[next++];
  if (!SameArray(leaf.shape(), shape))
    return InvalidArgument("result leaf ", next - 1, " is ", leaf.shape().ToString(false), ", expected ", shape.ToString(false));
  return std::move(leaf);
}

}  // namespace

std::vector<Literal> FlattenLiteral(const Literal& literal) {
  std::vector<Literal> out;
  Flatten(literal, out);
  return out;
}

StatusOr<Literal> NestLiterals(std::vector<Literal> leaves, const Shape& shape) {
  size_t next = 0;
  KILN_ASSIGN_OR_RETURN(Literal l, Nest(leaves, next, shape));
  if (next != leaves.size()) return InvalidArgument(leaves.size(), " result leaves for ", shape.ToString(false));
  return l;
}

}  // namespace kiln
