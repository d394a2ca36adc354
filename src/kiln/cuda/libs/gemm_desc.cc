// Note [Row-major GEMMs on column-major libraries]
//
// HLO buffers are row-major; cuBLAS and cuBLASLt are column-major. Reading a row-major [R, C]
// matrix (leading dimension L) as column-major gives its transpose, a [C, R] matrix with the same
// L, at no cost. So with out = lhs . rhs in row-major terms:
//   - out not transposed: the library computes out^T = rhs^T . lhs^T. Its A is rhs, its B is
//     lhs, its (m, n) is our (n, m). rhs stored [k, n] reads as the [n, k] matrix rhs^T, which
//     is op(A) as is (trans_a = N); rhs stored [n, k] reads as [k, n] and needs trans_a = T.
//     Likewise lhs stored [m, k] reads as lhs^T [k, m] = op(B) (N); stored [k, m] needs T.
//   - out transposed (stored [n, m]): that storage read column-major is out itself, so the
//     library computes out = lhs . rhs directly: A = lhs (stored [m, k] reads as [k, m]: T;
//     stored [k, m]: N), B = rhs (stored [k, n] reads as [n, k]: T; stored [n, k]: N).
// cuBLASLt's bias vector runs along the rows of D; in the swapped case D's rows are our n, so the
// bias is indexed by the last dimension of out, as HLO's bias adds are. In the unswapped case it
// would run along m, which the descriptor cannot express: bias with a transposed out is
// Unimplemented.
#include "kiln/cuda/libs/gemm_desc.h"

#include <cmath>

#include "kiln/base/strings.h"

namespace kiln::cuda::libs {

std::string_view GemmEpilogueName(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone: return "none";
    case GemmEpilogue::kBias: return "bias";
    case GemmEpilogue::kRelu: return "relu";
    case GemmEpilogue::kGelu: return "gelu";
    case GemmEpilogue::kBiasRelu: return "bias_relu";
    case GemmEpilogue::kBiasGelu: return "bias_gelu";
  }
  return "?";
}

bool GemmEpilogueHasBias(GemmEpilogue e) {
  return e == GemmEpilogue::kBias || e == GemmEpilogue::kBiasRelu ||
         e == GemmEpilogue::kBiasGelu;
}

std::string_view GemmComputeName(GemmCompute c) {
  switch (c) {
    case GemmCompute::kF32: return "f32";
    case GemmCompute::kF32Tf32: return "f32(tf32)";
    case GemmCompute::kF64: return "f64";
    case GemmCompute::kS32: return "s32";
    case GemmCompute::kC32: return "c64";
    case GemmCompute::kC32Tf32: return "c64(tf32)";
  }
  return "?";
}

namespace {

bool IsF8Gemm(PrimitiveType t) {
  return t == PrimitiveType::kF8E4M3FN || t == PrimitiveType::kF8E5M2;
}

// Stored (rows, cols) of each operand in row-major terms.
struct Stored {
  int64_t rows, cols;
};
Stored LhsStored(const GemmDesc& d) {
  return d.lhs.transposed ? Stored{d.k, d.m} : Stored{d.m, d.k};
}
Stored RhsStored(const GemmDesc& d) {
  return d.rhs.transposed ? Stored{d.n, d.k} : Stored{d.k, d.n};
}
Stored OutStored(const GemmDesc& d) {
  return d.out.transposed ? Stored{d.n, d.m} : Stored{d.m, d.n};
}

int64_t LeadingDim(const GemmOperandDesc& o, Stored s) {
  return o.leading_dim == 0 ? s.cols : o.leading_dim;
}
int64_t BatchStride(const GemmDesc& d, const GemmOperandDesc& o, Stored s) {
  if (d.batch == 1) return 0;
  return o.batch_stride == -1 ? s.rows * LeadingDim(o, s) : o.batch_stride;
}

Status CheckOperand(const GemmDesc& d, const GemmOperandDesc& o, Stored s, const char* name,
                    bool may_broadcast) {
  if (o.leading_dim != 0 && o.leading_dim < s.cols) {
    return InvalidArgument("gemm: ", name, " leading_dim ", o.leading_dim,
                           " is smaller than its stored row length ", s.cols);
  }
  if (o.batch_stride < -1) {
    return InvalidArgument("gemm: ", name, " batch_stride ", o.batch_stride, " is negative");
  }
  if (d.batch > 1 && o.batch_stride == 0 && !may_broadcast) {
    return InvalidArgument("gemm: ", name, " cannot be broadcast over the batch (stride 0)");
  }
  if (d.batch > 1 && !may_broadcast && o.batch_stride > 0 &&
      o.batch_stride < s.rows * LeadingDim(o, s)) {
    return InvalidArgument("gemm: ", name, " batch_stride ", o.batch_stride,
                           " makes the matrices of the batch overlap (each spans ",
                           s.rows * LeadingDim(o, s), " elements)");
  }
  return OkStatus();
}

Status CheckSizes(const GemmDesc& d) {
  if (d.batch < 1 || d.m < 1 || d.n < 1) {
    return InvalidArgument("gemm: batch, m and n must be positive (batch=", d.batch, " m=", d.m,
                           " n=", d.n, ")");
  }
  if (d.k < 1) {
    return Unimplemented("gemm: k=", d.k,
                         " (an empty contraction is a fill of beta*c, not a library call)");
  }
  KILN_RETURN_IF_ERROR(CheckOperand(d, d.lhs, LhsStored(d), "lhs", true));
  KILN_RETURN_IF_ERROR(CheckOperand(d, d.rhs, RhsStored(d), "rhs", true));
  KILN_RETURN_IF_ERROR(CheckOperand(d, d.out, OutStored(d), "out", false));
  if (d.min_alignment_bytes == 0 || (d.min_alignment_bytes & (d.min_alignment_bytes - 1)) != 0) {
    return InvalidArgument("gemm: min_alignment_bytes ", d.min_alignment_bytes,
                           " is not a power of two");
  }
  return OkStatus();
}

std::string TypeCombination(const GemmDesc& d) {
  return StrCat(PrimitiveTypeName(d.lhs.dtype), " x ", PrimitiveTypeName(d.rhs.dtype), " -> ",
                PrimitiveTypeName(d.out.dtype));
}

}  // namespace

StatusOr<GemmTypes> ResolveGemmTypes(const GemmDesc& d) {
  KILN_RETURN_IF_ERROR(CheckSizes(d));
  const PrimitiveType l = d.lhs.dtype, r = d.rhs.dtype, o = d.out.dtype;
  const bool highest = d.precision == Precision::kHighest;
  GemmTypes t{r, l, o, o, o, PrimitiveType::kF32, GemmCompute::kF32};
  const bool f8 = IsF8Gemm(l) && IsF8Gemm(r);
  auto unsupported = [&]() {
    return Unimplemented("gemm: no NVIDIA library multiplies ", TypeCombination(d),
                         " (supported: f32, bf16/f16 -> same or f32, f8e4m3fn/f8e5m2 -> "
                         "f32/bf16/f16/f8, s8 -> s32, f64, c64, c128)");
  };
  if (l == PrimitiveType::kF32 && r == l && o == l) {
    t.compute = highest ? GemmCompute::kF32 : GemmCompute::kF32Tf32;
  } else if ((l == PrimitiveType::kBF16 || l == PrimitiveType::kF16) && r == l &&
             (o == l || o == PrimitiveType::kF32)) {
    t.compute = GemmCompute::kF32;
  } else if (f8) {
    if (l == PrimitiveType::kF8E5M2 && r == PrimitiveType::kF8E5M2) {
      return Unimplemented("gemm: f8e5m2 x f8e5m2 is not supported by cuBLASLt (make one "
                           "operand f8e4m3fn)");
    }
    if (o != PrimitiveType::kF32 && o != PrimitiveType::kBF16 && o != PrimitiveType::kF16 &&
        !IsF8Gemm(o)) {
      return unsupported();
    }
    if (d.lhs.transposed || !d.rhs.transposed || d.out.transposed) {
      return Unimplemented("gemm: f8 GEMMs need k contiguous in both operands (lhs stored [m,k],"
                           " rhs stored [n,k]) and a non-transposed out; transpose the operands "
                           "first (", d.ToString(), ")");
    }
    if (IsF8Gemm(o)) {
      t.c = PrimitiveType::kBF16;
      t.bias = PrimitiveType::kBF16;
      if (d.beta != 0) {
        return Unimplemented("gemm: beta*c with an f8 output (c would have to be bf16)");
      }
    }
  } else if (l == PrimitiveType::kS8 && r == l && o == PrimitiveType::kS32) {
    t.compute = GemmCompute::kS32;
    t.scale = PrimitiveType::kS32;
    if (d.alpha != std::trunc(d.alpha) || d.beta != std::trunc(d.beta)) {
      return InvalidArgument("gemm: s8 GEMMs take integral alpha and beta (alpha=", d.alpha,
                             " beta=", d.beta, ")");
    }
    if (d.epilogue != GemmEpilogue::kNone) {
      return Unimplemented("gemm: epilogue ", GemmEpilogueName(d.epilogue),
                           " on an s8 x s8 -> s32 GEMM");
    }
  } else if (l == PrimitiveType::kF64 && r == l && o == l) {
    t.compute = GemmCompute::kF64;
    t.scale = PrimitiveType::kF64;
  } else if (l == PrimitiveType::kC64 && r == l && o == l) {
    t.compute = highest ? GemmCompute::kC32 : GemmCompute::kC32Tf32;
    t.scale = PrimitiveType::kC64;
    if (d.epilogue != GemmEpilogue::kNone) {
      return Unimplemented("gemm: epilogue ", GemmEpilogueName(d.epilogue),
                           " on a complex GEMM");
    }
  } else if (l == PrimitiveType::kC128 && r == l && o == l) {
    // ZGEMM: complex f64 accumulation (compute 64F, scale c128).
    t.compute = GemmCompute::kF64;
    t.scale = PrimitiveType::kC128;
    if (d.epilogue != GemmEpilogue::kNone) {
      return Unimplemented("gemm: epilogue ", GemmEpilogueName(d.epilogue),
                           " on a complex GEMM");
    }
  } else {
    return unsupported();
  }
  if (d.alpha_imag != 0 && t.scale != PrimitiveType::kC64 && t.scale != PrimitiveType::kC128) {
    return InvalidArgument("gemm: a complex alpha on a real GEMM");
  }

  if (!f8 && (d.has_a_scale || d.has_b_scale || d.has_d_scale || d.has_d_amax)) {
    return InvalidArgument("gemm: scales and amax apply to f8 GEMMs only (", TypeCombination(d),
                           ")");
  }
  if (d.has_d_scale && !IsF8Gemm(o)) {
    return InvalidArgument("gemm: d_scale needs an f8 output (", TypeCombination(d), ")");
  }

  if (GemmEpilogueHasBias(d.epilogue)) {
    if (d.out.transposed) {
      return Unimplemented("gemm: a bias epilogue with a transposed out (the library's bias runs "
                           "along out's last dimension only)");
    }
    if (d.bias_dtype != PrimitiveType::kInvalid) {
      const PrimitiveType b = d.bias_dtype;
      bool ok = b == o;
      if (f8) ok = b == PrimitiveType::kBF16 || b == PrimitiveType::kF16;
      if (!f8 && o == PrimitiveType::kF32 && (l == PrimitiveType::kBF16 || l == PrimitiveType::kF16))
        ok = ok || b == l;
      if (!ok) {
        return Unimplemented("gemm: bias of type ", PrimitiveTypeName(b), " with ",
                             TypeCombination(d));
      }
      t.bias = b;
    }
  }
  return t;
}

StatusOr<ColumnMajorGemm> MapToColumnMajor(const GemmDesc& d) {
  KILN_RETURN_IF_ERROR(ResolveGemmTypes(d).status());
  const Stored ls = LhsStored(d), rs = RhsStored(d), os = OutStored(d);
  // A row-major stored [R, C] matrix is a column-major [C, R] one with the same leading dim.
  auto view = [&](const GemmOperandDesc& o, Stored s) {
    return ColumnMajorMatrix{s.cols, s.rows, LeadingDim(o, s), BatchStride(d, o, s)};
  };
  ColumnMajorGemm g;
  g.batch = d.batch;
  g.k = d.k;
  g.swapped = !d.out.transposed;
  if (g.swapped) {
    g.m = d.n;
    g.n = d.m;
    g.a = view(d.rhs, rs);
    g.b = view(d.lhs, ls);
    g.trans_a = d.rhs.transposed;
    g.trans_b = d.lhs.transposed;
  } else {
    g.m = d.m;
    g.n = d.n;
    g.a = view(d.lhs, ls);
    g.b = view(d.rhs, rs);
    g.trans_a = !d.lhs.transposed;
    g.trans_b = !d.rhs.transposed;
  }
  g.c = view(d.out, os);
  return g;
}

uint64_t ColumnMajorBytes(const ColumnMajorMatrix& m, int64_t batch, PrimitiveType t) {
  const int64_t elements = (batch - 1) * m.batch_stride + (m.cols - 1) * m.ld + m.rows;
  return static_cast<uint64_t>(elements) * PrimitiveByteWidth(t);
}

std::string GemmDesc::ToString() const {
  auto operand = [&](const char* name, const GemmOperandDesc& o) {
    std::string s = StrCat(name, "=", PrimitiveTypeName(o.dtype), o.transposed ? "^T" : "");
    if (o.leading_dim != 0) s += StrCat(" ld=", o.leading_dim);
    if (o.batch_stride != -1) s += StrCat(" stride=", o.batch_stride);
    return s;
  };
  std::string s = StrCat("gemm batch=", batch, " m=", m, " n=", n, " k=", k, " ",
                         operand("lhs", lhs), " ", operand("rhs", rhs), " ", operand("out", out));
  if (precision == Precision::kHighest) s += " precision=highest";
  if (alpha != 1 || alpha_imag != 0) s += StrCat(" alpha=", alpha);
  if (alpha_imag != 0) s += StrCat("+", alpha_imag, "i");
  if (beta != 0) s += StrCat(" beta=", beta);
  if (epilogue != GemmEpilogue::kNone) s += StrCat(" epilogue=", GemmEpilogueName(epilogue));
  if (has_a_scale) s += " a_scale";
  if (has_b_scale) s += " b_scale";
  if (has_d_scale) s += " d_scale";
  if (has_d_amax) s += " d_amax";
  return s;
}

}  // namespace kiln::cuda::libs
