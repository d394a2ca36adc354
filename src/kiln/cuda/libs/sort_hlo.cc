// SortDescFromHlo: HLO sort / topk / TopK custom call -> SortDesc (sort.h), and the comparator
// analysis behind it.
#include <cmath>
#include <optional>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/sort.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cuda::libs {

namespace {

// The dimension that is minor-most in memory (the last one without a layout).
int64_t MinorDimension(const Shape& shape) {
  if (shape.has_layout() && !shape.layout().minor_to_major().empty()) {
    return shape.layout().minor_to_major()[0];
  }
  return shape.rank() - 1;
}

bool SameLayout(const Shape& a, const Shape& b) {
  auto m2m = [](const Shape& s) {
    if (s.has_layout() && !s.layout().minor_to_major().empty()) return s.layout().minor_to_major();
    std::vector<int64_t> d;
    for (int64_t i = s.rank() - 1; i >= 0; --i) d.push_back(i);
    return d;
  };
  return m2m(a) == m2m(b);
}

bool IsScalarConstant(const HloInstruction* i) {
  return i->opcode() == HloOpcode::kConstant && i->has_literal() &&
         i->literal().element_count() == 1;
}
bool IsNanConstant(const HloInstruction* i) {
  return IsScalarConstant(i) && std::isnan(i->literal().GetAsDouble(0));
}
bool IsZeroConstant(const HloInstruction* i) {
  return IsScalarConstant(i) && i->literal().GetAsDouble(0) == 0.0;
}
bool IsCompare(const HloInstruction* i, ComparisonDirection d) {
  return i->opcode() == HloOpcode::kCompare && i->attrs().comparison_direction == d;
}

// One side of the comparator's root compare: a parameter, possibly canonicalized the way JAX's
// float comparator does it:
//   select(compare(x, x), direction=NE, NaN, select(compare(x, 0), direction=EQ, 0, x))
// (either nesting order). Returns the parameter number and whether both rewrites were seen.
struct ComparedOperand {
  int64_t parameter = -1;
  bool canonical = false;
};
std::optional<ComparedOperand> PeelComparedOperand(const HloInstruction* i) {
  bool nan = false, zero = false;
  std::vector<const HloInstruction*> subjects;  // the x of each rewrite
  while (i->opcode() == HloOpcode::kSelect && i->operand_count() == 3) {
    const HloInstruction* pred = i->operand(0);
    const HloInstruction* on_true = i->operand(1);
    if (pred->operand_count() != 2) return std::nullopt;
    if (!nan && IsCompare(pred, ComparisonDirection::kNe) && pred->operand(0) == pred->operand(1) &&
        IsNanConstant(on_true)) {
      nan = true;
      subjects.push_back(pred->operand(0));
    } else if (!zero && IsCompare(pred, ComparisonDirection::kEq) &&
               IsZeroConstant(pred->operand(1)) && IsZeroConstant(on_true)) {
      zero = true;
      subjects.push_back(pred->operand(0));
    } else {
      return std::nullopt;
    }
    i = i->operand(2);
  }
  if (i->opcode() != HloOpcode::kParameter) return std::nullopt;
  for (const HloInstruction* s : subjects) {
    if (s != i) return std::nullopt;
  }
  if (nan != zero) return std::nullopt;  // half a canonicalization: not a form the kernels have
  return ComparedOperand{i->parameter_number(), nan};
}

}  // namespace

StatusOr<SortComparator> AnalyzeSortComparator(const HloComputation& comparator,
                                               PrimitiveType key_type_hint) {
  const HloInstruction* root = comparator.root_instruction();
  if (root == nullptr || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2) {
    return Unimplemented("sort comparator %", comparator.name(),
                         " is not a single compare (multi-key or custom comparators need a "
                         "composite key or a generated kernel)");
  }
  const ComparisonDirection dir = root->attrs().comparison_direction;
  if (dir != ComparisonDirection::kLt && dir != ComparisonDirection::kGt) {
    return Unimplemented("sort comparator %", comparator.name(),
                         ": only LT and GT compares define a strict order");
  }
  std::optional<ComparedOperand> a = PeelComparedOperand(root->operand(0));
  std::optional<ComparedOperand> b = PeelComparedOperand(root->operand(1));
  if (!a || !b) {
    return Unimplemented("sort comparator %", comparator.name(),
                         ": compare operands are not (canonicalized) parameters");
  }
  if (a->canonical != b->canonical || a->parameter / 2 != b->parameter / 2 ||
      a->parameter == b->parameter) {
    return Unimplemented("sort comparator %", comparator.name(),
                         ": compares parameters ", a->parameter, " and ", b->parameter,
                         " (expected the lhs/rhs pair of one operand)");
  }
  SortComparator out;
  out.key_operand = a->parameter / 2;
  const bool lhs_first = a->parameter % 2 == 0;  // compare(lhs, rhs)
  const bool less = dir == ComparisonDirection::kLt;
  out.order = lhs_first == less ? SortOrder::kAscending : SortOrder::kDescending;
  const PrimitiveType key_type =
      comparator.num_parameters() > 2 * out.key_operand
          ? comparator.parameter_instruction(2 * out.key_operand)->shape().element_type()
          : key_type_hint;
  const ComparisonType ct = root->attrs().comparison_type;
  if (IsFloatingPointType(key_type)) {
    // A plain float compare ties -0 and +0 and leaves NaNs unordered; canonicalizing gives a
    // total order that agrees with it wherever it is an order.
    out.canonicalize_floats = a->canonical || ct != ComparisonType::kTotalOrder;
  } else if ((ct == ComparisonType::kUnsigned && IsSignedIntegralType(key_type)) ||
             (ct == ComparisonType::kSigned && IsUnsignedIntegralType(key_type))) {
    return Unimplemented("sort comparator %", comparator.name(),
                         ": compares ", PrimitiveTypeName(key_type), " keys with another signedness");
  }
  return out;
}

namespace {

Status CheckRowMajorRows(const HloInstruction& instr, const Shape& shape, int64_t dim) {
  if (shape.rank() < 1) return InvalidArgument("%", instr.name(), ": a scalar operand");
  if (MinorDimension(shape) != dim) {
    return Unimplemented("%", instr.name(), ": dimension ", dim,
                         " is not minor in memory (layout ", shape.ToString(),
                         "); transpose it to the minor position first");
  }
  return OkStatus();
}

void SetRows(SortDesc& d, const Shape& shape, int64_t dim) {
  d.row_length = shape.dimensions(dim);
  d.rows = 1;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (i != dim) d.rows *= shape.dimensions(i);
  }
}

bool IsIndexIota(const HloInstruction* op, int64_t dim) {
  const PrimitiveType t = op->shape().element_type();
  return op->opcode() == HloOpcode::kIota && op->attrs().iota_dimension == dim &&
         (t == PrimitiveType::kS32 || t == PrimitiveType::kU32 || t == PrimitiveType::kS64);
}

StatusOr<SortFromHlo> FromSort(const HloInstruction& sort) {
  if (sort.attrs().dimensions.size() != 1) {
    return InvalidArgument("sort %", sort.name(), " needs one dimension");
  }
  const int64_t dim = sort.attrs().dimensions[0];
  if (sort.operand_count() < 1 || sort.to_apply() == nullptr) {
    return InvalidArgument("sort %", sort.name(), " needs operands and a comparator");
  }
  const Shape& s0 = sort.operand(0)->shape();
  KILN_RETURN_IF_ERROR(CheckRowMajorRows(sort, s0, dim));
  for (const HloInstruction* op : sort.operands()) {
    if (!SameLayout(op->shape(), s0)) {
      return Unimplemented("sort %", sort.name(), ": operands with different layouts");
    }
  }
  KILN_ASSIGN_OR_RETURN(SortComparator cmp,
                        AnalyzeSortComparator(*sort.to_apply(), s0.element_type()));
  if (cmp.key_operand >= sort.operand_count()) {
    return InvalidArgument("sort %", sort.name(), ": comparator compares operand ",
                           cmp.key_operand, " of ", sort.operand_count());
  }
  SortFromHlo out;
  SortDesc& d = out.desc;
  d.key_type = sort.operand(cmp.key_operand)->shape().element_type();
  d.order = cmp.order;
  d.canonicalize_floats = cmp.canonicalize_floats;
  SetRows(d, s0, dim);
  out.key_operand = cmp.key_operand;
  out.key_output = cmp.key_operand;
  for (int64_t j = 0; j < sort.operand_count(); ++j) {
    if (j == cmp.key_operand) continue;
    const HloInstruction* op = sort.operand(j);
    if (out.index_output < 0 && IsIndexIota(op, dim)) {
      // An iota along the sorted dimension sorts into the permutation: write it directly.
      d.index_type = op->shape().element_type();
      out.index_output = j;
      continue;
    }
    d.value_types.push_back(op->shape().element_type());
    out.value_operands.push_back(j);
    out.value_outputs.push_back(j);
  }
  KILN_RETURN_IF_ERROR(ValidateSortDesc(d).WithContext(StrCat("sort %", sort.name())));
  return out;
}

StatusOr<SortFromHlo> FromTopK(const HloInstruction& instr, int64_t k, bool largest,
                               const HloComputation* comparator) {
  if (instr.operand_count() != 1) {
    return InvalidArgument("%", instr.name(), ": top-k takes one operand");
  }
  const Shape& x = instr.operand(0)->shape();
  const int64_t dim = x.rank() - 1;
  KILN_RETURN_IF_ERROR(CheckRowMajorRows(instr, x, dim));
  SortFromHlo out;
  SortDesc& d = out.desc;
  d.key_type = x.element_type();
  d.order = largest ? SortOrder::kDescending : SortOrder::kAscending;
  if (comparator != nullptr) {
    KILN_ASSIGN_OR_RETURN(SortComparator cmp, AnalyzeSortComparator(*comparator, d.key_type));
    if (cmp.key_operand != 0) {
      return Unimplemented("%", instr.name(), ": TopK comparator orders by its indices");
    }
    d.order = cmp.order;
    d.canonicalize_floats = cmp.canonicalize_floats;
  }
  SetRows(d, x, dim);
  if (k < 0 || k > d.row_length) {
    return InvalidArgument("%", instr.name(), ": k=", k, " exceeds the row length ",
                           d.row_length);
  }
  d.k = k;
  const Shape& result = instr.shape();
  if (!result.IsTuple() || result.tuple_shapes_size() != 2) {
    return InvalidArgument("%", instr.name(), ": top-k results are (values, indices)");
  }
  d.index_type = result.tuple_shapes(1).element_type();
  out.key_operand = 0;
  out.key_output = 0;
  out.index_output = 1;
  KILN_RETURN_IF_ERROR(ValidateSortDesc(d).WithContext(StrCat("%", instr.name())));
  return out;
}

}  // namespace

StatusOr<SortFromHlo> SortDescFromHlo(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kSort:
      return FromSort(instr);
    case HloOpcode::kTopK:
      return FromTopK(instr, instr.attrs().k, instr.attrs().largest, nullptr);
    case HloOpcode::kCustomCall:
      if (instr.attrs().custom_call_target == "TopK") {
        const Shape& result = instr.shape();
        if (!result.IsTuple() || result.tuple_shapes_size() != 2 ||
            !result.tuple_shapes(0).IsArray() || result.tuple_shapes(0).rank() < 1) {
          return InvalidArgument("TopK custom call %", instr.name(),
                                 ": result must be (values, indices)");
        }
        return FromTopK(instr, result.tuple_shapes(0).dimensions().back(), /*largest=*/true,
                        instr.to_apply());
      }
      break;
    default:
      break;
  }
  return InvalidArgument("%", instr.name(), " is not a sort, topk or TopK custom call");
}

}  // namespace kiln::cuda::libs
