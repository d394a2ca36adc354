"""Generates the reference cases of the dot/conv, gather/scatter, sort and misc evaluator tests.

Each case is one HLO module (written here by hand, one op under test) with its arguments and
expected results. Expected values come from an independent computation:
  - dot, fft, cholesky, triangular-solve, batch-norm: numpy in float64 (rounded to the result
    type with ml_dtypes where narrow);
  - convolution: jax.lax.conv_general_dilated in float64 on the CPU (XLA CPU's own convolution);
  - gather, scatter, top_k: jax on the CPU (XLA CPU's semantics for clamping, skipping, ties);
  - sort: a Python total-order key.
Output: <family>_cases.json next to this script, read by <family>_test.cc.
Run: python3 gen_eval_b_cases.py
"""
import json
import math
import os

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20261129)

NP_TYPES = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "c64": np.complex64, "c128": np.complex128, "pred": np.bool_,
}


def fnum(x):
    x = float(x)
    if math.isnan(x):
        return "-nan" if math.copysign(1, x) < 0 else "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def lit(arr, ty):
    a = np.asarray(arr).astype(NP_TYPES[ty])
    flat = a.reshape(-1)
    if ty in ("c64", "c128"):
        vals = [[fnum(v.real), fnum(v.imag)] for v in flat]
    elif ty in ("f16", "bf16", "f32", "f64"):
        vals = [fnum(v) for v in flat.astype(np.float64)]
    elif ty == "pred":
        vals = [bool(v) for v in flat]
    elif ty == "u64":
        vals = [str(int(v)) for v in flat]
    else:
        vals = [int(v) for v in flat]
    return {"type": ty, "dims": list(a.shape), "values": vals}


def shape_str(ty, dims):
    return f"{ty}[{','.join(str(d) for d in dims)}]"


def rand(ty, dims, lo=-2.0, hi=2.0):
    if ty in ("c64", "c128"):
        return (RNG.uniform(lo, hi, dims) + 1j * RNG.uniform(lo, hi, dims)).astype(NP_TYPES[ty])
    if ty.startswith("s") or ty.startswith("u"):
        return RNG.integers(int(lo), int(hi) + 1, dims).astype(NP_TYPES[ty])
    return RNG.uniform(lo, hi, dims).astype(NP_TYPES[ty])


CASES = {}


def add(family, name, hlo, args, expected, rtol=None, atol=None, exact=False):
    case = {"name": name, "hlo": hlo, "args": args,
            "expected": expected if isinstance(expected, list) else [expected]}
    if rtol is not None:
        case["rtol"] = rtol
    if atol is not None:
        case["atol"] = atol
    if exact:
        case["exact"] = True
    CASES.setdefault(family, []).append(case)


def one_op_module(name, params, result_shape, op_text, extra_comps=""):
    """params: list of shape strings; op_text uses p0, p1, ... as operand names."""
    lines = [f"HloModule {name}", ""]
    if extra_comps:
        lines.append(extra_comps)
    lines.append("ENTRY main {")
    for i, s in enumerate(params):
        lines.append(f"  p{i} = {s} parameter({i})")
    lines.append(f"  ROOT r = {result_shape} {op_text}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# dot
# ------------------------------------------------------------------------------------------
def round_to_bf16(x):
    """Rounds float64 values to bfloat16 once (ml_dtypes rounds through float32: twice)."""
    out = np.empty(np.shape(x), np.float64)
    for i, v in np.ndenumerate(np.asarray(x, np.float64)):
        if v == 0 or not math.isfinite(v):
            out[i] = v
            continue
        m, e = math.frexp(v)  # v = m * 2^e, 0.5 <= |m| < 1
        out[i] = math.ldexp(round(math.ldexp(m, 8)), e - 8)  # 8 significant bits, ties to even
    return out.astype(ml_dtypes.bfloat16)


def dot_case(name, lt, ls, rt, rs, ot, dn, einsum, lo=-2, hi=2, exact=False, rtol=None,
             tweak=None):
    a = rand(lt, ls, lo, hi)
    b = rand(rt, rs, lo, hi)
    if tweak:
        tweak(a, b)
    a64 = a.astype(np.complex128 if ot.startswith("c") else (np.int64 if ot[0] in "su" else np.float64))
    b64 = b.astype(a64.dtype)
    ref = np.einsum(einsum, a64, b64)
    out = np.asarray(ref).astype(NP_TYPES[ot])  # ints wrap, floats round once
    if ot == "bf16":
        out = round_to_bf16(ref)
        assert not np.array_equal(out.view(np.uint16), np.asarray(ref).astype(ml_dtypes.bfloat16).view(np.uint16)), \
            "pick data where single and double rounding differ"
    hlo = one_op_module(name, [shape_str(lt, ls), shape_str(rt, rs)], shape_str(ot, out.shape),
                        f"dot(p0, p1), {dn}" if dn else "dot(p0, p1)")
    add("dot_conv", name, hlo, [lit(a, lt), lit(b, rt)], lit(out, ot), exact=exact, rtol=rtol)


dot_case("dot_matmul", "f32", [3, 4], "f32", [4, 5], "f32",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij")
dot_case("dot_batch", "f32", [2, 3, 4], "f32", [2, 4, 5], "f32",
         "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
         "bik,bkj->bij")
dot_case("dot_multi_contracting", "f32", [3, 4, 5], "f32", [5, 4, 2], "f32",
         "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}", "ikl,lkj->ij")
dot_case("dot_batch_middle", "f32", [4, 2, 3], "f32", [2, 4, 5], "f32",
         "lhs_batch_dims={1}, lhs_contracting_dims={0}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
         "kbi,bkj->bij")
dot_case("dot_two_batch_free_order", "f64", [2, 3, 5, 4], "f64", [4, 3, 6, 2], "f64",
         "lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={3,1}, rhs_contracting_dims={0}",
         "bcik,kcjb->bcij")
dot_case("dot_vector_vector", "f32", [7], "f32", [7], "f32",
         "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "k,k->")
dot_case("dot_outer", "f32", [3], "f32", [4], "f32", "", "i,j->ij")
dot_case("dot_c64", "c64", [3, 4], "c64", [4, 2], "c64",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij")
dot_case("dot_s8_s32", "s8", [4, 16], "s8", [16, 3], "s32",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij", lo=-128, hi=127,
         exact=True)
dot_case("dot_s32_wraps", "s32", [2, 8], "s32", [8, 2], "s32",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij", lo=-(2**30),
         hi=2**30, exact=True)
dot_case("dot_u8_u32", "u8", [3, 5], "u8", [5, 2], "u32",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij", lo=0, hi=255, exact=True)
dot_case("dot_f16_f32_mixed", "f16", [3, 6], "f32", [6, 2], "f32",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij")
dot_case("dot_bf16_to_f32", "bf16", [4, 64], "bf16", [64, 3], "f32",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij")
# bf16 result: one rounding of the exact sum. Compared exactly: rounding after an f32 sum, or
# per step, would differ in some elements.
def bf16_tie_breaker(a, b):
    # Row 0 . column 0 = 1 + 2^-8 + 2^-30 exactly: one rounding gives 1 + 2^-7; rounding the
    # sum to f32 first (or through f32 accumulation) gives the tie 1 + 2^-8, which rounds to 1.
    a[0, :] = 0
    a[0, :3] = [1.0, 2.0**-8, 2.0**-30]
    b[:3, 0] = 1.0


dot_case("dot_bf16_rounds_once", "bf16", [8, 256], "bf16", [256, 8], "bf16",
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,kj->ij", exact=True,
         tweak=bf16_tie_breaker)


# ragged-dot: jax's own definition (lax.ragged_dot_general, which JAX lowers to dense ops on
# the CPU) against the HLO ragged-dot op.
def ragged_case(name, ls, rs, gs_shape, gs, lc, rc, lb, rb, lr, rg, out_ty="f32"):
    a = rand("f32", ls)
    b = rand("f32", rs)
    g = np.asarray(gs, np.int32).reshape(gs_shape)
    dn = lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=((lc, rc), (lb, rb)), lhs_ragged_dimensions=lr,
        rhs_group_dimensions=rg)
    res = np.asarray(lax.ragged_dot_general(jnp.asarray(a, jnp.float64), jnp.asarray(b, jnp.float64),
                                            jnp.asarray(g), dn))
    attrs = []
    if lb:
        attrs.append(f"lhs_batch_dims={{{','.join(map(str, lb))}}}")
    attrs.append(f"lhs_contracting_dims={{{','.join(map(str, lc))}}}")
    if rb:
        attrs.append(f"rhs_batch_dims={{{','.join(map(str, rb))}}}")
    attrs.append(f"rhs_contracting_dims={{{','.join(map(str, rc))}}}")
    attrs.append(f"lhs_ragged_dims={{{','.join(map(str, lr))}}}")
    if rg:
        attrs.append(f"rhs_group_dims={{{','.join(map(str, rg))}}}")
    hlo = one_op_module(name, [shape_str("f32", ls), shape_str("f32", rs),
                               shape_str("s32", g.shape)], shape_str(out_ty, res.shape),
                        "ragged-dot(p0, p1, p2), " + ", ".join(attrs))
    add("dot_conv", name, hlo, [lit(a, "f32"), lit(b, "f32"), lit(g, "s32")], lit(res, out_ty))


# Mode 1 (ragged non-contracting m): groups of rows, the last row past the groups.
ragged_case("ragged_dot_mode1", [7, 3], [3, 3, 4], [3], [2, 0, 4], [1], [1], [], [], [0], [0])
# Mode 1 with a batch dimension and per-batch group sizes.
ragged_case("ragged_dot_mode1_batch", [2, 5, 3], [3, 2, 3, 4], [2, 3], [1, 2, 2, 3, 0, 1],
            [2], [2], [0], [1], [1], [0])
# Mode 2 (ragged contracting k): one output per group.
ragged_case("ragged_dot_mode2", [4, 6], [6, 5], [3], [1, 3, 1], [1], [0], [], [], [1], [])
# Mode 3 (ragged batch): batch entries past the groups are zero.
ragged_case("ragged_dot_mode3", [4, 2, 3], [4, 3, 2], [2], [1, 2], [2], [1], [0], [0], [0], [])


# ------------------------------------------------------------------------------------------
# convolution (reference: XLA CPU through jax, float64)
# ------------------------------------------------------------------------------------------
def parse_labels(labels):
    lhs, rest = labels.split("_")
    rhs, out = rest.split("->")
    return lhs, rhs, out


def conv_case(name, labels, ls, rs, window, strides, padding, lhs_dil, rhs_dil, fgc=1, bgc=1,
              ty="f32", ot=None, lo=-2, hi=2, rev=None):
    ot = ot or ty
    a = rand(ty, ls, lo, hi)
    b = rand(ty, rs, lo, hi)
    lhs_l, rhs_l, out_l = parse_labels(labels)
    nsp = len(lhs_l) - 2
    # jax dimension numbers use the same letters: lhs 'N'/'C', rhs 'O'/'I'.
    tr = {"b": "N", "f": "C"}
    lhs_spec = "".join(tr.get(c, c) for c in lhs_l)
    rhs_spec = "".join({"o": "O", "i": "I"}.get(c, c) for c in rhs_l)
    out_spec = "".join(tr.get(c, c) for c in out_l)
    # jax wants spatial dims named by letters; map digits to distinct letters.
    letters = "HWD"
    lhs_spec = "".join(letters[int(c)] if c.isdigit() else c for c in lhs_spec)
    rhs_spec = "".join(letters[int(c)] if c.isdigit() else c for c in rhs_spec)
    out_spec = "".join(letters[int(c)] if c.isdigit() else c for c in out_spec)
    wide = np.complex128 if ot.startswith("c") else (np.float64 if ot[0] == "f" else np.int64)
    kernel = b.astype(wide)
    if rev:
        flip_axes = [rhs_l.index(str(i)) for i in range(nsp) if rev[i]]
        kernel = np.flip(kernel, axis=flip_axes)
    if ot.startswith("c"):
        x64 = a.astype(np.complex128)
        k64 = kernel.astype(np.complex128)
    else:
        x64 = a.astype(np.float64)
        k64 = kernel.astype(np.float64)
    dn = lax.conv_dimension_numbers(x64.shape, k64.shape, (lhs_spec, rhs_spec, out_spec))
    res = lax.conv_general_dilated(
        x64, k64, window_strides=strides, padding=padding, lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil, dimension_numbers=dn, feature_group_count=fgc,
        batch_group_count=bgc, precision=lax.Precision.HIGHEST)
    res = np.asarray(res)
    if ot[0] in "su":
        res = np.rint(res).astype(np.int64)
    out = res.astype(NP_TYPES[ot])
    wparts = [f"size={'x'.join(str(s) for s in window)}"]
    if any(s != 1 for s in strides):
        wparts.append(f"stride={'x'.join(str(s) for s in strides)}")
    if any(p != (0, 0) for p in padding):
        wparts.append("pad=" + "x".join(f"{l}_{h}" for l, h in padding))
    if any(d != 1 for d in lhs_dil):
        wparts.append(f"lhs_dilate={'x'.join(str(s) for s in lhs_dil)}")
    if any(d != 1 for d in rhs_dil):
        wparts.append(f"rhs_dilate={'x'.join(str(s) for s in rhs_dil)}")
    if rev and any(rev):
        wparts.append(f"rhs_reversal={'x'.join('1' if r else '0' for r in rev)}")
    attrs = f"window={{{' '.join(wparts)}}}, " if nsp else ""
    attrs += f"dim_labels={labels}"
    if fgc != 1:
        attrs += f", feature_group_count={fgc}"
    if bgc != 1:
        attrs += f", batch_group_count={bgc}"
    hlo = one_op_module(name, [shape_str(ty, ls), shape_str(ty, rs)], shape_str(ot, out.shape),
                        f"convolution(p0, p1), {attrs}")
    add("dot_conv", name, hlo, [lit(a, ty), lit(b, ty)], lit(out, ot), exact=ot[0] in "su" and not ot.startswith("c"))


conv_case("conv2d_nhwc_stride_pad", "b01f_01io->b01f", [2, 7, 6, 3], [3, 2, 3, 4], [3, 2],
          (2, 1), [(1, 2), (0, 1)], (1, 1), (1, 1))
conv_case("conv2d_nchw", "bf01_oi01->bf01", [1, 3, 5, 5], [2, 3, 3, 3], [3, 3], (1, 1),
          [(1, 1), (1, 1)], (1, 1), (1, 1))
conv_case("conv2d_dilations_negative_pad", "b01f_01io->b01f", [1, 6, 7, 2], [2, 3, 2, 3],
          [2, 3], (1, 2), [(-1, 2), (1, -1)], (2, 1), (2, 2))
conv_case("conv2d_transposed_lhs_dilation", "b01f_01io->b01f", [2, 4, 4, 3], [3, 3, 3, 2],
          [3, 3], (1, 1), [(2, 2), (1, 2)], (2, 2), (1, 1))
conv_case("conv2d_grouped", "b01f_01io->b01f", [2, 5, 5, 4], [3, 3, 2, 6], [3, 3], (1, 1),
          [(1, 1), (1, 1)], (1, 1), (1, 1), fgc=2)
conv_case("conv2d_depthwise", "b01f_01io->b01f", [1, 6, 6, 3], [3, 3, 1, 6], [3, 3], (2, 2),
          [(1, 1), (1, 1)], (1, 1), (1, 1), fgc=3)
# Filter-gradient style: batch_group_count equal to the input's "batch" (features of the
# forward pass moved to the batch dimension).
conv_case("conv2d_batch_group", "f01b_i01o->01bf", [3, 5, 5, 4], [3, 3, 3, 4], [3, 3], (1, 1),
          [(1, 1), (1, 1)], (1, 1), (1, 1), bgc=4)
conv_case("conv2d_batch_group_2", "b01f_01io->b01f", [4, 4, 4, 2], [2, 2, 2, 6], [2, 2], (1, 1),
          [(0, 0), (0, 0)], (1, 1), (1, 1), bgc=2)
conv_case("conv1d_reversal", "bf0_oi0->bf0", [2, 2, 9], [3, 2, 4], [4], (2,), [(2, 1)], (1,),
          (1,), rev=[True])
conv_case("conv3d", "b012f_012io->b012f", [1, 4, 5, 3, 2], [2, 2, 2, 2, 3], [2, 2, 2],
          (1, 2, 1), [(0, 1), (1, 0), (1, 1)], (1, 1, 1), (1, 1, 2))
conv_case("conv0d", "bf_io->bf", [3, 5], [5, 4], [], (), [], (), ())
conv_case("conv2d_s8_s32", "b01f_01io->b01f", [1, 4, 4, 3], [2, 2, 3, 2], [2, 2], (1, 1),
          [(0, 0), (0, 0)], (1, 1), (1, 1), ty="s8", ot="s32", lo=-128, hi=127)
conv_case("conv2d_f64", "b01f_01io->b01f", [1, 5, 4, 2], [2, 3, 2, 2], [2, 3], (1, 1),
          [(1, 0), (0, 2)], (1, 1), (1, 1), ty="f64")
conv_case("conv2d_c64_grouped", "b01f_01io->b01f", [2, 4, 4, 4], [2, 2, 2, 4], [2, 2], (1, 1),
          [(1, 0), (0, 1)], (1, 1), (1, 1), fgc=2, ty="c64")


# ------------------------------------------------------------------------------------------
# gather / scatter (reference: XLA CPU through jax)
# ------------------------------------------------------------------------------------------
def jax_index_layout(indices, index_vector_dim):
    """jax's gather/scatter take the index vector in the last dimension (always present)."""
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def gather_case(name, operand, indices, dn_text, jax_dn, slice_sizes, ity="s32", ty="f32",
                ivd=None):
    operand = np.asarray(operand).astype(NP_TYPES[ty])
    indices = np.asarray(indices).astype(NP_TYPES[ity])
    jidx = jax_index_layout(indices, indices.ndim - 1 if ivd is None else ivd)
    res = np.asarray(lax.gather(jnp.asarray(operand), jnp.asarray(jidx), jax_dn, slice_sizes,
                                mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS))
    hlo = one_op_module(name, [shape_str(ty, operand.shape), shape_str(ity, indices.shape)],
                        shape_str(ty, res.shape),
                        f"gather(p0, p1), {dn_text}, slice_sizes={{{','.join(map(str, slice_sizes))}}}")
    add("gather_scatter", name, hlo, [lit(operand, ty), lit(indices, ity)], lit(res, ty),
        exact=True)


GD = lax.GatherDimensionNumbers
gather_case("gather_rows_clamped", np.arange(15).reshape(5, 3), [[1], [4], [7], [-2]],
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1",
            GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 3))
gather_case("gather_implicit_index_dim", np.arange(15).reshape(5, 3), [0, 3, 9],
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1",
            GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 3), ivd=1)
gather_case("gather_2d_windows_clamped", np.arange(42).reshape(6, 7), [[5, 5], [-1, 2], [2, 3]],
            "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1",
            GD(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1)), (3, 3))
gather_case("gather_index_vector_dim0", np.arange(42).reshape(6, 7), [[1, 5, 0], [6, 2, 3]],
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={1,0}, index_vector_dim=0",
            GD(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(1, 0)), (1, 2),
            ity="s64", ivd=0)
gather_case("gather_batching_dims", np.arange(30).reshape(2, 5, 3), [[1, 4, 0, 2], [3, 3, 1, 9]],
            "offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, "
            "operand_batching_dims={0}, start_indices_batching_dims={0}",
            GD(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
               operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 1, 3), ivd=2)
gather_case("gather_offset_dims_first", np.arange(24).reshape(4, 6), [[2], [0]],
            "offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1",
            GD(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,)), (4, 1),
            ity="u32")

REPLACE = """update {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
"""
REPLACE2 = """update2 {
  a0 = f32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  ROOT t = (f32[], s32[]) tuple(b0, b1)
}
"""


def scatter_case(name, operand, indices, updates, dn_text, jax_dn, ity="s32", ivd=None):
    operand = np.asarray(operand, np.float32)
    indices = np.asarray(indices).astype(NP_TYPES[ity])
    updates = np.asarray(updates, np.float32)
    jidx = jax_index_layout(indices, indices.ndim - 1 if ivd is None else ivd)
    res = np.asarray(lax.scatter(jnp.asarray(operand), jnp.asarray(jidx), jnp.asarray(updates),
                                 jax_dn, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS))
    hlo = one_op_module(name, [shape_str("f32", operand.shape), shape_str(ity, indices.shape),
                               shape_str("f32", updates.shape)], shape_str("f32", res.shape),
                        f"scatter(p0, p1, p2), {dn_text}, to_apply=update", REPLACE)
    add("gather_scatter", name, hlo, [lit(operand, "f32"), lit(indices, ity), lit(updates, "f32")],
        lit(res, "f32"), exact=True)


SD = lax.ScatterDimensionNumbers
# Non-unique indices with the (non-commutative) replace combiner: the last update wins.
scatter_case("scatter_replace_duplicates_in_order", np.zeros((5, 2)), [[1], [3], [1], [1]],
             np.arange(8).reshape(4, 2) + 1.0,
             "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
             "index_vector_dim=1",
             SD(update_window_dims=(1,), inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0,)))
# Windows of 3 in an operand of 6: starts 4 and -1 do not fit and are skipped entirely.
scatter_case("scatter_out_of_bounds_windows_skipped", np.zeros(6), [[0], [4], [-1], [3]],
             np.arange(12).reshape(4, 3) + 1.0,
             "update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
             "index_vector_dim=1",
             SD(update_window_dims=(1,), inserted_window_dims=(),
                scatter_dims_to_operand_dims=(0,)))
scatter_case("scatter_2d_point_updates", np.zeros((3, 4)), [[0, 1], [2, 3], [1, 0], [3, 0]],
             [1.0, 2.0, 3.0, 4.0],
             "update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, "
             "index_vector_dim=1",
             SD(update_window_dims=(), inserted_window_dims=(0, 1),
                scatter_dims_to_operand_dims=(0, 1)))
scatter_case("scatter_batching_dims", np.zeros((2, 4, 3)), [[1, 3], [0, 5]],
             np.arange(12).reshape(2, 2, 3) + 1.0,
             "update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
             "index_vector_dim=2, input_batching_dims={0}, scatter_indices_batching_dims={0}",
             SD(update_window_dims=(2,), inserted_window_dims=(1,),
                scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                scatter_indices_batching_dims=(0,)), ivd=2)
scatter_case("scatter_index_vector_dim0", np.zeros((4, 5)), [[0, 3, 2], [4, 1, 2]],
             [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
             "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, "
             "index_vector_dim=0",
             SD(update_window_dims=(1,), inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0, 1)), ivd=0)

# Variadic scatter: two operands updated together.
op0 = np.zeros(5, np.float32)
op1 = np.full(5, -1, np.int32)
idx = np.array([[3], [0], [3]], np.int32)
up0 = np.array([1.5, 2.5, 3.5], np.float32)
up1 = np.array([10, 20, 30], np.int32)
r0 = op0.copy(); r1 = op1.copy()
for i in range(3):
    r0[idx[i, 0]] = up0[i]; r1[idx[i, 0]] = up1[i]
hlo = """HloModule scatter_variadic

%s
ENTRY main {
  p0 = f32[5] parameter(0)
  p1 = s32[5] parameter(1)
  p2 = s32[3,1] parameter(2)
  p3 = f32[3] parameter(3)
  p4 = s32[3] parameter(4)
  ROOT r = (f32[5], s32[5]) scatter(p0, p1, p2, p3, p4), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=update2
}
""" % REPLACE2
add("gather_scatter", "scatter_variadic", hlo,
    [lit(op0, "f32"), lit(op1, "s32"), lit(idx, "s32"), lit(up0, "f32"), lit(up1, "s32")],
    [lit(r0, "f32"), lit(r1, "s32")], exact=True)


# ------------------------------------------------------------------------------------------
# sort / topk
# ------------------------------------------------------------------------------------------
def total_order_key(v):
    b = np.asarray(v, np.float32).view(np.int32).item()
    return -(b & 0x7FFFFFFF) - 1 if b < 0 else b


specials = np.array([3.0, -0.0, np.nan, 1.0, -np.inf, 0.0, -1.0, np.inf, -np.nan, 1.0, 2.0, -0.0],
                    np.float32)
order = sorted(range(len(specials)), key=lambda i: total_order_key(specials[i]))
sort_hlo = """HloModule sort_totalorder

cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}

ENTRY main {
  p0 = f32[12] parameter(0)
  ROOT r = f32[12] sort(p0), dimensions={0}, is_stable=true, to_apply=cmp
}
"""
add("sort", "sort_totalorder_specials", sort_hlo, [lit(specials, "f32")],
    lit(specials[order], "f32"), exact=True)

keys = np.array([[3, 1, 2, 1, 3, 2], [5, 5, 5, 4, 4, 6]], np.float32)
vals = np.array([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]], np.int32)
sk = np.zeros_like(keys); sv = np.zeros_like(vals)
for r in range(2):
    o = sorted(range(6), key=lambda i: -keys[r, i])  # stable, descending
    sk[r] = keys[r, o]; sv[r] = vals[r, o]
add("sort", "sort_two_operands_gt_stable", """HloModule sort_two

cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT
}

ENTRY main {
  p0 = f32[2,6] parameter(0)
  p1 = s32[2,6] parameter(1)
  ROOT r = (f32[2,6], s32[2,6]) sort(p0, p1), dimensions={1}, is_stable=true, to_apply=cmp
}
""", [lit(keys, "f32"), lit(vals, "s32")], [lit(sk, "f32"), lit(sv, "s32")], exact=True)

x = np.array([[4, 1, 3], [2, 2, 9], [0, 7, 1], [2, 5, 5]], np.int32)
add("sort", "sort_dim0_swapped_params", """HloModule sort_dim0

cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT lt = pred[] compare(b, a), direction=LT
}

ENTRY main {
  p0 = s32[4,3] parameter(0)
  ROOT r = s32[4,3] sort(p0), dimensions={0}, to_apply=cmp
}
""", [lit(x, "s32")], lit(-np.sort(-x, axis=0, kind="stable"), "s32"), exact=True)

u = np.array([5, 4000000000, 0, 3, 2147483648], np.uint32)
add("sort", "sort_u32_unsigned", """HloModule sort_u32

cmp {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY main {
  p0 = u32[5] parameter(0)
  ROOT r = u32[5] sort(p0), dimensions={0}, to_apply=cmp
}
""", [lit(u, "u32")], lit(np.sort(u), "u32"), exact=True)

tk = np.array([[1.0, 3.0, 3.0, -1.0, 2.0, 3.0, np.nan, 0.0],
               [-0.0, 0.0, 5.0, 5.0, -np.inf, 4.0, 4.0, 1.0]], np.float32)
tv, ti = jax.jit(lambda a: lax.top_k(a, 4))(jnp.asarray(tk))
add("sort", "topk_largest_ties_nan", """HloModule topk

ENTRY main {
  p0 = f32[2,8] parameter(0)
  ROOT r = (f32[2,4], s32[2,4]) topk(p0), k=4, largest=true
}
""", [lit(tk, "f32")], [lit(np.asarray(tv), "f32"), lit(np.asarray(ti), "s32")], exact=True)

# Smallest: ascending total order, ties by lower index.
tk2 = np.array([3, 1, 2, 1, 0, 2, 1], np.int32)
o = sorted(range(7), key=lambda i: tk2[i])[:3]
add("sort", "topk_smallest_s32", """HloModule topk_small

ENTRY main {
  p0 = s32[7] parameter(0)
  ROOT r = (s32[3], s32[3]) topk(p0), k=3, largest=false
}
""", [lit(tk2, "s32")], [lit(tk2[o], "s32"), lit(np.array(o), "s32")], exact=True)

# The custom-call form of XLA's TopkRewriter (as JAX's CPU dumps show it).
add("sort", "topk_custom_call", """HloModule topk_cc

cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT, type=TOTALORDER
}

ENTRY main {
  p0 = f32[2,8] parameter(0)
  ROOT r = (f32[2,4], s32[2,4]) custom-call(p0), custom_call_target="TopK", called_computations={cmp}
}
""", [lit(tk, "f32")], [lit(np.asarray(tv), "f32"), lit(np.asarray(ti), "s32")], exact=True)


# The module as XLA's CPU pipeline leaves it (jax ... .compile().as_text()): TopK custom call
# whose comparator is the ComparisonExpander's bit-level total-order GT.
add("sort", "topk_xla_cpu_compiled_module",
    jax.jit(lambda a: lax.top_k(a, 4)).lower(jnp.asarray(tk)).compile().as_text(),
    [lit(tk, "f32")], [lit(np.asarray(tv), "f32"), lit(np.asarray(ti), "s32")], exact=True)

tkb = np.array([[1.0, 3.0, 3.0, -1.0, 2.0, 3.0, np.nan, 0.0],
                [-0.0, 0.0, 5.0, 5.0, -np.inf, 4.0, 4.0, 1.0]], ml_dtypes.bfloat16)
tvb, tib = jax.jit(lambda a: lax.top_k(a, 3))(jnp.asarray(tkb))
add("sort", "topk_bf16", """HloModule topk_bf16

ENTRY main {
  p0 = bf16[2,8] parameter(0)
  ROOT r = (bf16[2,3], s32[2,3]) topk(p0), k=3, largest=true
}
""", [lit(tkb, "bf16")], [lit(np.asarray(tvb), "bf16"), lit(np.asarray(tib), "s32")], exact=True)


# ------------------------------------------------------------------------------------------
# fft (reference: numpy.fft in float64)
# ------------------------------------------------------------------------------------------
def fft_case(name, fft_type, in_ty, dims, lengths, out_ty, rtol=None, atol=None):
    x = rand(in_ty, dims, -1, 1)
    x64 = x.astype(np.complex128 if in_ty.startswith("c") else np.float64)
    axes = tuple(range(len(dims) - len(lengths), len(dims)))
    if fft_type == "FFT":
        ref = np.fft.fftn(x64, s=lengths, axes=axes)
    elif fft_type == "IFFT":
        ref = np.fft.ifftn(x64, s=lengths, axes=axes)
    elif fft_type == "RFFT":
        ref = np.fft.rfftn(x64, s=lengths, axes=axes)
    else:
        ref = np.fft.irfftn(x64, s=lengths, axes=axes)
    out = np.asarray(ref).astype(NP_TYPES[out_ty])
    hlo = one_op_module(name, [shape_str(in_ty, dims)], shape_str(out_ty, out.shape),
                        f"fft(p0), fft_type={fft_type}, fft_length={{{','.join(map(str, lengths))}}}")
    add("misc", name, hlo, [lit(x, in_ty)], lit(out, out_ty), rtol=rtol, atol=atol)


fft_case("fft_8", "FFT", "c64", [3, 8], [8], "c64")
fft_case("fft_5_bluestein_small", "FFT", "c128", [2, 5], [5], "c128")
fft_case("fft_97_bluestein", "FFT", "c128", [97], [97], "c128")
fft_case("ifft_12", "IFFT", "c64", [2, 12], [12], "c64")
fft_case("fft2d_4x6", "FFT", "c64", [2, 4, 6], [4, 6], "c64")
fft_case("fft3d_2x3x4", "IFFT", "c128", [2, 3, 4], [2, 3, 4], "c128")
fft_case("rfft_10", "RFFT", "f32", [3, 10], [10], "c64")
fft_case("rfft_7", "RFFT", "f64", [7], [7], "c128")
fft_case("rfft2d_4x6", "RFFT", "f32", [2, 4, 6], [4, 6], "c64")
fft_case("irfft_10", "IRFFT", "c64", [3, 6], [10], "f32")
fft_case("irfft_9", "IRFFT", "c128", [2, 5], [9], "f64")
fft_case("irfft2d_4x6", "IRFFT", "c64", [2, 4, 4], [4, 6], "f32")
# Long transforms (4096, 4095) are checked analytically in misc_test.cc.


# ------------------------------------------------------------------------------------------
# cholesky / triangular-solve (reference: numpy float64)
# ------------------------------------------------------------------------------------------
def spd(n, batch=(), complex_=False):
    a = RNG.uniform(-1, 1, batch + (n, n))
    if complex_:
        a = a + 1j * RNG.uniform(-1, 1, batch + (n, n))
    m = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return m


def garble(m, keep_lower):
    """Fills the triangle the op must not read with junk."""
    m = m.copy()
    n = m.shape[-1]
    iu = np.triu_indices(n, 1) if keep_lower else np.tril_indices(n, -1)
    m[..., iu[0], iu[1]] = 1e6
    return m


for lower in (True, False):
    for ty, cplx in (("f32", False), ("f64", False), ("c64", True)):
        a = spd(4, (2,), cplx)
        l = np.linalg.cholesky(a)
        ref = l if lower else np.conj(np.swapaxes(l, -1, -2))
        name = f"cholesky_{'lower' if lower else 'upper'}_{ty}"
        hlo = one_op_module(name, [shape_str(ty, a.shape)], shape_str(ty, a.shape),
                            f"cholesky(p0), lower={'true' if lower else 'false'}")
        add("misc", name, hlo, [lit(garble(a, lower), ty)], lit(ref, ty), atol=1e-5)

# Not positive definite: the whole matrix becomes NaN (batch element 1 only).
a = spd(3, (2,))
a[1] = -a[1]
ref = np.linalg.cholesky(a[:1])
out = np.full(a.shape, np.nan)
out[0] = ref[0]
add("misc", "cholesky_not_pd_is_nan", one_op_module(
    "cholesky_not_pd", ["f64[2,3,3]"], "f64[2,3,3]", "cholesky(p0), lower=true"),
    [lit(a, "f64")], lit(out, "f64"))


def trisolve_case(name, ty, a_dims, b_dims, left, lower, unit, trans):
    n = a_dims[-1]
    cplx = ty.startswith("c")
    a = RNG.uniform(-1, 1, a_dims) + (1j * RNG.uniform(-1, 1, a_dims) if cplx else 0)
    a = a + 3 * np.eye(n)
    b = RNG.uniform(-1, 1, b_dims) + (1j * RNG.uniform(-1, 1, b_dims) if cplx else 0)
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        idx = np.arange(n)
        t[..., idx, idx] = 1
    if trans == "TRANSPOSE":
        t = np.swapaxes(t, -1, -2)
    elif trans == "ADJOINT":
        t = np.conj(np.swapaxes(t, -1, -2))
    if left:
        x = np.linalg.solve(t, b)
    else:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    attrs = (f"left_side={'true' if left else 'false'}, lower={'true' if lower else 'false'}, "
             f"unit_diagonal={'true' if unit else 'false'}, transpose_a={trans}")
    hlo = one_op_module(name, [shape_str(ty, a_dims), shape_str(ty, b_dims)],
                        shape_str(ty, b_dims), f"triangular-solve(p0, p1), {attrs}")
    # The ignored triangle holds junk: the op must not read it.
    a_junk = a.copy()
    iu = np.triu_indices(n, 1) if lower else np.tril_indices(n, -1)
    a_junk[..., iu[0], iu[1]] = 1e6
    if unit:
        a_junk[..., np.arange(n), np.arange(n)] = 1e6
    add("misc", name, hlo, [lit(a_junk, ty), lit(b, ty)], lit(x, ty), atol=1e-5)


trisolve_case("trisolve_left_lower", "f32", [4, 4], [4, 3], True, True, False, "NO_TRANSPOSE")
trisolve_case("trisolve_left_upper_transpose", "f64", [2, 4, 4], [2, 4, 2], True, False, False,
              "TRANSPOSE")
trisolve_case("trisolve_right_lower_unit", "f32", [3, 3], [2, 3], False, True, True,
              "NO_TRANSPOSE")
trisolve_case("trisolve_right_upper_adjoint_c64", "c64", [2, 3, 3], [2, 4, 3], False, False,
              False, "ADJOINT")
trisolve_case("trisolve_left_lower_adjoint_c128", "c128", [3, 3], [3, 2], True, True, False,
              "ADJOINT")


# ------------------------------------------------------------------------------------------
# batch norm (reference: numpy float64)
# ------------------------------------------------------------------------------------------
x = rand("f32", [2, 3, 4, 5])
scale = rand("f32", [4], 0.5, 1.5)
offset = rand("f32", [4])
eps = 0.001
axes = (0, 1, 3)
x64 = x.astype(np.float64)
mean = x64.mean(axis=axes)
var = x64.var(axis=axes)
bshape = (1, 1, 4, 1)
y = (x64 - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + np.float32(eps)) * \
    scale.reshape(bshape) + offset.reshape(bshape)
add("misc", "batch_norm_training", """HloModule bn_train

ENTRY main {
  p0 = f32[2,3,4,5] parameter(0)
  p1 = f32[4] parameter(1)
  p2 = f32[4] parameter(2)
  ROOT r = (f32[2,3,4,5], f32[4], f32[4]) batch-norm-training(p0, p1, p2), epsilon=0.001, feature_index=2
}
""", [lit(x, "f32"), lit(scale, "f32"), lit(offset, "f32")],
    [lit(y, "f32"), lit(mean, "f32"), lit(var, "f32")])

m_in = rand("f32", [4])
v_in = rand("f32", [4], 0.5, 2.0)
y = (x64 - m_in.reshape(bshape)) / np.sqrt(v_in.reshape(bshape) + np.float32(eps)) * \
    scale.reshape(bshape) + offset.reshape(bshape)
add("misc", "batch_norm_inference", """HloModule bn_inf

ENTRY main {
  p0 = f32[2,3,4,5] parameter(0)
  p1 = f32[4] parameter(1)
  p2 = f32[4] parameter(2)
  p3 = f32[4] parameter(3)
  p4 = f32[4] parameter(4)
  ROOT r = f32[2,3,4,5] batch-norm-inference(p0, p1, p2, p3, p4), epsilon=0.001, feature_index=2
}
""", [lit(x, "f32"), lit(scale, "f32"), lit(offset, "f32"), lit(m_in, "f32"), lit(v_in, "f32")],
    lit(y, "f32"))

dy = rand("f32", [2, 3, 4, 5]).astype(np.float64)
ve = v_in.astype(np.float64).reshape(bshape) + np.float32(eps)
xc = x64 - m_in.reshape(bshape)
n = x.size / 4
doff = dy.sum(axis=axes)
dscale = (dy * xc).sum(axis=axes) / np.sqrt(ve.reshape(-1))
dx = scale.reshape(bshape) / np.sqrt(ve) * (dy - doff.reshape(bshape) / n -
                                            xc * (dy * xc).sum(axis=axes).reshape(bshape) / (n * ve))
add("misc", "batch_norm_grad", """HloModule bn_grad

ENTRY main {
  p0 = f32[2,3,4,5] parameter(0)
  p1 = f32[4] parameter(1)
  p2 = f32[4] parameter(2)
  p3 = f32[4] parameter(3)
  p4 = f32[2,3,4,5] parameter(4)
  ROOT r = (f32[2,3,4,5], f32[4], f32[4]) batch-norm-grad(p0, p1, p2, p3, p4), epsilon=0.001, feature_index=2
}
""", [lit(x, "f32"), lit(scale, "f32"), lit(m_in, "f32"), lit(v_in, "f32"), lit(dy, "f32")],
    [lit(dx, "f32"), lit(dscale, "f32"), lit(doff, "f32")])


# ------------------------------------------------------------------------------------------
# LAPACK custom calls of JAX's CPU lowering (reference: LAPACK itself, through scipy)
# ------------------------------------------------------------------------------------------
from scipy.linalg import lapack as L  # noqa: E402

CC = ('custom_call_target="{t}", api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}')


def lapack_module(name, params, result, target, cfg=""):
    return one_op_module(name, params, result,
                         "custom-call(" + ", ".join(f"p{i}" for i in range(len(params))) + "), " +
                         CC.format(t=target, cfg=cfg))


for ty, pfx, lower in (("f64", "d", True), ("c128", "z", False), ("f32", "s", True)):
    a = spd(4, (), ty.startswith("c"))
    a = garble(a, lower)  # the triangle not read holds junk, which must come back unchanged
    c, info = getattr(L, pfx + "potrf")(a, lower=1 if lower else 0, clean=0)
    name = f"lapack_potrf_{'lower' if lower else 'upper'}_{ty}"
    add("misc", name, lapack_module(name, [shape_str(ty, [4, 4])],
                                    f"({shape_str(ty, [4, 4])}, s32[])", f"lapack_{pfx}potrf_ffi",
                                    f"uplo = {76 if lower else 85} : ui8"),
        [lit(a, ty)], [lit(c, ty), lit(np.int32(info), "s32")], atol=1e-5)

bad = spd(3)
bad[2, 2] = -1.0
c, info = L.dpotrf(bad, lower=1, clean=0)
add("misc", "lapack_potrf_info_not_pd", """HloModule potrf_bad

ENTRY main {
  p0 = f64[3,3] parameter(0)
  r = (f64[3,3], s32[]) custom-call(p0), custom_call_target="lapack_dpotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  ROOT i = s32[] get-tuple-element(r), index=1
}
""", [lit(bad, "f64")], lit(np.int32(info), "s32"), exact=True)

for ty, pfx, dims in (("f64", "d", (5, 5)), ("c128", "z", (3, 4)), ("f32", "s", (4, 3))):
    a = RNG.uniform(-1, 1, dims) + (1j * RNG.uniform(-1, 1, dims) if ty.startswith("c") else 0)
    lu, piv, info = getattr(L, pfx + "getrf")(a)
    k = min(dims)
    name = f"lapack_getrf_{ty}_{dims[0]}x{dims[1]}"
    add("misc", name, lapack_module(name, [shape_str(ty, dims)],
                                    f"({shape_str(ty, dims)}, s32[{k}], s32[])",
                                    f"lapack_{pfx}getrf_ffi"),
        [lit(a, ty)], [lit(lu, ty), lit(piv + 1, "s32"), lit(np.int32(info), "s32")], atol=1e-5)

sing = np.array([[0.0, 2.0, 1.0], [0.0, 4.0, 2.0], [0.0, 1.0, 3.0]])
lu, piv, info = L.dgetrf(sing)
add("misc", "lapack_getrf_singular", lapack_module(
    "getrf_singular", ["f64[3,3]"], "(f64[3,3], s32[3], s32[])", "lapack_dgetrf_ffi"),
    [lit(sing, "f64")], [lit(lu, "f64"), lit(piv + 1, "s32"), lit(np.int32(info), "s32")])

for ty, pfx, qpfx, dims in (("f64", "d", "dor", (6, 4)), ("c128", "z", "zun", (5, 3)),
                            ("f32", "s", "sor", (3, 3))):
    a = RNG.uniform(-1, 1, dims) + (1j * RNG.uniform(-1, 1, dims) if ty.startswith("c") else 0)
    qr, tau, _, info = getattr(L, pfx + "geqrf")(a)
    k = min(dims)
    name = f"lapack_geqrf_{ty}"
    add("misc", name, lapack_module(name, [shape_str(ty, dims)],
                                    f"({shape_str(ty, dims)}, {shape_str(ty, [k])})",
                                    f"lapack_{pfx}geqrf_ffi"),
        [lit(a, ty)], [lit(qr, ty), lit(tau, ty)], atol=1e-5)
    q, _, info = getattr(L, qpfx + "gqr")(qr, tau)
    name = f"lapack_{qpfx[1:]}gqr_{ty}"
    add("misc", name, lapack_module(name, [shape_str(ty, dims), shape_str(ty, [k])],
                                    shape_str(ty, dims), f"lapack_{pfx}{qpfx[1:]}gqr_ffi"),
        [lit(qr, ty), lit(tau, ty)], lit(q, ty), atol=1e-5)

# trsm, right side, conjugate transpose, unit diagonal: x op(a) = b.
a = RNG.uniform(-1, 1, (3, 3)) + 1j * RNG.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)
b = RNG.uniform(-1, 1, (2, 3)) + 1j * RNG.uniform(-1, 1, (2, 3))
t = np.triu(a)
np.fill_diagonal(t, 1)
x = b @ np.linalg.inv(np.conj(t.T))
add("misc", "lapack_trsm_right_upper_adjoint_unit", lapack_module(
    "trsm", ["c128[3,3]", "c128[2,3]"], "c128[2,3]", "lapack_ztrsm_ffi",
    "diag = 85 : ui8, side = 82 : ui8, trans_x = 67 : ui8, uplo = 85 : ui8"),
    [lit(a, "c128"), lit(b, "c128")], lit(x, "c128"), atol=1e-9)


for family, cases in CASES.items():
    path = os.path.join(HERE, f"{family}_cases.json")
    with open(path, "w") as f:
        json.dump({"generator": "gen_eval_b_cases.py", "jax_version": jax.__version__,
                   "cases": cases}, f, separators=(",", ":"))
    print(f"{path}: {len(cases)} cases")
