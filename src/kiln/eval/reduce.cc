// Reduction kernels: reduce, reduce-window, select-and-scatter -- with XLA evaluator semantics.
//
// reduce (N inputs, N inits; to_apply takes 2N scalars (accumulators first) and returns N):
//   every output element starts from the inits and folds acc = f(acc, x) over the reduced
//   dimensions in row-major order of the input. As in XLA's evaluator, a single-input reduce of
//   a real floating type whose reducer is add(p0, p1) is summed in double precision and rounded
//   once at the end.
// reduce-window: the same fold over the window positions (row-major over window dimensions)
//   that land on real input elements; padding positions and base-dilation holes are skipped (not
//   combined with the init value).
// select-and-scatter: the result starts as the init value everywhere; for each source element
//   (row-major), the window's first valid element is selected, and each later element `cur`
//   replaces the selection when select(selected, cur) is false (so ties keep the first); then
//   result[selected] = scatter(source, result[selected]).
//
// Reducers that compile to a ScalarProgram run natively; others are evaluated per element.
#include <array>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/elementwise_ops.h"
#include "kiln/eval/eval_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

using eval_internal::ExpectArray;
using eval_internal::StridesOf;

Status ReduceError(const HloInstruction& instr, std::string_view what) {
  return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": ", what);
}

// Calls f(offset) for every index of `dims` in row-major order, offset = base + sum i_d*strides[d].
template <class F>
void ForEachOffset(std::span<const int64_t> dims, std::span<const int64_t> strides, int64_t base,
                   F&& f) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t d : dims)
    if (d <= 0) return;
  if (rank == 0) {
    f(base);
    return;
  }
  const int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
  std::vector<int64_t> idx(rank - 1, 0);
  int64_t off = base;
  while (true) {
    for (int64_t i = 0; i < inner; ++i) f(off + i * inner_stride);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      off += strides[d];
      if (idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Folds acc = f(acc..., x...) with the reducer, on raw element bytes. accs[k] and xs[k] point at
// native values of input k's type.
class Folder {
 public:
  Folder(const HloInstruction& instr, const HloComputation& f, Evaluator& e,
         std::vector<PrimitiveType> types)
      : instr_(instr), f_(f), e_(e), types_(std::move(types)), n_(types_.size()) {
    program_ = e.GetScalarProgram(f);
    if (program_) {
      bool ok = program_->num_parameters() == static_cast<int>(2 * n_) &&
                program_->num_results() == static_cast<int>(n_);
      for (size_t k = 0; ok && k < n_; ++k)
        ok = program_->parameter_type(static_cast<int>(k)) == types_[k] &&
             program_->parameter_type(static_cast<int>(n_ + k)) == types_[k] &&
             program_->result_type(static_cast<int>(k)) == types_[k];
      if (!ok) program_ = nullptr;
    }
    if (program_ && program_->single_op() && n_ == 1) {
      single_ = program_->single_op();
      single_instr_ = program_->single_op_instr();
      for (int p : program_->single_op_params()) single_params_.push_back(p);
    }
    args_.resize(2 * n_);
    results_.resize(n_);
    if (!program_) {
      for (size_t k = 0; k < 2 * n_; ++k)
        scalars_.emplace_back(Shape::ArrayWithDefaultLayout(types_[k % n_], {}));
      for (const Literal& s : scalars_) scalar_ptrs_.push_back(&s);
    }
  }

  const ScalarProgram* program() const { return program_; }

  // acc = f(acc, x).
  Status Step(uint8_t* const* accs, const uint8_t* const* xs) {
    if (single_) {
      const void* in[3];
      for (size_t k = 0; k < single_params_.size(); ++k)
        in[k] = single_params_[k] == 0 ? static_cast<const void*>(accs[0]) : xs[0];
      single_(single_instr_, in, accs[0]);
      return OkStatus();
    }
    if (program_) {
      for (size_t k = 0; k < n_; ++k) {
        args_[k] = accs[k];
        args_[n_ + k] = xs[k];
        results_[k] = accs[k];
      }
      program_->Run(args_, results_);
      return OkStatus();
    }
    for (size_t k = 0; k < n_; ++k) {
      int w = PrimitiveByteWidth(types_[k]);
      std::memcpy(scalars_[k].untyped_data(), accs[k], w);
      std::memcpy(scalars_[n_ + k].untyped_data(), xs[k], w);
    }
    KILN_ASSIGN_OR_RETURN(Literal r, e_.Evaluate(f_, scalar_ptrs_));
    for (size_t k = 0; k < n_; ++k) {
      const Literal& rk = r.shape().IsTuple() ? (k < static_cast<size_t>(r.tuple_size())
                                                     ? r.tuple_element(static_cast<int64_t>(k))
                                                     : r)
                                              : r;
      if (!rk.shape().IsArray() || rk.element_count() != 1 ||
          rk.shape().element_type() != types_[k] || (n_ > 1 && !r.shape().IsTuple()))
        return ReduceError(instr_, StrCat("the reducer returned ", r.shape().ToString(false)));
      std::memcpy(accs[k], rk.untyped_data(), PrimitiveByteWidth(types_[k]));
    }
    return OkStatus();
  }

 private:
  const HloInstruction& instr_;
  const HloComputation& f_;
  Evaluator& e_;
  std::vector<PrimitiveType> types_;
  size_t n_;
  const ScalarProgram* program_ = nullptr;
  eval_internal::ElementFn single_ = nullptr;
  const HloInstruction* single_instr_ = nullptr;
  std::vector<int> single_params_;
  std::vector<const void*> args_;
  std::vector<void*> results_;
  std::vector<Literal> scalars_;
  std::vector<const Literal*> scalar_ptrs_;
};

// Splits reduce-like operands [inputs..., inits...] and checks them.
struct Variadic {
  std::vector<const Literal*> inputs, inits;
  std::vector<PrimitiveType> types;
  std::vector<int> widths;
};

StatusOr<Variadic> SplitOperands(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.empty() || ops.size() % 2) return ReduceError(instr, "needs N inputs and N init values");
  Variadic v;
  size_t n = ops.size() / 2;
  for (size_t k = 0; k < n; ++k) {
    const Literal& in = *ops[k];
    const Literal& init = *ops[n + k];
    KILN_RETURN_IF_ERROR(ExpectArray(in, instr, "input"));
    KILN_RETURN_IF_ERROR(ExpectArray(init, instr, "init value"));
    if (init.element_count() != 1 || init.shape().rank() != 0 ||
        init.shape().element_type() != in.shape().element_type())
      return ReduceError(instr, StrCat("init value ", k, " must be a scalar of the input's type"));
    if (in.shape().dimensions() != ops[0]->shape().dimensions())
      return ReduceError(instr, "inputs must have equal dimensions");
    v.inputs.push_back(&in);
    v.inits.push_back(&init);
    v.types.push_back(in.shape().element_type());
    v.widths.push_back(PrimitiveByteWidth(in.shape().element_type()));
  }
  return v;
}

// Result literals: one array per input with the instruction's (tuple element) shape.
StatusOr<std::vector<Literal>> MakeResults(const HloInstruction& instr, const Variadic& v,
                                           const std::vector<int64_t>& dims) {
  std::vector<Literal> results;
  const Shape& s = instr.shape();
  size_t n = v.inputs.size();
  if (s.IsTuple() ? s.tuple_shapes_size() != static_cast<int64_t>(n) : n != 1)
    return ReduceError(instr, "result shape does not match the number of inputs");
  for (size_t k = 0; k < n; ++k) {
    const Shape& rk = s.IsTuple() ? s.tuple_shapes(static_cast<int64_t>(k)) : s;
    if (!rk.IsArray() || rk.element_type() != v.types[k] || rk.dimensions() != dims)
      return ReduceError(instr, StrCat("result ", rk.ToString(false), " does not match the ",
                                       "expected dimensions and type"));
    results.emplace_back(rk);
  }
  return results;
}

Literal PackResults(const HloInstruction& instr, std::vector<Literal> results) {
  if (instr.shape().IsTuple()) return Literal::MakeTuple(std::move(results));
  return std::move(results[0]);
}

template <class T>
void StoreFromDouble(uint8_t* p, double v) {
  T t;
  if constexpr (kIsMiniFloat<T>) t = T(v);
  else t = static_cast<T>(v);
  std::memcpy(p, &t, sizeof(T));
}

// A single-input reduce whose reducer is one common binary op of its two parameters runs as a
// typed loop (the same element functor as the elementwise kernel, so the same rounding).
template <class Op>
bool TypedReduceWith(const HloInstruction& op_instr, bool swapped, const Literal& input,
                     const Literal& init, Literal& out, std::span<const int64_t> kept_dims,
                     std::span<const int64_t> kept_strides, std::span<const int64_t> red_dims,
                     std::span<const int64_t> red_strides) {
  return ArrayTypeSwitch(input.shape().element_type(), [&](auto tag) -> bool {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (Op::template kOk<T>) {
      using O = decltype(Op::Apply(&op_instr, T{}, T{}));
      if constexpr (std::is_same_v<O, T>) {
        const T* in = input.data<T>().data();
        const T init_value = init.data<T>()[0];
        T* o = out.data<T>().data();
        int64_t k = 0;
        ForEachOffset(kept_dims, kept_strides, 0, [&](int64_t base) {
          T acc = init_value;
          if (swapped) {
            ForEachOffset(red_dims, red_strides, base,
                          [&](int64_t off) { acc = Op::Apply(&op_instr, in[off], acc); });
          } else {
            ForEachOffset(red_dims, red_strides, base,
                          [&](int64_t off) { acc = Op::Apply(&op_instr, acc, in[off]); });
          }
          o[k++] = acc;
        });
        return true;
      }
    }
    return false;
  });
}

bool TypedReduce(const ScalarProgram& program, const Literal& input, const Literal& init,
                 Literal& out, std::span<const int64_t> kept_dims,
                 std::span<const int64_t> kept_strides, std::span<const int64_t> red_dims,
                 std::span<const int64_t> red_strides) {
  using namespace eval_internal;  // NOLINT
  const HloInstruction* op = program.single_op_instr();
  const std::vector<int>& params = program.single_op_params();
  if (!op || params.size() != 2 || params[0] == params[1]) return false;
  const bool swapped = params[0] == 1;
  auto run = [&]<class Op>() {
    return TypedReduceWith<Op>(*op, swapped, input, init, out, kept_dims, kept_strides, red_dims,
                               red_strides);
  };
  switch (op->opcode()) {
    case HloOpcode::kAdd: return run.template operator()<AddOp>();
    case HloOpcode::kMultiply: return run.template operator()<MultiplyOp>();
    case HloOpcode::kMaximum: return run.template operator()<MaximumOp>();
    case HloOpcode::kMinimum: return run.template operator()<MinimumOp>();
    case HloOpcode::kAnd: return run.template operator()<AndOp>();
    case HloOpcode::kOr: return run.template operator()<OrOp>();
    case HloOpcode::kXor: return run.template operator()<XorOp>();
    default: return false;
  }
}

StatusOr<Literal> EvalReduce(const HloInstruction& instr, std::span<const Literal* const> ops,
                             Evaluator& e) {
  KILN_ASSIGN_OR_RETURN(Variadic v, SplitOperands(instr, ops));
  const HloComputation* f = instr.to_apply();
  if (!f) return ReduceError(instr, "has no to_apply");
  const Shape& in_shape = v.inputs[0]->shape();
  const int64_t rank = in_shape.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : instr.attrs().dimensions) {
    if (d < 0 || d >= rank || reduced[d]) return ReduceError(instr, "bad dimensions=");
    reduced[d] = true;
  }
  std::vector<int64_t> in_strides = StridesOf(in_shape);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      red_dims.push_back(in_shape.dimensions(d));
      red_strides.push_back(in_strides[d]);
    } else {
      kept_dims.push_back(in_shape.dimensions(d));
      kept_strides.push_back(in_strides[d]);
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Literal> results, MakeResults(instr, v, kept_dims));
  const size_t n = v.inputs.size();
  Folder folder(instr, *f, e, v.types);

  // XLA's evaluator: a float add reducer sums in double.
  if (n == 1 && folder.program() && folder.program()->is_float_add() &&
      IsFloatingPointType(v.types[0])) {
    Status status;
    ArrayTypeSwitch(v.types[0], [&](auto tag) {
      using T = NativeTypeOf<decltype(tag)::value>;
      if constexpr (eval_internal::kIsFloat<T>) {
        const T* in = v.inputs[0]->data<T>().data();
        const double init = static_cast<double>(eval_internal::Widen(v.inits[0]->data<T>()[0]));
        uint8_t* out = results[0].untyped_data();
        int64_t o = 0;
        ForEachOffset(kept_dims, kept_strides, 0, [&](int64_t base) {
          double sum = init;
          ForEachOffset(red_dims, red_strides, base, [&](int64_t off) {
            sum += static_cast<double>(eval_internal::Widen(in[off]));
          });
          StoreFromDouble<T>(out + o * sizeof(T), sum);
          ++o;
        });
      }
    });
    KILN_RETURN_IF_ERROR(status);
    return PackResults(instr, std::move(results));
  }

  if (n == 1 && folder.program() &&
      TypedReduce(*folder.program(), *v.inputs[0], *v.inits[0], results[0], kept_dims,
                  kept_strides, red_dims, red_strides))
    return PackResults(instr, std::move(results));

  std::vector<std::array<uint8_t, 16>> acc(n);
  std::vector<uint8_t*> acc_ptrs(n);
  std::vector<const uint8_t*> x_ptrs(n);
  for (size_t k = 0; k < n; ++k) acc_ptrs[k] = acc[k].data();
  Status status;
  int64_t o = 0;
  ForEachOffset(kept_dims, kept_strides, 0, [&](int64_t base) {
    if (!status.ok()) return;
    for (size_t k = 0; k < n; ++k) std::memcpy(acc[k].data(), v.inits[k]->untyped_data(), v.widths[k]);
    ForEachOffset(red_dims, red_strides, base, [&](int64_t off) {
      if (!status.ok()) return;
      for (size_t k = 0; k < n; ++k) x_ptrs[k] = v.inputs[k]->untyped_data() + off * v.widths[k];
      status = folder.Step(acc_ptrs.data(), x_ptrs.data());
    });
    for (size_t k = 0; k < n; ++k)
      std::memcpy(results[k].untyped_data() + o * v.widths[k], acc[k].data(), v.widths[k]);
    ++o;
  });
  KILN_RETURN_IF_ERROR(status);
  return PackResults(instr, std::move(results));
}

// Window geometry over an input of `dims`: for output index o in dimension d, the input indices
// that the window positions land on, in window order (padding and dilation holes dropped).
struct WindowGeometry {
  std::vector<WindowDimension> w;
  std::vector<int64_t> dims;

  void Valid(int64_t d, int64_t o, std::vector<int64_t>& out) const {
    out.clear();
    const WindowDimension& wd = w[d];
    for (int64_t k = 0; k < wd.size; ++k) {
      int64_t pos = o * wd.stride - wd.padding_low + k * wd.window_dilation;
      if (wd.base_dilation > 1) {
        if (pos % wd.base_dilation != 0) continue;
        pos /= wd.base_dilation;
      }
      if (pos < 0 || pos >= dims[d]) continue;
      out.push_back(pos);
    }
  }

  // Output size of dimension d.
  int64_t OutputSize(int64_t d) const {
    const WindowDimension& wd = w[d];
    int64_t dilated_base = dims[d] == 0 ? 0 : (dims[d] - 1) * wd.base_dilation + 1;
    int64_t padded = dilated_base + wd.padding_low + wd.padding_high;
    int64_t dilated_window = (wd.size - 1) * wd.window_dilation + 1;
    if (padded < dilated_window) return 0;
    return (padded - dilated_window) / wd.stride + 1;
  }
};

StatusOr<WindowGeometry> MakeGeometry(const HloInstruction& instr, const Shape& input) {
  if (!instr.attrs().window) return ReduceError(instr, "has no window=");
  WindowGeometry g;
  g.w = instr.attrs().window->dimensions;
  g.dims = input.dimensions();
  if (g.w.size() != g.dims.size()) return ReduceError(instr, "window rank differs from the input");
  for (const WindowDimension& wd : g.w)
    if (wd.size < 0 || wd.stride < 1 || wd.window_dilation < 1 || wd.base_dilation < 1)
      return ReduceError(instr, "window sizes, strides and dilations must be positive");
  return g;
}

// Calls f(input_offset) for each valid window position of output index `out_idx`.
// `lists` and `j` are scratch space of the window's rank (reused across calls).
template <class F>
void ForEachWindowElement(const WindowGeometry& g, const std::vector<int64_t>& in_strides,
                          const std::vector<int64_t>& out_idx,
                          std::vector<std::vector<int64_t>>& lists, std::vector<int64_t>& j,
                          F&& f) {
  const int64_t rank = static_cast<int64_t>(g.dims.size());
  // lists[d] holds input offsets along d (index * stride); iterate their product row-major.
  for (int64_t d = 0; d < rank; ++d) {
    g.Valid(d, out_idx[d], lists[d]);
    if (lists[d].empty()) return;
    for (int64_t& x : lists[d]) x *= in_strides[d];
  }
  if (rank == 0) {
    f(0);
    return;
  }
  j.assign(rank, 0);
  int64_t outer = 0;  // offset of dims [0, rank-1)
  for (int64_t d = 0; d + 1 < rank; ++d) outer += lists[d][0];
  const std::vector<int64_t>& last = lists[rank - 1];
  while (true) {
    for (int64_t x : last) f(outer + x);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      outer -= lists[d][j[d]];
      if (++j[d] < static_cast<int64_t>(lists[d].size())) {
        outer += lists[d][j[d]];
        break;
      }
      j[d] = 0;
      outer += lists[d][0];
    }
    if (d < 0) return;
  }
}

// Advances a row-major multi-index; false when it wraps around.
bool NextIndex(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

StatusOr<Literal> EvalReduceWindow(const HloInstruction& instr,
                                   std::span<const Literal* const> ops, Evaluator& e) {
  KILN_ASSIGN_OR_RETURN(Variadic v, SplitOperands(instr, ops));
  const HloComputation* f = instr.to_apply();
  if (!f) return ReduceError(instr, "has no to_apply");
  const Shape& in_shape = v.inputs[0]->shape();
  KILN_ASSIGN_OR_RETURN(WindowGeometry g, MakeGeometry(instr, in_shape));
  std::vector<int64_t> out_dims;
  for (int64_t d = 0; d < in_shape.rank(); ++d) out_dims.push_back(g.OutputSize(d));
  KILN_ASSIGN_OR_RETURN(std::vector<Literal> results, MakeResults(instr, v, out_dims));
  const size_t n = v.inputs.size();
  Folder folder(instr, *f, e, v.types);
  std::vector<int64_t> in_strides = StridesOf(in_shape);
  std::vector<std::vector<int64_t>> lists(in_shape.rank());
  std::vector<int64_t> scratch;
  std::vector<std::array<uint8_t, 16>> acc(n);
  std::vector<uint8_t*> acc_ptrs(n);
  std::vector<const uint8_t*> x_ptrs(n);
  for (size_t k = 0; k < n; ++k) acc_ptrs[k] = acc[k].data();
  const int64_t total = Product(out_dims);
  std::vector<int64_t> idx(out_dims.size(), 0);
  Status status;
  for (int64_t o = 0; o < total; ++o) {
    for (size_t k = 0; k < n; ++k) std::memcpy(acc[k].data(), v.inits[k]->untyped_data(), v.widths[k]);
    ForEachWindowElement(g, in_strides, idx, lists, scratch, [&](int64_t off) {
      if (!status.ok()) return;
      for (size_t k = 0; k < n; ++k) x_ptrs[k] = v.inputs[k]->untyped_data() + off * v.widths[k];
      status = folder.Step(acc_ptrs.data(), x_ptrs.data());
    });
    KILN_RETURN_IF_ERROR(status);
    for (size_t k = 0; k < n; ++k)
      std::memcpy(results[k].untyped_data() + o * v.widths[k], acc[k].data(), v.widths[k]);
    NextIndex(idx, out_dims);
  }
  return PackResults(instr, std::move(results));
}

// Runs a 2-parameter scalar computation on raw values: a program when it compiles, else the
// general evaluator.
class BinaryScalarFn {
 public:
  BinaryScalarFn(const HloComputation& f, Evaluator& e, PrimitiveType in_type, PrimitiveType out_type)
      : f_(f), e_(e), out_type_(out_type) {
    program_ = e.GetScalarProgram(f);
    if (program_ && (program_->num_parameters() != 2 || program_->num_results() != 1 ||
                     program_->parameter_type(0) != in_type || program_->parameter_type(1) != in_type ||
                     program_->result_type(0) != out_type))
      program_ = nullptr;
    if (!program_) {
      for (int k = 0; k < 2; ++k) scalars_.emplace_back(Shape::ArrayWithDefaultLayout(in_type, {}));
    }
  }
  Status Call(const void* a, const void* b, void* out) {
    if (program_) {
      const void* in[2] = {a, b};
      void* res[1] = {out};
      program_->Run(in, res);
      return OkStatus();
    }
    int w = PrimitiveByteWidth(scalars_[0].shape().element_type());
    std::memcpy(scalars_[0].untyped_data(), a, w);
    std::memcpy(scalars_[1].untyped_data(), b, w);
    const Literal* args[2] = {&scalars_[0], &scalars_[1]};
    KILN_ASSIGN_OR_RETURN(Literal r, e_.Evaluate(f_, args));
    if (!r.shape().IsArray() || r.element_count() != 1 || r.shape().element_type() != out_type_)
      return InvalidArgument("computation ", f_.name(), " returned ", r.shape().ToString(false),
                             ", expected ", PrimitiveTypeName(out_type_), "[]");
    std::memcpy(out, r.untyped_data(), PrimitiveByteWidth(out_type_));
    return OkStatus();
  }

 private:
  const HloComputation& f_;
  Evaluator& e_;
  PrimitiveType out_type_;
  const ScalarProgram* program_ = nullptr;
  std::vector<Literal> scalars_;
};

StatusOr<Literal> EvalSelectAndScatter(const HloInstruction& instr,
                                       std::span<const Literal* const> ops, Evaluator& e) {
  const Literal& operand = *ops[0];
  const Literal& source = *ops[1];
  const Literal& init = *ops[2];
  KILN_RETURN_IF_ERROR(ExpectArray(operand, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectArray(source, instr, "source"));
  KILN_RETURN_IF_ERROR(ExpectArray(init, instr, "init value"));
  const PrimitiveType t = operand.shape().element_type();
  if (source.shape().element_type() != t || init.shape().element_type() != t ||
      init.element_count() != 1 || !Shape::Compatible(instr.shape(), operand.shape()))
    return ReduceError(instr, "operand, source, init value and result must share the element type");
  if (instr.called_computations().size() < 2) return ReduceError(instr, "needs select and scatter");
  KILN_ASSIGN_OR_RETURN(WindowGeometry g, MakeGeometry(instr, operand.shape()));
  std::vector<int64_t> src_dims;
  for (int64_t d = 0; d < operand.shape().rank(); ++d) src_dims.push_back(g.OutputSize(d));
  if (src_dims != source.shape().dimensions())
    return ReduceError(instr, StrCat("source ", source.shape().ToString(false),
                                     " does not match the window over the operand"));
  const int64_t w = PrimitiveByteWidth(t);
  Literal out(instr.shape());
  for (int64_t i = 0; i < out.element_count(); ++i)
    std::memcpy(out.untyped_data() + i * w, init.untyped_data(), w);
  BinaryScalarFn select(*instr.select(), e, t, PrimitiveType::kPred);
  BinaryScalarFn scatter(*instr.scatter(), e, t, t);
  std::vector<int64_t> in_strides = StridesOf(operand.shape());
  std::vector<std::vector<int64_t>> lists(operand.shape().rank());
  std::vector<int64_t> scratch;
  const int64_t total = Product(src_dims);
  std::vector<int64_t> idx(src_dims.size(), 0);
  Status status;
  const uint8_t* in = operand.untyped_data();
  for (int64_t s = 0; s < total; ++s) {
    int64_t selected = -1;
    ForEachWindowElement(g, in_strides, idx, lists, scratch, [&](int64_t off) {
      if (!status.ok()) return;
      if (selected < 0) {
        selected = off;
        return;
      }
      bool keep = false;
      status = select.Call(in + selected * w, in + off * w, &keep);
      if (status.ok() && !keep) selected = off;
    });
    KILN_RETURN_IF_ERROR(status);
    if (selected >= 0) {
      uint8_t* dst = out.untyped_data() + selected * w;
      alignas(16) uint8_t tmp[16];
      KILN_RETURN_IF_ERROR(scatter.Call(source.untyped_data() + s * w, dst, tmp));
      std::memcpy(dst, tmp, w);
    }
    NextIndex(idx, src_dims);
  }
  return out;
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kReduce, EvalReduce);
  r.Register(HloOpcode::kReduceWindow, EvalReduceWindow);
  r.Register(HloOpcode::kSelectAndScatter, EvalSelectAndScatter);
}

}  // namespace kiln
