#include "kiln/passes/batch_norm_expander.h"

#include <map>
#include <vector>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln {

namespace {

bool IsBatchNorm(HloOpcode op) {
  return op == HloOpcode::kBatchNormTraining || op == HloOpcode::kBatchNormInference ||
         op == HloOpcode::kBatchNormGrad;
}

// Builds the expansion of one batch-norm instruction (Note [Batch norm expansion]).
class Expansion {
 public:
  // `adds`: the add computation of each compute type, shared by every expansion of the module.
  Expansion(HloModule& module, HloEditor& e, HloInstruction* bn, std::map<PrimitiveType, HloComputation*>& adds)
      : module_(module), e_(e), bn_(bn), adds_(adds) {}

  StatusOr<HloInstruction*> Build() {
    HloInstruction* x0 = bn_->operand(0);
    const Shape& xs = x0->shape();
    if (!xs.IsArray()) return InvalidArgument(bn_->name(), ": operand 0 is not an array");
    type_ = xs.element_type();
    if (type_ == PrimitiveType::kF16 || type_ == PrimitiveType::kBF16) {
      compute_ = PrimitiveType::kF32;
    } else if (type_ == PrimitiveType::kF32 || type_ == PrimitiveType::kF64) {
      compute_ = type_;
    } else {
      return Unimplemented(bn_->name(), ": batch norm of ", PrimitiveTypeName(type_));
    }
    fi_ = bn_->attrs().feature_index;
    if (fi_ < 0 || fi_ >= xs.rank()) return InvalidArgument(bn_->name(), ": feature_index out of range");
    dims_ = xs.dimensions();
    features_ = dims_[fi_];
    count_ = features_ == 0 ? 0 : xs.num_elements() / features_;
    for (int64_t d = 0; d < xs.rank(); ++d)
      if (d != fi_) reduce_dims_.push_back(d);
    full_ = ArrayShapeLike(compute_, dims_, xs);
    vec_ = ArrayShapeLike(compute_, {features_}, xs);
    HloComputation*& add = adds_[compute_];
    if (add == nullptr) add = AddComputation();
    add_ = add;

    switch (bn_->opcode()) {
      case HloOpcode::kBatchNormTraining: return Training();
      case HloOpcode::kBatchNormInference: return Inference();
      default: return Grad();
    }
  }

 private:
  StatusOr<HloInstruction*> In(int64_t operand) { return ToCompute(bn_->operand(operand)); }
  StatusOr<HloInstruction*> ToCompute(HloInstruction* v) {
    if (v->shape().element_type() == compute_) return v;
    return e_.Convert(v, compute_, nullptr, bn_);
  }
  // Rounds `v` to the result type, in the layout of `like_shape`.
  StatusOr<HloInstruction*> Out(HloInstruction* v, const Shape& like_shape) {
    if (like_shape.element_type() == compute_) return v;
    return e_.Convert(v, like_shape.element_type(), &like_shape, bn_);
  }
  StatusOr<HloInstruction*> Bin(HloOpcode op, HloInstruction* a, HloInstruction* b) {
    return e_.Binary(op, a, b, nullptr, bn_);
  }
  StatusOr<HloInstruction*> Scalar(double v, const Shape& shape) {
    return e_.BroadcastScalar(e_.ScalarConstant(compute_, v, bn_), shape, bn_);
  }
  // A [F] vector along the feature dimension of the operand's shape.
  StatusOr<HloInstruction*> Spread(HloInstruction* v) { return e_.Broadcast(v, full_, {fi_}, bn_); }
  // The per-feature sum of a full-shape value.
  HloInstruction* Sum(HloInstruction* v) {
    auto r = std::make_unique<HloInstruction>(HloOpcode::kReduce, vec_);
    r->attrs().dimensions = reduce_dims_;
    r->AppendOperand(v);
    r->AppendOperand(e_.ScalarConstant(compute_, 0.0, bn_));
    r->AppendCalledComputation(add_);
    return e_.Add(std::move(r), bn_);
  }
  HloComputation* AddComputation() {
    auto c = std::make_unique<HloComputation>(UniqueComputationName(module_, "batch_norm_add"));
    const Shape s = Shape::Scalar(compute_);
    auto a = std::make_unique<HloInstruction>(HloOpcode::kParameter, s, "a");
    a->set_parameter_number(0);
    auto b = std::make_unique<HloInstruction>(HloOpcode::kParameter, s, "b");
    b->set_parameter_number(1);
    HloInstruction* pa = c->AddInstruction(std::move(a));
    HloInstruction* pb = c->AddInstruction(std::move(b));
    auto r = std::make_unique<HloInstruction>(HloOpcode::kAdd, s, "sum");
    r->AppendOperand(pa);
    r->AppendOperand(pb);
    c->set_root_instruction(c->AddInstruction(std::move(r)));
    return module_.AddComputation(std::move(c));
  }
  // rsqrt(var + eps) on [F].
  StatusOr<HloInstruction*> Rstd(HloInstruction* var) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * eps, Scalar(bn_->attrs().epsilon, vec_));
    KILN_ASSIGN_OR_RETURN(HloInstruction * ve, Bin(HloOpcode::kAdd, var, eps));
    return e_.Unary(HloOpcode::kRsqrt, ve, nullptr, bn_);
  }
  // (x - mean) * (scale * rstd) + offset, all but x and the result on [F].
  StatusOr<HloInstruction*> Normalize(HloInstruction* xm, HloInstruction* scale, HloInstruction* rstd,
                                      HloInstruction* offset) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * factor, Bin(HloOpcode::kMultiply, scale, rstd));
    KILN_ASSIGN_OR_RETURN(HloInstruction * f, Spread(factor));
    KILN_ASSIGN_OR_RETURN(HloInstruction * y, Bin(HloOpcode::kMultiply, xm, f));
    KILN_ASSIGN_OR_RETURN(HloInstruction * o, Spread(offset));
    return Bin(HloOpcode::kAdd, y, o);
  }
  StatusOr<HloInstruction*> Centered(HloInstruction* x, HloInstruction* mean) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * m, Spread(mean));
    return Bin(HloOpcode::kSubtract, x, m);
  }
  StatusOr<HloInstruction*> OverCount(HloInstruction* v) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * n, Scalar(static_cast<double>(count_), vec_));
    return Bin(HloOpcode::kDivide, v, n);
  }

  StatusOr<HloInstruction*> Training() {
    KILN_ASSIGN_OR_RETURN(HloInstruction * x, In(0));
    KILN_ASSIGN_OR_RETURN(HloInstruction * scale, In(1));
    KILN_ASSIGN_OR_RETURN(HloInstruction * offset, In(2));
    KILN_ASSIGN_OR_RETURN(HloInstruction * mean, OverCount(Sum(x)));
    KILN_ASSIGN_OR_RETURN(HloInstruction * xm, Centered(x, mean));
    KILN_ASSIGN_OR_RETURN(HloInstruction * sq, Bin(HloOpcode::kMultiply, xm, xm));
    KILN_ASSIGN_OR_RETURN(HloInstruction * var, OverCount(Sum(sq)));
    KILN_ASSIGN_OR_RETURN(HloInstruction * rstd, Rstd(var));
    KILN_ASSIGN_OR_RETURN(HloInstruction * y, Normalize(xm, scale, rstd, offset));
    return Results({y, mean, var});
  }

  StatusOr<HloInstruction*> Inference() {
    KILN_ASSIGN_OR_RETURN(HloInstruction * x, In(0));
    KILN_ASSIGN_OR_RETURN(HloInstruction * scale, In(1));
    KILN_ASSIGN_OR_RETURN(HloInstruction * offset, In(2));
    KILN_ASSIGN_OR_RETURN(HloInstruction * mean, In(3));
    KILN_ASSIGN_OR_RETURN(HloInstruction * var, In(4));
    KILN_ASSIGN_OR_RETURN(HloInstruction * xm, Centered(x, mean));
    KILN_ASSIGN_OR_RETURN(HloInstruction * rstd, Rstd(var));
    KILN_ASSIGN_OR_RETURN(HloInstruction * y, Normalize(xm, scale, rstd, offset));
    if (bn_->shape().IsTuple()) return Results({y});
    return Out(y, bn_->shape());
  }

  StatusOr<HloInstruction*> Grad() {
    KILN_ASSIGN_OR_RETURN(HloInstruction * x, In(0));
    KILN_ASSIGN_OR_RETURN(HloInstruction * scale, In(1));
    KILN_ASSIGN_OR_RETURN(HloInstruction * mean, In(2));
    KILN_ASSIGN_OR_RETURN(HloInstruction * var, In(3));
    KILN_ASSIGN_OR_RETURN(HloInstruction * dy, In(4));
    KILN_ASSIGN_OR_RETURN(HloInstruction * xm, Centered(x, mean));
    HloInstruction* doffset = Sum(dy);
    KILN_ASSIGN_OR_RETURN(HloInstruction * dyxm, Bin(HloOpcode::kMultiply, dy, xm));
    HloInstruction* s = Sum(dyxm);
    KILN_ASSIGN_OR_RETURN(HloInstruction * rstd, Rstd(var));
    KILN_ASSIGN_OR_RETURN(HloInstruction * dscale, Bin(HloOpcode::kMultiply, s, rstd));
    // dx = (scale * rstd) * (dy - doffset / N - xm * (s / (N * (var + eps)))).
    KILN_ASSIGN_OR_RETURN(HloInstruction * mean_dy, OverCount(doffset));
    KILN_ASSIGN_OR_RETURN(HloInstruction * eps, Scalar(bn_->attrs().epsilon, vec_));
    KILN_ASSIGN_OR_RETURN(HloInstruction * ve, Bin(HloOpcode::kAdd, var, eps));
    KILN_ASSIGN_OR_RETURN(HloInstruction * n, Scalar(static_cast<double>(count_), vec_));
    KILN_ASSIGN_OR_RETURN(HloInstruction * nve, Bin(HloOpcode::kMultiply, n, ve));
    KILN_ASSIGN_OR_RETURN(HloInstruction * k, Bin(HloOpcode::kDivide, s, nve));
    KILN_ASSIGN_OR_RETURN(HloInstruction * factor, Bin(HloOpcode::kMultiply, scale, rstd));
    KILN_ASSIGN_OR_RETURN(HloInstruction * mean_dy_b, Spread(mean_dy));
    KILN_ASSIGN_OR_RETURN(HloInstruction * k_b, Spread(k));
    KILN_ASSIGN_OR_RETURN(HloInstruction * factor_b, Spread(factor));
    KILN_ASSIGN_OR_RETURN(HloInstruction * t0, Bin(HloOpcode::kSubtract, dy, mean_dy_b));
    KILN_ASSIGN_OR_RETURN(HloInstruction * t1, Bin(HloOpcode::kMultiply, xm, k_b));
    KILN_ASSIGN_OR_RETURN(HloInstruction * t2, Bin(HloOpcode::kSubtract, t0, t1));
    KILN_ASSIGN_OR_RETURN(HloInstruction * dx, Bin(HloOpcode::kMultiply, factor_b, t2));
    return Results({dx, dscale, doffset});
  }

  // The tuple of `values` rounded to the result's element types and layouts.
  StatusOr<HloInstruction*> Results(std::vector<HloInstruction*> values) {
    const Shape& rs = bn_->shape();
    if (!rs.IsTuple() || rs.tuple_shapes_size() != static_cast<int64_t>(values.size()))
      return InvalidArgument(bn_->name(), ": unexpected result shape ", rs.ToString(false));
    std::vector<HloInstruction*> out;
    for (size_t i = 0; i < values.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * v, Out(values[i], rs.tuple_shapes(static_cast<int64_t>(i))));
      out.push_back(v);
    }
    return e_.Tuple(out, bn_);
  }

  HloModule& module_;
  HloEditor& e_;
  HloInstruction* bn_;
  std::map<PrimitiveType, HloComputation*>& adds_;
  PrimitiveType type_ = PrimitiveType::kF32, compute_ = PrimitiveType::kF32;
  int64_t fi_ = 0, features_ = 0, count_ = 0;
  std::vector<int64_t> dims_, reduce_dims_;
  Shape full_, vec_;
  HloComputation* add_ = nullptr;
};

}  // namespace

StatusOr<bool> BatchNormExpander::Run(HloModule& module) {
  bool changed = false;
  std::map<PrimitiveType, HloComputation*> adds;
  std::vector<HloComputation*> computations;
  for (HloComputation* c : module.computations()) computations.push_back(c);
  for (HloComputation* c : computations) {
    std::vector<HloInstruction*> found;
    for (HloInstruction* i : c->instructions())
      if (IsBatchNorm(i->opcode())) found.push_back(i);
    if (found.empty()) continue;
    HloEditor e(c);
    for (HloInstruction* bn : found) {
      StatusOr<HloInstruction*> r = Expansion(module, e, bn, adds).Build();
      // Forms the expansion does not cover (other element types) stay for the evaluator.
      if (!r.ok() && r.status().code() == StatusCode::kUnimplemented) continue;
      KILN_RETURN_IF_ERROR(r.status());
      MoveControlDependencies(bn, *r);
      KILN_RETURN_IF_ERROR(ReplaceInstruction(bn, *r));
      changed = true;
    }
    if (changed) KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
  }
  return changed;
}

}  // namespace kiln
