// Shape inference for reductions and windows (reduce, reduce-window, select-and-scatter) and
// for sort and topk.
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

Status CheckSameDims(std::string_view op, const std::vector<const Shape*>& inputs) {
  for (const Shape* s : inputs) {
    KILN_RETURN_IF_ERROR(ExpectArray(*s, StrCat(op, " inputs")));
    if (s->dimensions() != inputs[0]->dimensions())
      return InvalidArgument(op, " inputs must have the same dimensions, found ", Str(*inputs[0]),
                             " and ", Str(*s));
  }
  return OkStatus();
}

Status CheckInitCount(std::string_view op, const std::vector<const Shape*>& inputs,
                      const std::vector<const Shape*>& inits) {
  if (inputs.empty() || inputs.size() != inits.size())
    return InvalidArgument(op, " needs N inputs and N init values, found ", inputs.size(),
                           " inputs and ", inits.size(), " init values");
  for (const Shape* s : inits)
    if (!s->IsScalar()) return InvalidArgument(op, " init values must be scalars, found ", Str(*s));
  return OkStatus();
}

std::vector<PrimitiveType> Types(const std::vector<const Shape*>& shapes) {
  std::vector<PrimitiveType> out;
  for (const Shape* s : shapes) out.push_back(s->element_type());
  return out;
}

}  // namespace

Status VerifyReducerShape(const ProgramShape& reducer, const std::vector<PrimitiveType>& init_types,
                          const std::vector<PrimitiveType>& input_types) {
  const size_t n = init_types.size();
  if (reducer.parameters.size() != 2 * n)
    return InvalidArgument("reducer ", Signature(reducer), " must take ", 2 * n,
                           " parameters, takes ", reducer.parameters.size());
  std::vector<Shape> acc;
  if (reducer.result.IsArray()) {
    if (n != 1)
      return InvalidArgument("reducer ", Signature(reducer), " must return a tuple of ", n,
                             " scalars");
    acc.push_back(reducer.result);
  } else if (reducer.result.IsTuple()) {
    if (static_cast<size_t>(reducer.result.tuple_shapes_size()) != n)
      return InvalidArgument("reducer ", Signature(reducer), " must return a tuple of ", n,
                             " scalars");
    acc = reducer.result.tuple_shapes();
  } else {
    return InvalidArgument("reducer ", Signature(reducer), " must return scalars");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!acc[i].IsScalar())
      return InvalidArgument("reducer ", Signature(reducer), " must return scalars");
    const Shape& p_acc = reducer.parameters[i];
    const Shape& p_in = reducer.parameters[n + i];
    if (!p_acc.IsScalar() || p_acc.element_type() != acc[i].element_type())
      return InvalidArgument("reducer ", Signature(reducer), " parameter ", i, " (", Str(p_acc),
                             ") must have the result type ", Str(acc[i]));
    if (!SameTypeIgnoringFpPrecision(acc[i].element_type(), init_types[i]))
      return InvalidArgument("reducer ", Signature(reducer), " accumulator ", i, " (",
                             Str(acc[i]), ") does not match the init value type ",
                             PrimitiveTypeName(init_types[i]));
    if (!p_in.IsScalar() || !SameTypeIgnoringFpPrecision(p_in.element_type(), input_types[i]))
      return InvalidArgument("reducer ", Signature(reducer), " parameter ", n + i, " (",
                             Str(p_in), ") must be a scalar of the input type ",
                             PrimitiveTypeName(input_types[i]));
    if (!SameTypeIgnoringFpPrecision(p_in.element_type(), acc[i].element_type()))
      return InvalidArgument("reducer ", Signature(reducer), " parameter ", n + i,
                             " must have the type of result ", i);
  }
  return OkStatus();
}

StatusOr<Shape> InferReduceShape(const std::vector<const Shape*>& inputs,
                                 const std::vector<const Shape*>& init_values,
                                 const std::vector<int64_t>& dimensions,
                                 const ProgramShape& to_apply) {
  KILN_RETURN_IF_ERROR(CheckInitCount("reduce", inputs, init_values));
  KILN_RETURN_IF_ERROR(CheckSameDims("reduce", inputs));
  const Shape& arg = *inputs[0];
  KILN_RETURN_IF_ERROR(CheckDimsInRangeUnique(dimensions, arg.rank(), "reduce dimensions="));
  KILN_RETURN_IF_ERROR(VerifyReducerShape(to_apply, Types(init_values), Types(inputs)));
  std::vector<int64_t> dims;
  std::vector<bool> dyn;
  for (int64_t i = 0; i < arg.rank(); ++i) {
    if (Contains(dimensions, i)) continue;
    dims.push_back(arg.dimensions(i));
    dyn.push_back(arg.is_dynamic_dimension(i));
  }
  if (to_apply.result.IsArray()) return MakeArray(to_apply.result.element_type(), dims, dyn);
  std::vector<Shape> elements;
  for (const Shape& e : to_apply.result.tuple_shapes())
    elements.push_back(MakeArray(e.element_type(), dims, dyn));
  return Shape::Tuple(std::move(elements));
}

StatusOr<Shape> InferReduceWindowShape(const std::vector<const Shape*>& inputs,
                                       const std::vector<const Shape*>& init_values,
                                       const Window& window, const ProgramShape& to_apply) {
  KILN_RETURN_IF_ERROR(CheckInitCount("reduce-window", inputs, init_values));
  KILN_RETURN_IF_ERROR(CheckSameDims("reduce-window", inputs));
  KILN_RETURN_IF_ERROR(VerifyReducerShape(to_apply, Types(init_values), Types(inputs)));
  std::vector<Shape> outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Shape s,
                          InferWindowOutputShape(*inputs[i], window, init_values[i]->element_type()));
    outs.push_back(std::move(s));
  }
  if (to_apply.result.IsArray()) return outs[0];
  return Shape::Tuple(std::move(outs));
}

StatusOr<Shape> InferSelectAndScatterShape(const Shape& operand, const ProgramShape& select,
                                           const Window& window, const Shape& source,
                                           const Shape& init_value, const ProgramShape& scatter) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of select-and-scatter"));
  KILN_RETURN_IF_ERROR(ExpectArray(source, "the source of select-and-scatter"));
  if (!init_value.IsScalar())
    return InvalidArgument("select-and-scatter init value must be a scalar, found ",
                           Str(init_value));
  if (select.parameters.size() != 2)
    return InvalidArgument("select-and-scatter select computation ", Signature(select),
                           " must take 2 parameters");
  if (!select.result.IsScalar() || select.result.element_type() != PrimitiveType::kPred)
    return InvalidArgument("select-and-scatter select computation ", Signature(select),
                           " must return pred[]");
  for (const Shape& p : select.parameters)
    if (!p.IsScalar() || !SameTypeIgnoringFpPrecision(p.element_type(), operand.element_type()))
      return InvalidArgument("select-and-scatter select computation ", Signature(select),
                             " parameters must be scalars of the operand type ",
                             PrimitiveTypeName(operand.element_type()));
  KILN_RETURN_IF_ERROR(
      VerifyReducerShape(scatter, {init_value.element_type()}, {source.element_type()})
          .WithContext("select-and-scatter scatter computation"));
  KILN_ASSIGN_OR_RETURN(Shape windowed,
                        InferWindowOutputShape(operand, window, operand.element_type()));
  if (windowed.dimensions() != source.dimensions())
    return InvalidArgument("select-and-scatter source ", Str(source),
                           " must have the windowed operand's dimensions ", Str(windowed));
  return NoLayout(operand);
}

StatusOr<Shape> InferSortShape(const std::vector<const Shape*>& operands, int64_t dimension,
                               const ProgramShape& comparator) {
  if (operands.empty()) return InvalidArgument("sort needs at least one operand");
  KILN_RETURN_IF_ERROR(CheckSameDims("sort", operands));
  if (dimension < 0 || dimension >= operands[0]->rank())
    return InvalidArgument("sort dimensions={", dimension, "} is out of range for ",
                           Str(*operands[0]));
  if (comparator.parameters.size() != 2 * operands.size())
    return InvalidArgument("sort comparator ", Signature(comparator), " must take ",
                           2 * operands.size(), " parameters (two per operand)");
  if (!comparator.result.IsScalar() || comparator.result.element_type() != PrimitiveType::kPred)
    return InvalidArgument("sort comparator ", Signature(comparator), " must return pred[]");
  for (size_t i = 0; i < comparator.parameters.size(); ++i) {
    const Shape& p = comparator.parameters[i];
    const PrimitiveType t = operands[i / 2]->element_type();
    if (!p.IsScalar() || !SameTypeIgnoringFpPrecision(p.element_type(), t))
      return InvalidArgument("sort comparator parameter ", i, " is ", Str(p),
                             ", expected a scalar ", PrimitiveTypeName(t));
  }
  if (operands.size() == 1) return NoLayout(*operands[0]);
  return InferTupleShape(operands);
}

StatusOr<Shape> InferTopKShape(const Shape& operand, int64_t k) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of topk"));
  if (operand.rank() < 1) return InvalidArgument("topk needs an operand of rank >= 1");
  const int64_t last = operand.dimensions(operand.rank() - 1);
  if (k < 0 || k > last)
    return InvalidArgument("topk k=", k, " is out of range [0, ", last, "] for ", Str(operand));
  Shape values = NoLayout(operand);
  values.set_dimensions(operand.rank() - 1, k);
  Shape indices = WithType(values, PrimitiveType::kS32);
  return Shape::Tuple({values, indices});
}

}  // namespace kiln
