#include "kiln/codegen/elemental_emitter.h"

#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_ops.h"
#include "kiln/codegen/kernel_source.h"

namespace kiln::codegen {

// ---- Layout helpers ----

std::vector<int64_t> PhysicalStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 0);
  int64_t stride = 1;
  for (int64_t d : MinorToMajor(shape)) {
    strides[d] = stride;
    stride *= shape.dimensions(d);
  }
  return strides;
}

std::vector<int64_t> MinorToMajor(const Shape& shape) {
  if (shape.has_layout() && static_cast<int64_t>(shape.layout().minor_to_major().size()) == shape.rank())
    return shape.layout().minor_to_major();
  return Layout::Default(shape.rank()).minor_to_major();
}

std::vector<int64_t> MajorToMinor(const Shape& shape) {
  std::vector<int64_t> m2m = MinorToMajor(shape);
  return std::vector<int64_t>(m2m.rbegin(), m2m.rend());
}

bool SamePhysicalShape(const Shape& a, const Shape& b) {
  if (a.dimensions() != b.dimensions()) return false;
  auto order = [](const Shape& s) {
    std::vector<int64_t> o;
    for (int64_t d : MinorToMajor(s))
      if (s.dimensions(d) != 1) o.push_back(d);
    return o;
  };
  return order(a) == order(b);
}

namespace {

// Physical order of non-degenerate dimensions is the logical (row-major) order.
bool IsRowMajorPhysical(const Shape& s) {
  int64_t prev = INT64_MAX;
  for (int64_t d : MinorToMajor(s)) {
    if (s.dimensions(d) == 1) continue;
    if (d > prev) return false;
    prev = d;
  }
  return true;
}

// An operand's index for an elementwise op: rank-0 operands (clamp's bounds) are broadcast.
Index OperandIndex(const HloInstruction& instr, int64_t i, const Index& index) {
  if (instr.operand(i)->shape().IsArray() && instr.operand(i)->shape().rank() == 0 &&
      instr.shape().IsArray() && instr.shape().rank() > 0)
    return Index{};
  return index;
}

}  // namespace

// ---- Bindings and values ----

void ElementalEmitter::BindBuffer(const HloInstruction* leaf, std::string pointer, Shape shape) {
  Leaf l;
  l.is_buffer = true;
  l.pointer = std::move(pointer);
  l.shape = std::move(shape);
  leaves_[leaf] = std::move(l);
}

void ElementalEmitter::BindScalar(const HloInstruction* leaf, Value value) {
  Leaf l;
  l.is_buffer = false;
  l.scalar = std::move(value);
  leaves_[leaf] = std::move(l);
}

int ElementalEmitter::DepthOf(const Value& v) const {
  int d = code_.DepthOfBlock(v.block);
  return d < 0 ? code_.depth() : d;
}

Value ElementalEmitter::Let(PrimitiveType t, std::string_view name, const std::string& expr,
                            const std::vector<const Value*>& deps, int min_depth) {
  int d = std::min(min_depth, code_.depth());
  for (const Value* v : deps) d = std::max(d, DepthOf(*v));
  std::string n = code_.UniqueName(name);
  code_.LineAt(d, "const " + RegisterType(t) + " " + n + " = " + expr + ";");
  return Value{n, t, code_.BlockIdAt(d)};
}

IExpr ElementalEmitter::Offset(const Shape& shape, const Index& index) {
  if (index.linear && index.linear_shape && SamePhysicalShape(*index.linear_shape, shape))
    return *index.linear;
  std::vector<int64_t> strides = PhysicalStrides(shape);
  IExpr off;
  for (int64_t d = 0; d < shape.rank(); ++d)
    if (shape.dimensions(d) != 1) off = off + index.dims[d] * strides[d];
  return off;
}

Index ElementalEmitter::Delinearize(const IExpr& linear, const Shape& shape) {
  Index index;
  index.dims.assign(shape.rank(), IExpr(0));
  IExpr rest = linear;
  const std::vector<int64_t> m2m = MinorToMajor(shape);
  // The most major non-degenerate dimension takes what is left without a modulo.
  int64_t last = -1;
  for (int64_t d : m2m)
    if (shape.dimensions(d) != 1) last = d;
  for (int64_t d : m2m) {
    int64_t size = shape.dimensions(d);
    if (size == 1) continue;
    if (d == last) {
      index.dims[d] = rest;
      break;
    }
    index.dims[d] = code_.Mod(rest, size, "i" + std::to_string(d));
    rest = code_.Div(rest, size, "q" + std::to_string(d));
  }
  index.linear = linear;
  index.linear_shape = std::make_shared<Shape>(shape);
  return index;
}

std::string ElementalEmitter::IndexKey(const Index& index) const {
  std::string key;
  for (const IExpr& e : index.dims) key += code_.Key(e) + ",";
  return key;
}

StatusOr<Value> ElementalEmitter::ReadBuffer(const std::string& pointer, const Shape& shape,
                                             const Index& index, std::string_view name_hint) {
  const PrimitiveType t = shape.element_type();
  const IExpr off = Offset(shape, index);
  const std::string st = StorageType(t);
  const int bytes = StorageBytes(t);
  // Lanes of a vector read contiguous, aligned elements: one vector load for all of them.
  const bool in_lane_loop = lane_.var >= 0 && lane_.width > 1;
  const int width = in_lane_loop ? lane_.width : 1;
  IExpr base = in_lane_loop ? off.Without(lane_.var) : off;
  bool vector_ok = in_lane_loop && off.Coefficient(lane_.var) == 1 &&
                   code_.MultipleOf(base) % width == 0 && code_.DepthForLoad() < lane_.depth &&
                   // The vector is loaded outside the lane loop: not when its base depends on a
                   // loop inside it (a dot's contraction loop).
                   code_.DepthOf(base) < lane_.depth &&
                   bytes * width <= 16 && ((bytes * width) & (bytes * width - 1)) == 0;
  const std::string lane_name = in_lane_loop ? code_.var(lane_.var).name : "";
  // Register cache across the passes of a row kernel.
  if (row_cache_ != nullptr && row_cache_->it_var >= 0 && (vector_ok || !in_lane_loop) &&
      base.Coefficient(row_cache_->it_var) != 0 &&
      code_.DepthForLoad() <= row_cache_->max_load_depth) {
    const int64_t it_coef = base.Coefficient(row_cache_->it_var);
    std::string key = pointer + "@" + code_.Key(base.Without(row_cache_->it_var)) + "#" +
                      std::to_string(it_coef) + "#" + std::to_string(width);
    auto it = row_cache_->entries.find(key);
    std::string array;
    const std::string it_name = code_.var(row_cache_->it_var).name;
    const std::string vec_type = "kiln_vec<" + st + ", " + std::to_string(width) + ">";
    if (it != row_cache_->entries.end()) {
      array = it->second;
    } else if (row_cache_->allow_new &&
               row_cache_->elements + int64_t{width} * row_cache_->iterations <= row_cache_->max_elements) {
      array = code_.UniqueName(std::string(name_hint) + "_row");
      code_.LineAt(row_cache_->declare_depth,
                   vec_type + " " + array + "[" + std::to_string(row_cache_->iterations) + "];");
      int depth = std::max(code_.DepthOf(base), code_.DepthForLoad());
      code_.LineAt(depth, array + "[" + it_name + "] = *reinterpret_cast<const " + vec_type + "*>(" +
                              pointer + " + " + code_.Render(base) + ");");
      row_cache_->entries[key] = array;
      row_cache_->elements += int64_t{width} * row_cache_->iterations;
    }
    if (!array.empty()) {
      std::string element = array + "[" + it_name + "].v[" + (in_lane_loop ? lane_name : "0") + "]";
      // Read where the array was filled (pass 1 stores it inside the bounds check).
      return Let(t, name_hint, LoadConvert(t, element), {}, in_lane_loop ? lane_.depth : code_.depth());
    }
  }
  if (vector_ok) {
    std::string key = pointer + "@" + code_.Key(base) + "#" + std::to_string(width);
    auto it = vector_loads_.find(key);
    std::string name;
    if (it != vector_loads_.end() && code_.DepthOfBlock(it->second.second) >= 0) {
      name = it->second.first;
    } else {
      int depth = std::max(code_.DepthOf(base), code_.DepthForLoad());
      name = code_.UniqueName(std::string(name_hint) + "_vec");
      std::string vec_type = "kiln_vec<" + st + ", " + std::to_string(width) + ">";
      code_.LineAt(depth, "const " + vec_type + " " + name + " = *reinterpret_cast<const " +
                              vec_type + "*>(" + pointer + " + " + code_.Render(base) + ");");
      vector_loads_[key] = {name, code_.BlockIdAt(depth)};
    }
    return Let(t, name_hint, LoadConvert(t, name + ".v[" + lane_name + "]"), {}, lane_.depth);
  }
  int depth = std::max(code_.DepthOf(off), code_.DepthForLoad());
  std::string element = pointer + "[" + code_.Render(off) + "]";
  return Let(t, name_hint, LoadConvert(t, element), {}, depth);
}

// ---- Dispatch ----

StatusOr<Value> ElementalEmitter::Emit(const HloInstruction& instr, const Index& index) {
  if (!instr.shape().IsArray())
    return Internal("elemental value of tuple-shaped %", instr.name(), " requested as an array");
  KILN_ASSIGN_OR_RETURN(std::vector<Value> v, EmitTuple(instr, index));
  if (v.size() != 1) return Internal("%", instr.name(), " produced ", v.size(), " values");
  return v[0];
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitTuple(const HloInstruction& instr,
                                                         const Index& index) {
  if (instr.shape().IsArray() && static_cast<int64_t>(index.dims.size()) != instr.shape().rank())
    return Internal("index of rank ", index.dims.size(), " for %", instr.name(), " ",
                    instr.shape().ToString(false));
  if (override_) {
    KILN_ASSIGN_OR_RETURN(std::optional<std::vector<Value>> o, override_(instr, index));
    if (o.has_value()) return *o;
  }
  auto leaf = leaves_.find(&instr);
  if (leaf != leaves_.end()) {
    if (!leaf->second.is_buffer) return std::vector<Value>{leaf->second.scalar};
    read_leaves_[&instr] = true;
  }
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(&instr)) + "@" + IndexKey(index);
  auto it = cache_.find(key);
  if (it != cache_.end() && code_.DepthOfBlock(it->second.block) >= 0) return it->second.values;
  std::vector<Value> values;
  if (leaf != leaves_.end()) {
    KILN_ASSIGN_OR_RETURN(Value v, ReadBuffer(leaf->second.pointer, leaf->second.shape, index,
                                              instr.name()));
    values.push_back(v);
  } else {
    KILN_ASSIGN_OR_RETURN(values, EmitUncached(instr, index));
  }
  // The innermost block among the values: the cache entry dies with it.
  int block = 0, depth = 0;
  for (const Value& v : values) {
    int d = DepthOf(v);
    if (d >= depth) {
      depth = d;
      block = code_.BlockIdAt(d);
    }
  }
  cache_[key] = CacheEntry{values, block};
  return values;
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitUncached(const HloInstruction& instr,
                                                            const Index& index) {
  switch (instr.opcode()) {
    case HloOpcode::kParameter:
      return Internal("parameter %", instr.name(), " is not bound to a kernel buffer");
    case HloOpcode::kConstant:
      return EmitConstant(instr, index);
    case HloOpcode::kPad:
      return EmitPad(instr, index);
    case HloOpcode::kConcatenate:
      return EmitConcatenate(instr, index);
    case HloOpcode::kDynamicSlice:
      return EmitDynamicSlice(instr, index);
    case HloOpcode::kDynamicUpdateSlice:
      return EmitDynamicUpdateSlice(instr, index);
    case HloOpcode::kReduce:
      return EmitReduce(instr, index);
    case HloOpcode::kReduceWindow:
      return EmitReduceWindow(instr, index);
    case HloOpcode::kSelectAndScatter:
      return EmitSelectAndScatter(instr, index);
    case HloOpcode::kGather:
      return EmitGather(instr, index);
    case HloOpcode::kDot:
      return EmitDot(instr, index);
    case HloOpcode::kConvolution:
      return EmitConvolution(instr, index);
    case HloOpcode::kTuple: {
      std::vector<Value> values;
      for (const HloInstruction* op : instr.operands()) {
        KILN_ASSIGN_OR_RETURN(Value v, Emit(*op, index));
        values.push_back(v);
      }
      return values;
    }
    case HloOpcode::kGetTupleElement: {
      KILN_ASSIGN_OR_RETURN(std::vector<Value> t, EmitTuple(*instr.operand(0), index));
      int64_t i = instr.attrs().tuple_index;
      if (i < 0 || i >= static_cast<int64_t>(t.size()))
        return Internal("get-tuple-element %", instr.name(), " index ", i, " out of range");
      return std::vector<Value>{t[i]};
    }
    case HloOpcode::kMap: {
      std::vector<Value> args;
      for (int64_t i = 0; i < instr.operand_count(); ++i) {
        KILN_ASSIGN_OR_RETURN(Value v, Emit(*instr.operand(i), OperandIndex(instr, i, index)));
        args.push_back(v);
      }
      if (instr.to_apply() == nullptr) return InvalidArgument("map %", instr.name(), " has no computation");
      return CallComputation(*instr.to_apply(), args, instr.name());
    }
    case HloOpcode::kBitcastConvert:
      if (instr.shape().rank() != instr.operand(0)->shape().rank())
        return EmitBitcastConvertResize(instr, index);
      break;
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
    case HloOpcode::kReverse:
    case HloOpcode::kIota:
    case HloOpcode::kCopy:
      return EmitShapeOp(instr, index);
    default:
      break;
  }
  if (!ElementalOps::Supports(instr.opcode()))
    return Unimplemented("no elemental code for ", HloOpcodeString(instr.opcode()), " (%",
                         instr.name(), ")");
  std::vector<Value> operands;
  for (int64_t i = 0; i < instr.operand_count(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(*instr.operand(i), OperandIndex(instr, i, index)));
    operands.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(std::string expr, ElementalOps::Expression(instr, operands));
  std::vector<const Value*> deps;
  for (const Value& v : operands) deps.push_back(&v);
  return std::vector<Value>{Let(instr.shape().element_type(), instr.name(), expr, deps)};
}

// bitcast-convert between widths: the narrower side has an extra minor dimension holding the
// wider element's pieces, least significant first (XLA's little-endian convention).
StatusOr<std::vector<Value>> ElementalEmitter::EmitBitcastConvertResize(const HloInstruction& instr,
                                                                        const Index& index) {
  const HloInstruction& op = *instr.operand(0);
  const PrimitiveType ot = op.shape().element_type(), t = instr.shape().element_type();
  const int wf = PrimitiveBitWidth(ot), wt = PrimitiveBitWidth(t);
  if (IsComplexType(ot) || IsComplexType(t) || ot == PrimitiveType::kPred ||
      t == PrimitiveType::kPred || SubByteBits(ot) > 0 || SubByteBits(t) > 0 || wf > 64 || wt > 64)
    return Unimplemented("bitcast-convert %", instr.name(), " between ", PrimitiveTypeName(ot),
                         " and ", PrimitiveTypeName(t));
  const std::string wide_bits = std::max(wf, wt) == 64 ? "u64" : "u32";
  const std::string mask = "((" + wide_bits + ")1 << " + std::to_string(std::min(wf, wt)) + ") - 1";
  if (wf > wt) {
    // One element of the operand per result row of wf/wt pieces: the last index picks one.
    if (instr.shape().rank() != op.shape().rank() + 1)
      return InvalidArgument("bitcast-convert %", instr.name(), ": bad rank");
    Index oi;
    oi.dims.assign(index.dims.begin(), index.dims.end() - 1);
    KILN_ASSIGN_OR_RETURN(Value v, Emit(op, oi));
    KILN_ASSIGN_OR_RETURN(std::string bits, ElementalOps::ToBits(ot, v.expr));
    // The piece index is an expression (lane + base): parenthesized before scaling.
    const std::string piece = "((" + wide_bits + ")(" + bits + ") >> ((" +
                              code_.Render(index.dims.back()) + ") * " + std::to_string(wt) +
                              ")) & (" + mask + ")";
    KILN_ASSIGN_OR_RETURN(std::string expr, ElementalOps::FromBits(t, piece));
    return std::vector<Value>{Let(t, instr.name(), expr, {&v}, code_.DepthOf(index.dims.back()))};
  }
  if (op.shape().rank() != instr.shape().rank() + 1)
    return InvalidArgument("bitcast-convert %", instr.name(), ": bad rank");
  const int pieces = wt / wf;
  std::vector<Value> parts;
  std::string acc = "(" + wide_bits + ")0";
  for (int k = 0; k < pieces; ++k) {
    Index oi = index;
    oi.linear.reset();
    oi.linear_shape.reset();
    oi.dims.push_back(IExpr(k));
    KILN_ASSIGN_OR_RETURN(Value v, Emit(op, oi));
    parts.push_back(v);
    KILN_ASSIGN_OR_RETURN(std::string bits, ElementalOps::ToBits(ot, v.expr));
    acc = "(" + acc + " | (((" + wide_bits + ")(" + bits + ") & (" + mask + ")) << " +
          std::to_string(k * wf) + "))";
  }
  KILN_ASSIGN_OR_RETURN(std::string expr, ElementalOps::FromBits(t, acc));
  std::vector<const Value*> deps;
  for (const Value& v : parts) deps.push_back(&v);
  return std::vector<Value>{Let(t, instr.name(), expr, deps)};
}

StatusOr<std::vector<Value>> ElementalEmitter::CallComputation(const HloComputation& c,
                                                               const std::vector<Value>& args,
                                                               std::string_view name_hint,
                                                               int min_depth) {
  KILN_ASSIGN_OR_RETURN(const ScalarFunction* f, source_.Function(c));
  if (f->params.size() != args.size())
    return InvalidArgument("computation ", c.name(), " takes ", f->params.size(), " arguments, got ",
                           args.size());
  std::vector<std::string> arg_exprs;
  std::vector<const Value*> deps;
  for (const Value& a : args) {
    arg_exprs.push_back(a.expr);
    deps.push_back(&a);
  }
  if (!f->tuple_result) {
    return std::vector<Value>{Let(f->results[0], name_hint,
                                  f->name + "(" + StrJoin(arg_exprs, ", ") + ")", deps, min_depth)};
  }
  int d = std::min(min_depth, code_.depth());
  for (const Value* v : deps) d = std::max(d, DepthOf(*v));
  std::vector<Value> results;
  for (PrimitiveType t : f->results) {
    std::string n = code_.UniqueName(std::string(name_hint));
    code_.LineAt(d, RegisterType(t) + " " + n + ";");
    arg_exprs.push_back("&" + n);
    results.push_back(Value{n, t, code_.BlockIdAt(d)});
  }
  code_.LineAt(d, f->name + "(" + StrJoin(arg_exprs, ", ") + ");");
  return results;
}

// ---- Shape ops ----

StatusOr<std::vector<Value>> ElementalEmitter::EmitShapeOp(const HloInstruction& instr,
                                                           const Index& index) {
  const Shape& out = instr.shape();
  auto one = [&](const HloInstruction& op, const Index& i) -> StatusOr<std::vector<Value>> {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(op, i));
    return std::vector<Value>{v};
  };
  switch (instr.opcode()) {
    case HloOpcode::kCopy:
      return one(*instr.operand(0), index);
    case HloOpcode::kBroadcast: {
      const HloInstruction& op = *instr.operand(0);
      Index oi;
      const auto& dims = instr.attrs().dimensions;
      if (static_cast<int64_t>(dims.size()) != op.shape().rank())
        return InvalidArgument("broadcast %", instr.name(), ": dimensions do not match the operand");
      for (int64_t k = 0; k < op.shape().rank(); ++k)
        oi.dims.push_back(op.shape().dimensions(k) == 1 ? IExpr(0) : index.dims[dims[k]]);
      return one(op, oi);
    }
    case HloOpcode::kTranspose: {
      const HloInstruction& op = *instr.operand(0);
      const auto& perm = instr.attrs().dimensions;
      if (static_cast<int64_t>(perm.size()) != out.rank())
        return InvalidArgument("transpose %", instr.name(), ": bad permutation");
      Index oi;
      oi.dims.assign(out.rank(), IExpr(0));
      for (int64_t d = 0; d < out.rank(); ++d) oi.dims[perm[d]] = index.dims[d];
      // A transpose that keeps the physical order is a relabelling: the offset carries over.
      if (index.linear && index.linear_shape && SamePhysicalShape(*index.linear_shape, out)) {
        const std::vector<int64_t> om = MinorToMajor(out);
        const std::vector<int64_t> im = MinorToMajor(op.shape());
        std::vector<int64_t> a, b;
        for (int64_t d : om)
          if (out.dimensions(d) != 1) a.push_back(perm[d]);
        for (int64_t d : im)
          if (op.shape().dimensions(d) != 1) b.push_back(d);
        if (a == b) {
          oi.linear = index.linear;
          oi.linear_shape = std::make_shared<Shape>(op.shape());
        }
      }
      return one(op, oi);
    }
    case HloOpcode::kBitcast: {
      const HloInstruction& op = *instr.operand(0);
      if (op.shape().num_elements() != out.num_elements() ||
          op.shape().element_type() != out.element_type())
        return Unimplemented("bitcast %", instr.name(), " changes the element count or type");
      IExpr linear = Offset(out, index);
      return one(op, Delinearize(linear, op.shape()));
    }
    case HloOpcode::kReshape: {
      const HloInstruction& op = *instr.operand(0);
      const Shape& in = op.shape();
      if (in.num_elements() != out.num_elements())
        return InvalidArgument("reshape %", instr.name(), " changes the element count");
      Index oi;
      oi.dims.assign(in.rank(), IExpr(0));
      // Group dimensions whose products match; map each group through its own linear index.
      std::vector<int64_t> od, id;
      for (int64_t d = 0; d < out.rank(); ++d)
        if (out.dimensions(d) != 1) od.push_back(d);
      for (int64_t d = 0; d < in.rank(); ++d)
        if (in.dimensions(d) != 1) id.push_back(d);
      size_t i = 0, j = 0;
      while (i < od.size() && j < id.size()) {
        size_t i0 = i, j0 = j;
        int64_t po = out.dimensions(od[i++]), pi = in.dimensions(id[j++]);
        while (po != pi) {
          if (po < pi) po *= out.dimensions(od[i++]);
          else pi *= in.dimensions(id[j++]);
        }
        if (i - i0 == 1 && j - j0 == 1) {
          oi.dims[id[j0]] = index.dims[od[i0]];
          continue;
        }
        IExpr lin;
        for (size_t k = i0; k < i; ++k) lin = lin * out.dimensions(od[k]) + index.dims[od[k]];
        for (size_t k = j; k-- > j0;) {
          int64_t size = in.dimensions(id[k]);
          if (k == j0) {
            oi.dims[id[k]] = lin;
          } else {
            oi.dims[id[k]] = code_.Mod(lin, size, "i" + std::to_string(id[k]));
            lin = code_.Div(lin, size, "q" + std::to_string(id[k]));
          }
        }
      }
      if (index.linear && index.linear_shape && SamePhysicalShape(*index.linear_shape, out) &&
          IsRowMajorPhysical(out) && IsRowMajorPhysical(in)) {
        oi.linear = index.linear;
        oi.linear_shape = std::make_shared<Shape>(in);
      }
      return one(op, oi);
    }
    case HloOpcode::kSlice: {
      const auto& slice = instr.attrs().slice;
      if (static_cast<int64_t>(slice.size()) != out.rank())
        return InvalidArgument("slice %", instr.name(), ": bad slice attribute");
      Index oi;
      for (int64_t d = 0; d < out.rank(); ++d)
        oi.dims.push_back(index.dims[d] * slice[d].stride + IExpr(slice[d].start));
      return one(*instr.operand(0), oi);
    }
    case HloOpcode::kReverse: {
      Index oi = Index{index.dims, std::nullopt, nullptr};
      for (int64_t d : instr.attrs().dimensions)
        oi.dims[d] = IExpr(out.dimensions(d) - 1) - index.dims[d];
      return one(*instr.operand(0), oi);
    }
    case HloOpcode::kIota: {
      int64_t dim = instr.attrs().iota_dimension;
      if (dim < 0 || dim >= out.rank()) return InvalidArgument("iota %", instr.name(), ": bad dimension");
      std::string idx = code_.Render(index.dims[dim]);
      PrimitiveType t = out.element_type();
      std::string expr;
      if (t == PrimitiveType::kPred) expr = "(" + idx + ") != 0";
      else if (IsComplexType(t)) expr = RegisterType(t) + "{(" + RegisterType(ComplexComponentType(t)) + ")(" + idx + "), 0}";
      else if (t == PrimitiveType::kF64) expr = "(double)(" + idx + ")";
      else if (IsFloatingPointType(t)) expr = RoundFloat(t, (t == PrimitiveType::kF32 ? "(float)(" : "(double)(") + idx + ")");
      else expr = WrapInt(t, "(" + RegisterType(t) + ")(" + idx + ")");
      return std::vector<Value>{Let(t, instr.name(), expr, {}, code_.DepthOf(index.dims[dim]))};
    }
    default:
      return Unimplemented("shape op ", HloOpcodeString(instr.opcode()));
  }
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitConstant(const HloInstruction& instr,
                                                            const Index& index) {
  if (!instr.has_literal()) return InvalidArgument("constant %", instr.name(), " has no value");
  const Literal& lit = instr.literal();
  if (!lit.shape().IsArray()) return Unimplemented("tuple constant %", instr.name());
  PrimitiveType t = lit.shape().element_type();
  if (lit.element_count() == 1) {
    KILN_ASSIGN_OR_RETURN(std::string v, ElementLiteral(lit, 0));
    return std::vector<Value>{Value{v, t, 0}};
  }
  KILN_ASSIGN_OR_RETURN(std::string array, source_.ConstantArray(instr));
  // Literals are stored in logical row-major order.
  std::vector<int64_t> strides = RowMajorStrides(lit.shape().dimensions());
  IExpr off;
  for (int64_t d = 0; d < lit.shape().rank(); ++d) off = off + index.dims[d] * strides[d];
  int depth = std::max(code_.DepthOf(off), code_.DepthForLoad());
  std::string rendered = code_.Render(off);
  return std::vector<Value>{Let(t, instr.name(), array + "[" + rendered + "]", {}, depth)};
}

Status ElementalEmitter::AssignInto(const Value& out, const HloInstruction& instr,
                                    const Index& index) {
  KILN_ASSIGN_OR_RETURN(Value v, Emit(instr, index));
  code_.Line(out.expr + " = " + v.expr + ";");
  return OkStatus();
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitPad(const HloInstruction& instr,
                                                       const Index& index) {
  const HloInstruction& op = *instr.operand(0);
  const auto& padding = instr.attrs().padding;
  const Shape& in = op.shape();
  if (static_cast<int64_t>(padding.size()) != in.rank())
    return InvalidArgument("pad %", instr.name(), ": bad padding attribute");
  Index oi;
  std::vector<std::string> conds;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const PaddingDimension& p = padding[d];
    IExpr t = index.dims[d] - IExpr(p.low);
    if (p.interior == 0) {
      if (code_.Min(t) < 0) conds.push_back(code_.Render(t) + " >= 0");
      if (code_.Max(t) >= in.dimensions(d)) conds.push_back(code_.Render(t) + " < " + code_.IndexLiteral(in.dimensions(d)));
      oi.dims.push_back(t);
    } else {
      int64_t s = p.interior + 1;
      // t may be negative here: the conditions test it first, the quotient is used only then.
      IExpr q = code_.Div(t, s, "pad_q");
      IExpr r = code_.Mod(t, s, "pad_r");
      if (code_.Min(t) < 0) conds.push_back(code_.Render(t) + " >= 0");
      if (!(r == IExpr(0))) conds.push_back(code_.Render(r) + " == 0");
      if (code_.Max(q) >= in.dimensions(d)) conds.push_back(code_.Render(q) + " < " + code_.IndexLiteral(in.dimensions(d)));
      oi.dims.push_back(code_.Clamp(q, 0, in.dimensions(d) - 1, "pad_i"));
    }
  }
  if (conds.empty()) {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(op, oi));
    return std::vector<Value>{v};
  }
  KILN_ASSIGN_OR_RETURN(Value pad_value, Emit(*instr.operand(1), Index{}));
  PrimitiveType t = instr.shape().element_type();
  Value result{code_.UniqueName(instr.name()), t, code_.BlockIdAt(code_.depth())};
  code_.Line(RegisterType(t) + " " + result.expr + ";");
  // Two independent ifs rather than if/else: index variables defined lazily while emitting
  // the second branch land between the blocks, which an else would not allow.
  const std::string cond = StrJoin(conds, " && ");
  code_.Open("if (" + cond + ")", BlockKind::kConditional);
  KILN_RETURN_IF_ERROR(AssignInto(result, op, oi));
  code_.Close();
  code_.Open("if (!(" + cond + "))", BlockKind::kConditional);
  code_.Line(result.expr + " = " + pad_value.expr + ";");
  code_.Close();
  return std::vector<Value>{result};
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitConcatenate(const HloInstruction& instr,
                                                               const Index& index) {
  if (instr.attrs().dimensions.size() != 1)
    return InvalidArgument("concatenate %", instr.name(), ": needs one dimension");
  const int64_t dim = instr.attrs().dimensions[0];
  const IExpr& i = index.dims[dim];
  // The operands the index can reach.
  struct Part {
    const HloInstruction* op;
    int64_t offset;
  };
  std::vector<Part> parts;
  int64_t offset = 0;
  for (const HloInstruction* op : instr.operands()) {
    int64_t size = op->shape().dimensions(dim);
    if (size > 0 && code_.Max(i) >= offset && code_.Min(i) < offset + size) parts.push_back({op, offset});
    offset += size;
  }
  if (parts.empty()) return InvalidArgument("concatenate %", instr.name(), ": index out of range");
  auto part_index = [&](const Part& p) {
    Index oi{index.dims, std::nullopt, nullptr};
    oi.dims[dim] = i - IExpr(p.offset);
    return oi;
  };
  if (parts.size() == 1) {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(*parts[0].op, part_index(parts[0])));
    return std::vector<Value>{v};
  }
  PrimitiveType t = instr.shape().element_type();
  Value result{code_.UniqueName(instr.name()), t, code_.BlockIdAt(code_.depth())};
  code_.Line(RegisterType(t) + " " + result.expr + ";");
  std::string rendered = code_.Render(i);
  // Independent ifs with disjoint ranges, not an else chain (see EmitPad).
  for (size_t k = 0; k < parts.size(); ++k) {
    std::vector<std::string> conds;
    if (k > 0) conds.push_back(rendered + " >= " + code_.IndexLiteral(parts[k].offset));
    if (k + 1 < parts.size())
      conds.push_back(rendered + " < " +
                      code_.IndexLiteral(parts[k].offset + parts[k].op->shape().dimensions(dim)));
    std::string header = "if (" + StrJoin(conds, " && ") + ")";
    code_.Open(header, BlockKind::kConditional);
    KILN_RETURN_IF_ERROR(AssignInto(result, *parts[k].op, part_index(parts[k])));
    code_.Close();
  }
  return std::vector<Value>{result};
}

StatusOr<std::vector<IExpr>> ElementalEmitter::DynamicStarts(const HloInstruction& instr,
                                                             int64_t first,
                                                             const std::vector<int64_t>& operand_dims,
                                                             const std::vector<int64_t>& window) {
  std::vector<IExpr> starts;
  const int64_t rank = static_cast<int64_t>(operand_dims.size());
  const bool vector_form = instr.operand_count() == first + 1 && rank > 1 &&
                           instr.operand(first)->shape().rank() == 1;
  for (int64_t d = 0; d < rank; ++d) {
    Value v;
    if (vector_form) {
      KILN_ASSIGN_OR_RETURN(v, Emit(*instr.operand(first), Index{{IExpr(d)}, std::nullopt, nullptr}));
    } else {
      if (first + d >= instr.operand_count())
        return InvalidArgument("%", instr.name(), ": missing start index ", d);
      KILN_ASSIGN_OR_RETURN(v, Emit(*instr.operand(first + d), Index{}));
    }
    const int64_t hi = std::max<int64_t>(0, operand_dims[d] - window[d]);
    KILN_ASSIGN_OR_RETURN(IExpr start,
                          ClampedIndex(instr, v, hi, instr.name() + "_start" + std::to_string(d)));
    starts.push_back(start);
  }
  return starts;
}

StatusOr<IExpr> ElementalEmitter::ClampedIndex(const HloInstruction& instr, const Value& v,
                                               int64_t hi, const std::string& name) {
  PrimitiveType st = v.type;
  if (!IsIntegralType(st)) return InvalidArgument("%", instr.name(), ": non-integer start index");
  if (hi == 0) return IExpr(0);
  if (v.block == 0 && v.expr.find_first_not_of("0123456789()-LlUu") == std::string::npos) {
    // A literal start: fold it.
    int64_t lit = std::stoll(v.expr.substr(v.expr.find_first_of("-0123456789")));
    return IExpr(std::clamp<int64_t>(lit, 0, hi));
  }
  std::string lo_lit = ZeroLiteral(st), hi_lit = IntLiteral(hi, st);
  // Clamp in the index's own type first (a huge s64 start must not wrap in the cast).
  std::string code = "(" + code_.index_type() + ")(" + v.expr + " < " + lo_lit + " ? " + lo_lit +
                     " : (" + v.expr + " > " + hi_lit + " ? " + hi_lit + " : " + v.expr + "))";
  if (IsUnsignedIntegralType(st))
    code = "(" + code_.index_type() + ")(" + v.expr + " > " + hi_lit + " ? " + hi_lit + " : " + v.expr + ")";
  return code_.DefineVar(name, code, {}, 0, hi, 1, DepthOf(v));
}

// gather: output index = (batch coordinates, offset coordinates); the start of each batch
// position's slice comes from the index vector at those batch coordinates, clamped so the
// whole slice fits (XLA's semantics, as eval/gather_scatter.cc).
StatusOr<std::vector<Value>> ElementalEmitter::EmitGather(const HloInstruction& instr,
                                                          const Index& index) {
  const HloAttributes& at = instr.attrs();
  if (!at.gather_dimension_numbers)
    return InvalidArgument("gather %", instr.name(), " has no dimension numbers");
  const GatherDimensionNumbers& dn = *at.gather_dimension_numbers;
  const HloInstruction& op = *instr.operand(0);
  const HloInstruction& ind = *instr.operand(1);
  const Shape& os = op.shape();
  const Shape& is = ind.shape();
  const int64_t orank = os.rank(), irank = is.rank(), rrank = instr.shape().rank();
  const std::vector<int64_t>& slice = at.gather_slice_sizes;
  const int64_t ivd = dn.index_vector_dim;
  if (int64_t(slice.size()) != orank || ivd < 0 || ivd > irank ||
      dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size())
    return InvalidArgument("gather %", instr.name(), ": malformed dimension numbers");
  const int64_t vector_size = ivd == irank ? 1 : is.dimensions(ivd);
  if (vector_size != int64_t(dn.start_index_map.size()))
    return InvalidArgument("gather %", instr.name(), ": index vectors do not match start_index_map");
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!contains(dn.collapsed_slice_dims, d) && !contains(dn.operand_batching_dims, d))
      window_operand_dims.push_back(d);
  std::vector<IExpr> batch, window;
  for (int64_t d = 0; d < rrank; ++d) (contains(dn.offset_dims, d) ? window : batch).push_back(index.dims[d]);
  if (window.size() != window_operand_dims.size() || int64_t(batch.size()) != irank - (ivd < irank ? 1 : 0))
    return InvalidArgument("gather %", instr.name(), ": result does not match the dimension numbers");
  // The indices' batch dimensions (all but index_vector_dim, in order) take the batch coordinates.
  auto indices_index = [&](int64_t k) {
    Index ii;
    int64_t b = 0;
    for (int64_t d = 0; d < irank; ++d) ii.dims.push_back(d == ivd ? IExpr(k) : batch[b++]);
    return ii;
  };
  auto batch_position = [&](int64_t indices_dim) {
    int64_t b = 0;
    for (int64_t d = 0; d < irank; ++d) {
      if (d == ivd) continue;
      if (d == indices_dim) return b;
      ++b;
    }
    return int64_t{-1};
  };
  std::vector<IExpr> starts(orank, IExpr(0));
  for (int64_t k = 0; k < vector_size; ++k) {
    const int64_t d = dn.start_index_map[k];
    if (d < 0 || d >= orank) return InvalidArgument("gather %", instr.name(), ": bad start_index_map");
    KILN_ASSIGN_OR_RETURN(Value v, Emit(ind, indices_index(k)));
    KILN_ASSIGN_OR_RETURN(starts[d], ClampedIndex(instr, v, std::max<int64_t>(0, os.dimensions(d) - slice[d]),
                                                  instr.name() + "_start" + std::to_string(d)));
  }
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
    const int64_t pos = batch_position(dn.start_indices_batching_dims[i]);
    if (pos < 0) return InvalidArgument("gather %", instr.name(), ": bad start_indices_batching_dims");
    starts[dn.operand_batching_dims[i]] = batch[pos];
  }
  Index oi;
  oi.dims = starts;
  for (size_t j = 0; j < window_operand_dims.size(); ++j)
    oi.dims[window_operand_dims[j]] = starts[window_operand_dims[j]] + window[j];
  KILN_ASSIGN_OR_RETURN(Value v, Emit(op, oi));
  return std::vector<Value>{v};
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitDynamicSlice(const HloInstruction& instr,
                                                                const Index& index) {
  const HloInstruction& op = *instr.operand(0);
  const std::vector<int64_t>& window = instr.shape().dimensions();
  KILN_ASSIGN_OR_RETURN(std::vector<IExpr> starts,
                        DynamicStarts(instr, 1, op.shape().dimensions(), window));
  Index oi;
  for (int64_t d = 0; d < op.shape().rank(); ++d) oi.dims.push_back(starts[d] + index.dims[d]);
  KILN_ASSIGN_OR_RETURN(Value v, Emit(op, oi));
  return std::vector<Value>{v};
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitDynamicUpdateSlice(const HloInstruction& instr,
                                                                      const Index& index) {
  const HloInstruction& op = *instr.operand(0);
  const HloInstruction& update = *instr.operand(1);
  KILN_ASSIGN_OR_RETURN(std::vector<IExpr> starts,
                        DynamicStarts(instr, 2, op.shape().dimensions(), update.shape().dimensions()));
  std::vector<std::string> conds;
  Index ui;
  for (int64_t d = 0; d < op.shape().rank(); ++d) {
    IExpr rel = index.dims[d] - starts[d];
    ui.dims.push_back(rel);
    if (code_.Min(rel) < 0) conds.push_back(code_.Render(rel) + " >= 0");
    if (code_.Max(rel) >= update.shape().dimensions(d))
      conds.push_back(code_.Render(rel) + " < " + code_.IndexLiteral(update.shape().dimensions(d)));
  }
  if (conds.empty()) {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(update, ui));
    return std::vector<Value>{v};
  }
  PrimitiveType t = instr.shape().element_type();
  Value result{code_.UniqueName(instr.name()), t, code_.BlockIdAt(code_.depth())};
  code_.Line(RegisterType(t) + " " + result.expr + ";");
  // Independent ifs, not if/else (see EmitPad).
  const std::string cond = StrJoin(conds, " && ");
  code_.Open("if (" + cond + ")", BlockKind::kConditional);
  KILN_RETURN_IF_ERROR(AssignInto(result, update, ui));
  code_.Close();
  code_.Open("if (!(" + cond + "))", BlockKind::kConditional);
  KILN_RETURN_IF_ERROR(AssignInto(result, op, index));
  code_.Close();
  return std::vector<Value>{result};
}

StatusOr<std::vector<Value>> ElementalEmitter::EmitReduce(const HloInstruction& instr,
                                                          const Index& index) {
  // A reduce computed inline: a loop over the reduced dimensions for each element wanted.
  const int64_t n = instr.operand_count() / 2;
  if (n == 0 || instr.operand_count() != 2 * n || instr.to_apply() == nullptr)
    return InvalidArgument("reduce %", instr.name(), ": malformed");
  const Shape& in = instr.operand(0)->shape();
  std::vector<int64_t> reduced = instr.attrs().dimensions;
  std::sort(reduced.begin(), reduced.end());
  std::vector<Value> acc;
  for (int64_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(Value init, Emit(*instr.operand(n + k), Index{}));
    std::string name = code_.UniqueName(instr.name() + "_acc");
    code_.Line(RegisterType(init.type) + " " + name + " = " + init.expr + ";");
    acc.push_back(Value{name, init.type, code_.BlockIdAt(code_.depth())});
  }
  Index ii;
  ii.dims.assign(in.rank(), IExpr(0));
  int64_t out_d = 0;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) ii.dims[d] = index.dims[out_d++];
  }
  int loops = 0;
  for (int64_t d : reduced) {
    if (in.dimensions(d) == 1) continue;
    std::string v = code_.UniqueName("r" + std::to_string(d));
    code_.Open("for (" + code_.index_type() + " " + v + " = 0; " + v + " < " +
                   code_.IndexLiteral(in.dimensions(d)) + "; ++" + v + ")",
               BlockKind::kLoop);
    ii.dims[d] = IExpr::Var(code_.DeclareVar(v, code_.depth(), 0, in.dimensions(d) - 1));
    ++loops;
  }
  std::vector<Value> args = acc;
  for (int64_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(*instr.operand(k), ii));
    args.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value> r,
                        CallComputation(*instr.to_apply(), args, instr.name(), code_.depth()));
  for (int64_t k = 0; k < n; ++k) code_.Line(acc[k].expr + " = " + r[k].expr + ";");
  for (int i = 0; i < loops; ++i) code_.Close();
  return acc;
}

}  // namespace kiln::codegen
