#include "kiln/eval/scalar_call.h"

#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/scalar_program.h"

namespace kiln::eval_internal {

StatusOr<ScalarCall> ScalarCall::Create(Evaluator& evaluator, const HloComputation& computation,
                                        std::span<const PrimitiveType> param_types,
                                        int num_results) {
  if (computation.num_parameters() != static_cast<int64_t>(param_types.size()))
    return InvalidArgument("computation ", computation.name(), " takes ",
                           computation.num_parameters(), " parameters, expected ",
                           param_types.size());
  ScalarCall call(evaluator, computation);
  for (size_t i = 0; i < param_types.size(); ++i) {
    const Shape& ps = computation.parameter_instruction(static_cast<int64_t>(i))->shape();
    if (!ps.IsScalar() || ps.element_type() != param_types[i])
      return InvalidArgument("computation ", computation.name(), ": parameter ", i, " is ",
                             ps.ToString(false), ", expected ", PrimitiveTypeName(param_types[i]),
                             "[]");
    call.params_.emplace_back(Shape::Scalar(param_types[i]));
    call.widths_.push_back(PrimitiveByteWidth(param_types[i]));
  }
  for (Literal& l : call.params_) call.param_ptrs_.push_back(&l);
  const HloInstruction* root = computation.root_instruction();
  if (!root) return InvalidArgument("computation ", computation.name(), " has no root");
  const Shape& rs = root->shape();
  std::vector<Shape> leaves;
  if (rs.IsTuple()) {
    leaves = rs.tuple_shapes();
  } else {
    leaves.push_back(rs);
  }
  if (static_cast<int>(leaves.size()) != num_results)
    return InvalidArgument("computation ", computation.name(), " returns ", leaves.size(),
                           " values, expected ", num_results);
  for (const Shape& s : leaves) {
    if (!s.IsScalar())
      return InvalidArgument("computation ", computation.name(), " returns ", rs.ToString(false),
                             ", expected scalars");
    call.result_widths_.push_back(PrimitiveByteWidth(s.element_type()));
  }
  call.num_results_ = num_results;
  const ScalarProgram* program = evaluator.GetScalarProgram(computation);
  if (program && program->num_parameters() == static_cast<int>(param_types.size()) &&
      program->num_results() == num_results) {
    bool fits = true;
    for (size_t i = 0; i < param_types.size(); ++i)
      fits &= program->parameter_type(static_cast<int>(i)) == param_types[i];
    if (fits) call.program_ = program;
  }
  return call;
}

Status ScalarCall::Run(std::span<const void* const> args, std::span<void* const> results) {
  if (program_) {
    program_->Run(args, results);
    return OkStatus();
  }
  for (size_t i = 0; i < params_.size(); ++i)
    std::memcpy(params_[i].untyped_data(), args[i], widths_[i]);
  KILN_ASSIGN_OR_RETURN(Literal r, evaluator_->EvaluateScalar(*computation_, param_ptrs_));
  if (r.shape().IsTuple()) {
    if (r.tuple_size() != num_results_)
      return Internal("scalar computation ", computation_->name(), " returned ", r.tuple_size(),
                      " values");
    for (int j = 0; j < num_results_; ++j)
      std::memcpy(results[j], r.tuple_element(j).untyped_data(), result_widths_[j]);
  } else {
    std::memcpy(results[0], r.untyped_data(), result_widths_[0]);
  }
  return OkStatus();
}

StatusOr<bool> ScalarCall::RunPredicate(std::span<const void* const> args) {
  uint8_t out[16] = {};
  void* res[1] = {out};
  KILN_RETURN_IF_ERROR(Run(args, res));
  return out[0] != 0;
}

}  // namespace kiln::eval_internal
