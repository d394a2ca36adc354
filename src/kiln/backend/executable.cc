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

StatusOr<std::vector<std::unique_ptr<Buffer>>> Executable::Execute(std::span<Buffer* const> arguments,
                                                                    const ExecuteOptions& options) {
  if (!can_execute())
    return FailedPrecondition(module_name_, " was compiled for ", platform_, " without a device; it cannot run here");
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
    if (b->platform() != platform_ || b->device_ordinal() != ordinal_)
      return InvalidArgument("argument ", i, " of ", module_name_, " lives on ", b->device_name(),
                             ", the executable runs on ", platform_, ":", ordinal_,
                             " (copy it there first: Backend::BufferFromHost)");
    for (size_t j = 0; j < i; ++j)
      if ((donated_[i] || donated_[j]) && arguments[j] == b)
        return InvalidArgument("arguments ", j, " and ", i, " of ", module_name_,
                               " are the same buffer, and one of them is donated");
  }
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

StatusOr<Literal> Executable::Run(std::span<const Literal> arguments, const ExecuteOptions& options) {
  if (static_cast<int64_t>(arguments.size()) != num_parameters())
    return InvalidArgument(module_name_, " takes ", num_parameters(), " arguments, got ", arguments.size());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> raw;
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
  ExecuteOptions o = options;
  o.discard_results = false;
  KILN_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Buffer>> results, Execute(raw, o));
  std::vector<Literal> leaves;
  for (const auto& r : results) {
    KILN_ASSIGN_OR_RETURN(Literal l, r->ToLiteral());
    leaves.push_back(std::move(l));
  }
  return NestLiterals(std::move(leaves), result_shape_);
}

std::vector<std::pair<std::string, double>> Executable::Metrics() const {
  const MemoryStats& m = report_.memory;
  return {{"argument_bytes", double(m.argument_bytes)}, {"output_bytes", double(m.output_bytes)},
          {"constant_bytes", double(m.constant_bytes)}, {"temp_bytes", double(m.temp_bytes)},
          {"peak_bytes", double(m.peak_bytes)},         {"aliased_bytes", double(m.aliased_bytes)}};
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
