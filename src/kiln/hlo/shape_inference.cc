// InferShape: the per-opcode dispatcher over the family functions.
#include "kiln/hlo/shape_inference.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/base/saturating.h"
#include "kiln/base/strings.h"

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

std::vector<const Shape*> OperandShapes(const HloInstruction& instr, int64_t begin = 0,
                                        int64_t end = -1) {
  if (end < 0) end = instr.operand_count();
  std::vector<const Shape*> out;
  for (int64_t i = begin; i < end && i < instr.operand_count(); ++i)
    out.push_back(&instr.operand(i)->shape());
  return out;
}

Status ExpectOperandCount(const HloInstruction& instr, int64_t n) {
  if (instr.operand_count() != n)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " takes ", n, " operand",
                           n == 1 ? "" : "s", ", found ", instr.operand_count());
  return OkStatus();
}

Status ExpectMinOperandCount(const HloInstruction& instr, int64_t n) {
  if (instr.operand_count() < n)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " takes at least ", n, " operand",
                           n == 1 ? "" : "s", ", found ", instr.operand_count());
  return OkStatus();
}

// The i-th called computation, as a program shape.
StatusOr<ProgramShape> Called(const HloInstruction& instr, size_t i, std::string_view role) {
  if (instr.called_computations().size() <= i || instr.called_computations()[i] == nullptr)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " needs a ", role, " computation");
  const HloComputation* c = instr.called_computations()[i];
  if (c->root_instruction() == nullptr)
    return InvalidArgument(role, " computation ", c->name(), " has no root");
  for (const HloInstruction* p : c->parameter_instructions())
    if (p == nullptr)
      return InvalidArgument(role, " computation ", c->name(), " has a gap in its parameter numbers");
  return c->ComputeProgramShape();
}

StatusOr<const Shape*> TupleElement(const Shape& s, int64_t i, std::string_view what) {
  if (!s.IsTuple() || s.tuple_shapes_size() <= i)
    return InvalidArgument(what, " must be a tuple with at least ", i + 1, " elements, found ",
                           Str(s));
  return &s.tuple_shapes(i);
}

// The first array of a shape that is an array or a tuple of arrays (collective results).
const Shape* FirstArray(const Shape& s) {
  if (s.IsArray()) return &s;
  if (s.IsTuple() && s.tuple_shapes_size() > 0 && s.tuple_shapes(0).IsArray())
    return &s.tuple_shapes(0);
  return nullptr;
}

// Shard count of all-gather / reduce-scatter: the group size where it is known; otherwise (as
// XLA does when replica_count and num_partitions are 1) the ratio of the declared result to the
// operand along the collective dimension.
StatusOr<int64_t> ShardCount(const HloInstruction& instr, const Shape& declared_result,
                             bool gather) {
  const int64_t group = CollectiveGroupSize(instr);
  if (group > 1) return group;
  if (instr.attrs().dimensions.size() != 1 || instr.operand_count() < 1)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " needs dimensions={d}");
  const int64_t d = instr.attrs().dimensions[0];
  const Shape* in = FirstArray(instr.operand(0)->shape());
  const Shape* out = FirstArray(declared_result);
  if (!in || !out || d < 0 || d >= in->rank() || d >= out->rank()) return group > 0 ? group : 1;
  const int64_t big = gather ? out->dimensions(d) : in->dimensions(d);
  const int64_t small = gather ? in->dimensions(d) : out->dimensions(d);
  if (small == 0) return int64_t{1};
  if (big % small != 0)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " dimension ", d, ": ",
                           Str(gather ? *out : *in), " is not a multiple of ",
                           Str(gather ? *in : *out));
  return big / small;
}

// The async computation of an async-start/update/done (calls=, or found through the operand
// chain back to the async-start).
const HloComputation* AsyncWrapped(const HloInstruction& instr) {
  const HloInstruction* h = &instr;
  for (int guard = 0; h && guard < 1000; ++guard) {
    if (!h->called_computations().empty()) return h->called_computations()[0];
    if (h->operand_count() < 1) return nullptr;
    h = h->operand(0);
    if (!IsAsyncOpcode(h->opcode())) return nullptr;
  }
  return nullptr;
}

// Checks that an async tuple ((params...), result, context...) matches the wrapped computation.
Status CheckAsyncTuple(const HloInstruction& instr, const Shape& async_shape) {
  if (!async_shape.IsTuple() || async_shape.tuple_shapes_size() < 2)
    return InvalidArgument(HloOpcodeString(instr.opcode()),
                           " needs an async tuple ((operands), result, context...), found ",
                           Str(async_shape));
  const HloComputation* wrapped = AsyncWrapped(instr);
  if (!wrapped || !wrapped->root_instruction())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " has no async computation");
  ProgramShape ps = wrapped->ComputeProgramShape();
  std::vector<const Shape*> params;
  for (const Shape& p : ps.parameters) params.push_back(&p);
  KILN_ASSIGN_OR_RETURN(Shape param_tuple, InferTupleShape(params));
  if (!SameShape(async_shape.tuple_shapes(0), param_tuple))
    return InvalidArgument(HloOpcodeString(instr.opcode()), " async operands ",
                           Str(async_shape.tuple_shapes(0)), " do not match the parameters of ",
                           wrapped->name(), " ", Str(param_tuple));
  if (!SameShape(async_shape.tuple_shapes(1), ps.result))
    return InvalidArgument(HloOpcodeString(instr.opcode()), " async result ",
                           Str(async_shape.tuple_shapes(1)), " does not match the root of ",
                           wrapped->name(), " ", Str(ps.result));
  return OkStatus();
}

StatusOr<Shape> InferAsyncStart(const HloInstruction& instr) {
  const HloComputation* wrapped = AsyncWrapped(instr);
  if (!wrapped || !wrapped->root_instruction())
    return InvalidArgument("async-start needs a wrapped computation (calls=)");
  KILN_ASSIGN_OR_RETURN(ProgramShape ps, Called(instr, 0, "async"));
  KILN_ASSIGN_OR_RETURN(Shape root, InferCallShape(OperandShapes(instr), ps));
  std::vector<Shape> elements;
  KILN_ASSIGN_OR_RETURN(Shape args, InferTupleShape(OperandShapes(instr)));
  elements.push_back(std::move(args));
  elements.push_back(std::move(root));
  // Context elements (scratch, sync flags) are declared, not inferred.
  const Shape& declared = instr.shape();
  if (declared.IsTuple())
    for (int64_t i = 2; i < declared.tuple_shapes_size(); ++i)
      elements.push_back(NoLayout(declared.tuple_shapes(i)));
  return Shape::Tuple(std::move(elements));
}

// Collective-permute-start: (input, output, context...), context declared.
StatusOr<Shape> InferCollectivePermuteStart(const HloInstruction& instr) {
  std::vector<const Shape*> ops = OperandShapes(instr);
  if (ops.size() != 1 && ops.size() != 4)
    return InvalidArgument("collective-permute-start takes 1 or 4 operands, has ", ops.size());
  std::vector<Shape> elements;
  elements.push_back(NoLayout(*ops[0]));
  elements.push_back(NoLayout(ops.size() == 1 ? *ops[0] : *ops[1]));
  const Shape& declared = instr.shape();
  if (declared.IsTuple())
    for (int64_t i = 2; i < declared.tuple_shapes_size(); ++i)
      elements.push_back(NoLayout(declared.tuple_shapes(i)));
  return Shape::Tuple(std::move(elements));
}

Status CheckToken(const HloInstruction& instr, int64_t i) {
  if (instr.operand_count() <= i || !instr.operand(i)->shape().IsToken())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " operand ", i, " must be a token",
                           instr.operand_count() > i
                               ? StrCat(", found ", Str(instr.operand(i)->shape()))
                               : std::string());
  return OkStatus();
}

// The dynamic-shape custom calls (Note [Dynamic sizes] in eval/dynamic_shapes.h):
//   SliceToDynamic(T[d0..] x, int s0, ..., int s{r-1}) -> T[<=d0..]  (same bounds)
//   PadToStatic(T[<=d0..] x) -> (T[d0..], s32[] x r)
//   SetBound(x) -> x's shape
// XLA's verifier takes any operands here and its code generators then fail (an f8 array as a
// size aborts LLVM); kiln checks them.
Status CheckDynamicShapeCustomCall(const HloInstruction& instr) {
  const std::string& t = instr.attrs().custom_call_target;
  const Shape& declared = instr.shape();
  auto same_bounds = [](const Shape& a, const Shape& b) {
    return a.IsArray() && b.IsArray() && a.element_type() == b.element_type() && a.dimensions() == b.dimensions();
  };
  if (t == "SliceToDynamic") {
    if (!declared.IsArray() || instr.operand_count() != declared.rank() + 1)
      return InvalidArgument("SliceToDynamic takes an array and one integer size per result dimension (",
                             declared.IsArray() ? declared.rank() + 1 : 0, " operands for ", Str(declared),
                             "), has ", instr.operand_count());
    if (!same_bounds(instr.operand(0)->shape(), declared))
      return InvalidArgument("SliceToDynamic's result ", Str(declared), " must have operand 0's type and bounds (",
                             Str(instr.operand(0)->shape()), ")");
    for (int64_t i = 1; i < instr.operand_count(); ++i) {
      const Shape& s = instr.operand(i)->shape();
      if (!s.IsScalar() || !IsIntegralType(s.element_type()))
        return InvalidArgument("SliceToDynamic's size operand ", i, " must be an integer scalar, found ", Str(s));
    }
  } else if (t == "PadToStatic") {
    const Shape& in = instr.operand_count() == 1 ? instr.operand(0)->shape() : declared;
    if (instr.operand_count() != 1 || !in.IsArray())
      return InvalidArgument("PadToStatic takes one array operand");
    if (!declared.IsTuple() || declared.tuple_shapes_size() != in.rank() + 1 ||
        !same_bounds(declared.tuple_shapes(0), in) || declared.tuple_shapes(0).is_dynamic())
      return InvalidArgument("PadToStatic of ", Str(in), " returns (the static array, one s32 size per dimension), not ",
                             Str(declared));
    for (int64_t i = 1; i < declared.tuple_shapes_size(); ++i)
      if (!declared.tuple_shapes(i).IsScalar() || declared.tuple_shapes(i).element_type() != PrimitiveType::kS32)
        return InvalidArgument("PadToStatic's size ", i - 1, " must be s32[], found ", Str(declared.tuple_shapes(i)));
  } else if (t == "SetBound") {
    if (instr.operand_count() != 1 || !Shape::Compatible(NoLayout(instr.operand(0)->shape()), NoLayout(declared)))
      return InvalidArgument("SetBound takes one operand and returns its shape");
  }
  return OkStatus();
}

StatusOr<Shape> InferCustomCall(const HloInstruction& instr) {
  const HloAttributes& a = instr.attrs();
  KILN_RETURN_IF_ERROR(CheckDynamicShapeCustomCall(instr));
  if (a.operand_layout_constraints) {
    const auto& c = *a.operand_layout_constraints;
    if (static_cast<int64_t>(c.size()) != instr.operand_count())
      return InvalidArgument("custom-call operand_layout_constraints has ", c.size(),
                             " shapes for ", instr.operand_count(), " operands");
    for (size_t i = 0; i < c.size(); ++i)
      if (!SameShape(c[i], instr.operand(i)->shape()))
        return InvalidArgument("custom-call operand_layout_constraints[", i, "] ", Str(c[i]),
                               " does not match operand ", i, " ", Str(instr.operand(i)->shape()));
  }
  return NoLayout(instr.shape());
}

StatusOr<Shape> InferShapeImpl(const HloInstruction& instr) {
  const HloAttributes& a = instr.attrs();
  const Shape& declared = instr.shape();
  const HloOpcode op = instr.opcode();
  auto operand = [&](int64_t i) -> const Shape& { return instr.operand(i)->shape(); };
  if (auto arity = HloOpcodeArity(op); arity && op != HloOpcode::kDot)
    KILN_RETURN_IF_ERROR(ExpectOperandCount(instr, *arity));

  if (IsElementwiseUnary(op) && op != HloOpcode::kConvert && op != HloOpcode::kBitcastConvert &&
      op != HloOpcode::kReducePrecision)
    return InferUnaryOpShape(op, operand(0));
  if (IsElementwiseBinary(op) && op != HloOpcode::kStochasticConvert)
    return InferBinaryOpShape(op, operand(0), operand(1));

  switch (op) {
    case HloOpcode::kParameter:
      return NoLayout(declared);
    case HloOpcode::kConstant:
      if (instr.has_literal()) return NoLayout(instr.literal().shape());
      return NoLayout(declared);
    case HloOpcode::kIota:
      return InferIotaShape(declared, a.iota_dimension);
    case HloOpcode::kConvert:
      return InferConvertShape(operand(0), declared.element_type());
    case HloOpcode::kBitcastConvert:
      return InferBitcastConvertShape(operand(0), declared.element_type());
    case HloOpcode::kStochasticConvert:
      return InferStochasticConvertShape(operand(0), operand(1), declared.element_type());
    case HloOpcode::kReducePrecision:
      return InferReducePrecisionShape(operand(0), a.exponent_bits, a.mantissa_bits);
    case HloOpcode::kSelect:
      return InferSelectShape(operand(0), operand(1), operand(2));
    case HloOpcode::kClamp:
      return InferClampShape(operand(0), operand(1), operand(2));
    case HloOpcode::kMap: {
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "map"));
      if (!a.dimensions.empty()) {
        std::vector<int64_t> all(operand(0).IsArray() ? operand(0).rank() : 0);
        for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
        if (a.dimensions != all)
          return InvalidArgument("map dimensions=", DimsStr(a.dimensions),
                                 " must list every operand dimension in order");
      }
      return InferMapShape(OperandShapes(instr), f);
    }

    case HloOpcode::kBroadcast:
      KILN_RETURN_IF_ERROR(ExpectArray(declared, "the result of broadcast"));
      return InferBroadcastShape(operand(0), declared.dimensions(), a.dimensions);
    case HloOpcode::kReshape:
      KILN_RETURN_IF_ERROR(ExpectArray(declared, "the result of reshape"));
      return InferReshapeShape(operand(0), declared.dimensions());
    case HloOpcode::kDynamicReshape:
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      return InferDynamicReshapeShape(operand(0), OperandShapes(instr, 1), declared);
    case HloOpcode::kTranspose:
      return InferTransposeShape(operand(0), a.dimensions);
    case HloOpcode::kSlice:
      return InferSliceShape(operand(0), a.slice);
    case HloOpcode::kDynamicSlice:
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      return InferDynamicSliceShape(operand(0), OperandShapes(instr, 1), a.dynamic_slice_sizes);
    case HloOpcode::kDynamicUpdateSlice:
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 2));
      return InferDynamicUpdateSliceShape(operand(0), operand(1), OperandShapes(instr, 2));
    case HloOpcode::kConcatenate:
      if (a.dimensions.size() != 1)
        return InvalidArgument("concatenate needs dimensions={d}, found ", DimsStr(a.dimensions));
      return InferConcatenateShape(OperandShapes(instr), a.dimensions[0]);
    case HloOpcode::kPad:
      return InferPadShape(operand(0), operand(1), a.padding);
    case HloOpcode::kReverse:
      return InferReverseShape(operand(0), a.dimensions);
    case HloOpcode::kTuple:
      return InferTupleShape(OperandShapes(instr));
    case HloOpcode::kGetTupleElement:
      return InferGetTupleElementShape(operand(0), a.tuple_index);
    case HloOpcode::kGetDimensionSize:
      if (a.dimensions.size() != 1)
        return InvalidArgument("get-dimension-size needs dimensions={d}");
      return InferGetDimensionSizeShape(operand(0), a.dimensions[0]);
    case HloOpcode::kSetDimensionSize:
      if (a.dimensions.size() != 1)
        return InvalidArgument("set-dimension-size needs dimensions={d}");
      return InferSetDimensionSizeShape(operand(0), operand(1), a.dimensions[0]);
    case HloOpcode::kBitcast:
      return InferBitcastShape(operand(0), declared);

    case HloOpcode::kDot: {
      const int64_t expected = 2 + static_cast<int64_t>(a.sparsity.size());
      KILN_RETURN_IF_ERROR(ExpectOperandCount(instr, expected));
      if (!a.dot_dimension_numbers) return InvalidArgument("dot needs dot dimension numbers");
      if (a.sparsity.empty())
        return InferDotShape(operand(0), operand(1), *a.dot_dimension_numbers,
                             declared.element_type());
      return InferSparseDotShape(operand(0), operand(1), *a.dot_dimension_numbers,
                                 declared.element_type(), a.sparsity);
    }
    case HloOpcode::kRaggedDot:
      return InferRaggedDotShape(operand(0), operand(1), operand(2),
                                 a.dot_dimension_numbers.value_or(DotDimensionNumbers{}),
                                 a.ragged_dot_dimension_numbers.value_or(RaggedDotDimensionNumbers{}),
                                 declared.element_type());
    case HloOpcode::kScaledDot:
      return InferScaledDotShape(operand(0), operand(1), operand(2), operand(3),
                                 a.dot_dimension_numbers.value_or(DotDimensionNumbers{}),
                                 declared.element_type());
    case HloOpcode::kConvolution:
      KILN_RETURN_IF_ERROR(ExpectOperandCount(instr, 2));
      if (!a.convolution_dimension_numbers)
        return InvalidArgument("convolution needs dim_labels");
      return InferConvolutionShape(operand(0), operand(1), a.feature_group_count,
                                   a.batch_group_count, a.window.value_or(Window{}),
                                   *a.convolution_dimension_numbers, declared.element_type());
    case HloOpcode::kFft:
      return InferFftShape(operand(0), a.fft_type, a.fft_length);
    case HloOpcode::kCholesky:
      return InferCholeskyShape(operand(0));
    case HloOpcode::kTriangularSolve:
      return InferTriangularSolveShape(operand(0), operand(1), a.triangular_solve_options);
    case HloOpcode::kBatchNormTraining:
      return InferBatchNormTrainingShape(operand(0), operand(1), operand(2), a.feature_index);
    case HloOpcode::kBatchNormInference:
      return InferBatchNormInferenceShape(operand(0), operand(1), operand(2), operand(3),
                                          operand(4), a.feature_index);
    case HloOpcode::kBatchNormGrad:
      return InferBatchNormGradShape(operand(0), operand(1), operand(2), operand(3), operand(4),
                                     a.feature_index);

    case HloOpcode::kGather:
      if (!a.gather_dimension_numbers) return InvalidArgument("gather needs dimension numbers");
      return InferGatherShape(operand(0), operand(1), *a.gather_dimension_numbers,
                              a.gather_slice_sizes);
    case HloOpcode::kScatter: {
      if (instr.operand_count() < 3 || instr.operand_count() % 2 != 1)
        return InvalidArgument("scatter takes N operands, the indices and N updates; found ",
                               instr.operand_count(), " operands");
      if (!a.scatter_dimension_numbers) return InvalidArgument("scatter needs dimension numbers");
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "scatter update"));
      const int64_t n = instr.operand_count() / 2;
      return InferScatterShape(OperandShapes(instr, 0, n), operand(n),
                               OperandShapes(instr, n + 1), *a.scatter_dimension_numbers, f);
    }

    case HloOpcode::kReduce: {
      if (instr.operand_count() < 2 || instr.operand_count() % 2 != 0)
        return InvalidArgument("reduce takes N inputs and N init values; found ",
                               instr.operand_count(), " operands");
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "reducer"));
      const int64_t n = instr.operand_count() / 2;
      return InferReduceShape(OperandShapes(instr, 0, n), OperandShapes(instr, n), a.dimensions, f);
    }
    case HloOpcode::kReduceWindow: {
      if (instr.operand_count() < 2 || instr.operand_count() % 2 != 0)
        return InvalidArgument("reduce-window takes N inputs and N init values; found ",
                               instr.operand_count(), " operands");
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "reducer"));
      const int64_t n = instr.operand_count() / 2;
      return InferReduceWindowShape(OperandShapes(instr, 0, n), OperandShapes(instr, n),
                                    a.window.value_or(Window{}), f);
    }
    case HloOpcode::kSelectAndScatter: {
      KILN_ASSIGN_OR_RETURN(ProgramShape select, Called(instr, 0, "select"));
      KILN_ASSIGN_OR_RETURN(ProgramShape scatter, Called(instr, 1, "scatter"));
      return InferSelectAndScatterShape(operand(0), select, a.window.value_or(Window{}),
                                        operand(1), operand(2), scatter);
    }
    case HloOpcode::kSort: {
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "comparator"));
      if (a.dimensions.size() != 1) return InvalidArgument("sort needs dimensions={d}");
      return InferSortShape(OperandShapes(instr), a.dimensions[0], f);
    }
    case HloOpcode::kTopK:
      return InferTopKShape(operand(0), a.k);

    case HloOpcode::kWhile: {
      KILN_ASSIGN_OR_RETURN(ProgramShape cond, Called(instr, 0, "condition"));
      KILN_ASSIGN_OR_RETURN(ProgramShape body, Called(instr, 1, "body"));
      return InferWhileShape(cond, body, operand(0));
    }
    case HloOpcode::kConditional: {
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      std::vector<ProgramShape> branches;
      for (size_t i = 0; i < instr.called_computations().size(); ++i) {
        KILN_ASSIGN_OR_RETURN(ProgramShape b, Called(instr, i, "branch"));
        branches.push_back(std::move(b));
      }
      return InferConditionalShape(operand(0), branches, OperandShapes(instr, 1));
    }
    case HloOpcode::kCall: {
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "called"));
      return InferCallShape(OperandShapes(instr), f);
    }
    case HloOpcode::kFusion: {
      KILN_ASSIGN_OR_RETURN(ProgramShape f, Called(instr, 0, "fused"));
      return InferCallShape(OperandShapes(instr), f);
    }
    case HloOpcode::kCustomCall:
      return InferCustomCall(instr);

    case HloOpcode::kAsyncStart:
      return InferAsyncStart(instr);
    case HloOpcode::kAsyncUpdate:
      KILN_RETURN_IF_ERROR(CheckAsyncTuple(instr, operand(0)));
      return NoLayout(operand(0));
    case HloOpcode::kAsyncDone: {
      KILN_RETURN_IF_ERROR(CheckAsyncTuple(instr, operand(0)));
      return NoLayout(operand(0).tuple_shapes(1));
    }

    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectiveReduce:
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      return InferAllReduceShape(OperandShapes(instr));
    case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermuteDone: {
      if (op == HloOpcode::kAllReduceDone) return NoLayout(operand(0));
      KILN_ASSIGN_OR_RETURN(const Shape* e,
                            TupleElement(operand(0), 1, StrCat("the operand of ", HloOpcodeString(op))));
      return NoLayout(*e);
    }
    case HloOpcode::kAllGather: {
      if (a.dimensions.size() != 1) return InvalidArgument("all-gather needs dimensions={d}");
      KILN_ASSIGN_OR_RETURN(int64_t shards, ShardCount(instr, declared, true));
      return InferAllGatherShape(OperandShapes(instr), a.dimensions[0], shards);
    }
    case HloOpcode::kAllGatherStart: {
      if (a.dimensions.size() != 1) return InvalidArgument("all-gather-start needs dimensions={d}");
      KILN_ASSIGN_OR_RETURN(const Shape* out_decl, TupleElement(declared, 1, "all-gather-start result"));
      KILN_ASSIGN_OR_RETURN(int64_t shards, ShardCount(instr, *out_decl, true));
      KILN_ASSIGN_OR_RETURN(Shape out, InferAllGatherShape(OperandShapes(instr), a.dimensions[0], shards));
      Shape in = instr.operand_count() == 1 ? NoLayout(operand(0))
                                            : InferTupleShape(OperandShapes(instr)).value();
      return Shape::Tuple({std::move(in), std::move(out)});
    }
    case HloOpcode::kReduceScatter: {
      if (a.dimensions.size() != 1) return InvalidArgument("reduce-scatter needs dimensions={d}");
      KILN_ASSIGN_OR_RETURN(int64_t shards, ShardCount(instr, declared, false));
      return InferReduceScatterShape(OperandShapes(instr), a.dimensions[0], shards);
    }
    case HloOpcode::kAllToAll: {
      std::optional<int64_t> split;
      if (a.dimensions.size() == 1) split = a.dimensions[0];
      else if (!a.dimensions.empty())
        return InvalidArgument("all-to-all takes at most one dimension, found ", DimsStr(a.dimensions));
      return InferAllToAllShape(OperandShapes(instr), split, CollectiveGroupSize(instr));
    }
    case HloOpcode::kRaggedAllToAll: {
      for (int64_t i = 2; i < 6; ++i) {
        const Shape& s = operand(i);
        if (!s.IsArray() || !IsIntegralType(s.element_type()) || (s.rank() != 1 && s.rank() != 2))
          return InvalidArgument("ragged-all-to-all operand ", i,
                                 " (offsets/sizes) must be an integer array of rank 1 or 2, found ",
                                 Str(s));
        if (!SameShape(s, operand(2)))
          return InvalidArgument("ragged-all-to-all offsets/sizes operands differ: ",
                                 Str(operand(2)), " and ", Str(s));
      }
      KILN_RETURN_IF_ERROR(ExpectArray(operand(0), "ragged-all-to-all input"));
      KILN_RETURN_IF_ERROR(ExpectArray(operand(1), "ragged-all-to-all output"));
      if (operand(0).element_type() != operand(1).element_type() ||
          operand(0).rank() != operand(1).rank())
        return InvalidArgument("ragged-all-to-all input ", Str(operand(0)), " and output ",
                               Str(operand(1)), " must have one type and rank");
      return NoLayout(operand(1));
    }
    case HloOpcode::kCollectivePermute:
      return InferCollectivePermuteShape(OperandShapes(instr));
    case HloOpcode::kCollectivePermuteStart:
      return InferCollectivePermuteStart(instr);

    case HloOpcode::kCopyStart:
      return Shape::Tuple({NoLayout(operand(0)), NoLayout(operand(0)),
                           Shape::Scalar(PrimitiveType::kU32)});
    case HloOpcode::kCopyDone: {
      KILN_ASSIGN_OR_RETURN(const Shape* dst, TupleElement(operand(0), 1, "the operand of copy-done"));
      if (!SameShape(*dst, operand(0).tuple_shapes(0)))
        return InvalidArgument("copy-done source and destination differ: ", Str(operand(0)));
      return NoLayout(operand(0).tuple_shapes(0));
    }

    case HloOpcode::kSend:
      KILN_RETURN_IF_ERROR(CheckToken(instr, 1));
      return Shape::Tuple({NoLayout(operand(0)), Shape::Scalar(PrimitiveType::kU32), Shape::Token()});
    case HloOpcode::kSendDone:
      KILN_RETURN_IF_ERROR(TupleElement(operand(0), 2, "the operand of send-done").status());
      return Shape::Token();
    case HloOpcode::kRecv: {
      KILN_RETURN_IF_ERROR(CheckToken(instr, 0));
      KILN_ASSIGN_OR_RETURN(const Shape* data, TupleElement(declared, 0, "the result of recv"));
      return Shape::Tuple({NoLayout(*data), Shape::Scalar(PrimitiveType::kU32), Shape::Token()});
    }
    case HloOpcode::kRecvDone: {
      KILN_ASSIGN_OR_RETURN(const Shape* data, TupleElement(operand(0), 0, "the operand of recv-done"));
      return Shape::Tuple({NoLayout(*data), Shape::Token()});
    }
    case HloOpcode::kInfeed: {
      KILN_RETURN_IF_ERROR(CheckToken(instr, 0));
      KILN_ASSIGN_OR_RETURN(const Shape* data, TupleElement(declared, 0, "the result of infeed"));
      return Shape::Tuple({NoLayout(*data), Shape::Token()});
    }
    case HloOpcode::kOutfeed:
      KILN_RETURN_IF_ERROR(CheckToken(instr, 1));
      if (a.outfeed_shape && !SameShape(*a.outfeed_shape, operand(0)))
        return InvalidArgument("outfeed_shape ", Str(*a.outfeed_shape),
                               " does not match the outfed operand ", Str(operand(0)));
      return Shape::Token();
    case HloOpcode::kAfterAll:
      // Operands of any shape: XLA's tests join arrays as well as tokens (the add-dependency
      // style of ordering); the result is a token either way.
      return Shape::Token();
    case HloOpcode::kAddDependency:
      KILN_RETURN_IF_ERROR(CheckToken(instr, 1));
      return NoLayout(operand(0));
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
      return NoLayout(operand(0));

    case HloOpcode::kRng: {
      KILN_RETURN_IF_ERROR(ExpectOperandCount(instr, 2));
      const Shape &lo = operand(0), &hi = operand(1);
      if (!lo.IsScalar() || !hi.IsScalar() || lo.element_type() != hi.element_type())
        return InvalidArgument("rng takes two scalars of one type, found ", Str(lo), " and ",
                               Str(hi));
      const PrimitiveType t = lo.element_type();
      if (a.distribution == RandomDistribution::kNormal && !IsFloatingPointType(t))
        return InvalidArgument("rng_normal needs floating-point parameters, found ", Str(lo));
      if (!IsFloatingPointType(t) && !IsIntegralType(t) && t != PrimitiveType::kPred)
        return InvalidArgument("rng_uniform needs numeric parameters, found ", Str(lo));
      KILN_RETURN_IF_ERROR(ExpectArray(declared, "the result of rng"));
      return WithType(declared, t);
    }
    case HloOpcode::kRngBitGenerator: {
      KILN_RETURN_IF_ERROR(ExpectArray(operand(0), "the rng-bit-generator state"));
      KILN_ASSIGN_OR_RETURN(const Shape* bits, TupleElement(declared, 1, "the result of rng-bit-generator"));
      if (declared.tuple_shapes_size() != 2)
        return InvalidArgument("rng-bit-generator returns (state, bits), found ", Str(declared));
      KILN_RETURN_IF_ERROR(ExpectArray(*bits, "rng-bit-generator bits"));
      return Shape::Tuple({NoLayout(operand(0)), NoLayout(*bits)});
    }
    case HloOpcode::kRngGetAndUpdateState:
      return Shape::Array(PrimitiveType::kU64, {2});
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
      return Shape::Scalar(PrimitiveType::kU32);

    case HloOpcode::kScan: {
      // Newest XLA op; only the structural parts are checked: a scan computation, and the scan
      // dimension inside the first operand. The result is as declared.
      KILN_RETURN_IF_ERROR(Called(instr, 0, "scan").status());
      KILN_RETURN_IF_ERROR(ExpectMinOperandCount(instr, 1));
      const Shape* first = FirstArray(operand(0));
      if (first && (a.scan_dimension < 0 || a.scan_dimension >= std::max<int64_t>(first->rank(), 1)))
        return InvalidArgument("scan dimension ", a.scan_dimension, " is out of range for ",
                               Str(*first));
      return NoLayout(declared);
    }
    case HloOpcode::kShuffle:
      // Newest XLA op without published shape rules; the result is as declared.
      return NoLayout(declared);
    default:
      break;
  }
  return Unimplemented("no shape inference for ", HloOpcodeString(op));
}

}  // namespace

StatusOr<Shape> InferShape(const HloInstruction& instr) {
  for (const HloInstruction* o : instr.operands())
    if (o == nullptr) return InvalidArgument("an operand is missing");
  for (const HloInstruction* o : instr.operands())
    KILN_RETURN_IF_ERROR(ExpectBounded(o->shape(), "an operand"));
  KILN_RETURN_IF_ERROR(ExpectBounded(instr.shape(), "the result"));
  KILN_ASSIGN_OR_RETURN(Shape result, InferShapeImpl(instr));
  // A result computed from valid operands may still be too large (a dot of f32[2^40,1] and
  // f32[1,2^40], a concatenate of many large operands); sizes of it must not overflow.
  KILN_RETURN_IF_ERROR(CheckShapeSize(result));
  return result;
}

namespace {

// Equal dimensions (bounds), element types of one byte width, tuples of one arity: what a
// kernel that sizes its loops by the declared shape needs of the shape the operands give.
bool SameExtent(const Shape& declared, const Shape& inferred) {
  if (declared.IsTuple() || inferred.IsTuple()) {
    if (!declared.IsTuple() || !inferred.IsTuple() ||
        declared.tuple_shapes_size() != inferred.tuple_shapes_size())
      return false;
    for (int64_t i = 0; i < declared.tuple_shapes_size(); ++i)
      if (!SameExtent(declared.tuple_shapes(i), inferred.tuple_shapes(i))) return false;
    return true;
  }
  if (declared.IsArray() != inferred.IsArray()) return false;
  if (!declared.IsArray()) return declared.element_type() == inferred.element_type();
  return declared.dimensions() == inferred.dimensions() &&
         PrimitiveByteWidth(declared.element_type()) == PrimitiveByteWidth(inferred.element_type());
}

}  // namespace

// Iterative: a chain of calls may be as deep as the module has computations.
CallGraphProblem FindCallGraphProblem(const HloModule& module) {
  std::unordered_map<const HloComputation*, int> state;     // 1: on the path, 2: done
  std::unordered_map<const HloComputation*, int64_t> depth;  // of the done ones: longest chain
  struct Frame {
    const HloComputation* computation;
    std::vector<const HloComputation*> callees;
    size_t next = 0;
  };
  auto frame = [&](const HloComputation* c) {
    Frame f{c, {}};
    for (const HloInstruction* i : c->instructions())
      for (const HloComputation* callee : i->called_computations())
        if (callee && callee->parent() == &module) f.callees.push_back(callee);
    return f;
  };
  for (const HloComputation* root : module.computations()) {
    if (state[root] != 0) continue;
    std::vector<Frame> stack;
    state[root] = 1;
    stack.push_back(frame(root));
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.callees.size()) {
        int64_t d = 1;
        for (const HloComputation* callee : top.callees) d = std::max(d, depth[callee] + 1);
        if (d > kMaxCallDepth) return {top.computation, d};
        depth[top.computation] = d;
        state[top.computation] = 2;
        stack.pop_back();
        continue;
      }
      const HloComputation* callee = top.callees[top.next++];
      int& st = state[callee];
      if (st == 1) return {callee, 0};
      if (st == 2) continue;
      st = 1;
      stack.push_back(frame(callee));
    }
  }
  return {};
}

std::string CallGraphProblem::Message() const {
  if (!computation) return "";
  if (depth == 0) return "is part of a cycle of computations calling each other";
  return StrCat("starts a chain of ", depth, " nested calls, more than kiln supports (", kMaxCallDepth, ")");
}

Status CheckOperandsInRange(const HloModule& module) {
  if (CallGraphProblem p = FindCallGraphProblem(module); p.computation)
    return InvalidArgument("computation ", p.computation->name(), " ", p.Message());
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* instr : c->instructions()) {
      if (instr->opcode() == HloOpcode::kParameter || instr->opcode() == HloOpcode::kConstant) continue;
      const std::string where =
          StrCat("%", instr->name(), instr->location().line > 0 ? StrCat(" (line ", instr->location().line, ")") : "");
      StatusOr<Shape> s = InferShape(*instr);
      if (!s.ok()) {
        if (s.status().code() == StatusCode::kUnimplemented) continue;
        return InvalidArgument(where, ": ", s.status().message());
      }
      if (!SameExtent(instr->shape(), *s))
        return InvalidArgument(where, ": shape ", instr->shape().ToString(false), " does not match the shape ",
                               s->ToString(false), " its operands give");
    }
  return OkStatus();
}

}  // namespace kiln
