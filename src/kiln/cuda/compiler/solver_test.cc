// Which linear-algebra custom calls become solver thunks (Note [Solver custom calls] in
// solver_thunk.h) and with which descriptors; runs anywhere (label cpu).
#include <gtest/gtest.h>

#include "kiln/cuda/compiler/solver_thunk.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"

namespace kiln::cuda {
namespace {

using libs::SolverOp;
using libs::SvdLayout;

// The descriptor of the custom call `call` (an instruction of the entry named "c") in a module
// whose entry takes `params` and has `call` as its root.
StatusOr<libs::SolverDesc> DescOf(const std::string& params, const std::string& call) {
  const std::string text = "HloModule m\nENTRY e {\n" + params + "  ROOT c = " + call + "\n}\n";
  auto m = ParseHloModule(text);
  if (!m.ok()) return m.status();
  const HloInstruction* c = (*m)->entry_computation()->root_instruction();
  EXPECT_TRUE(IsSolverCall(*c)) << call;
  return SolverDescForCall(*c);
}

TEST(SolverThunkTest, Targets) {
  auto d = DescOf("  a = f32[2,5,5] parameter(0)\n",
                  "(f32[2,5,5], s32[2]) custom-call(a), custom_call_target=\"cusolver_potrf_ffi\", "
                  "api_version=API_VERSION_TYPED_FFI, backend_config={lower = false}");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->op, SolverOp::kPotrf);
  EXPECT_EQ(d->batch, 2);
  EXPECT_EQ(d->n, 5);
  EXPECT_FALSE(d->lower);

  d = DescOf("  a = c64[6,4] parameter(0)\n",
             "(c64[6,4], f32[4], c64[6,4], c64[4,4], s32[]) custom-call(a), custom_call_target=\"lapack_cgesdd_ffi\", "
             "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 83 : ui8}");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->op, SolverOp::kGesvd);
  EXPECT_EQ(d->svd_layout, SvdLayout::kUVt);
  EXPECT_TRUE(d->compute_uv);
  EXPECT_EQ(d->x_cols, 4);

  d = DescOf("  a = f32[4,6] parameter(0)\n",
             "(f32[4,6], f32[4], f32[4,6], f32[4,4], s32[]) custom-call(a), custom_call_target=\"cusolver_gesvd_ffi\", "
             "api_version=API_VERSION_TYPED_FFI, backend_config={compute_uv = true, full_matrices = false, transposed = true}");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->svd_layout, SvdLayout::kVtU);

  d = DescOf("  a = f64[2,3,3] parameter(0)\n  b = f64[2,3,4] parameter(1)\n",
             "f64[2,3,4] custom-call(a, b), custom_call_target=\"lapack_dtrsm_ffi\", api_version=API_VERSION_TYPED_FFI, "
             "backend_config={diag = 85 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8}");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->op, SolverOp::kTrsm);
  EXPECT_EQ(d->batch, 2);
  EXPECT_TRUE(d->left_side);
  EXPECT_FALSE(d->lower);
  EXPECT_TRUE(d->unit_diagonal);
  EXPECT_EQ(d->transpose, 1);
  EXPECT_EQ(d->k, 3);

  d = DescOf("  p = s32[2,4] parameter(0)\n",
             "s32[2,6] custom-call(p), custom_call_target=\"hip_lu_pivots_to_permutation\", "
             "api_version=API_VERSION_TYPED_FFI");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->op, SolverOp::kPivotsToPermutation);
  EXPECT_EQ(d->k, 4);
  EXPECT_EQ(d->m, 6);
}

TEST(SolverThunkTest, WhatStaysOnTheHost) {
  // Complex Cholesky updates: Unimplemented, with the reason.
  auto d = DescOf("  r = c64[4,4] parameter(0)\n  w = c64[4] parameter(1)\n",
                  "(c64[4,4], c64[4]) custom-call(r, w), custom_call_target=\"cu_cholesky_update_ffi\", "
                  "api_version=API_VERSION_TYPED_FFI");
  EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented) << d.status().ToString();
  // A result that does not fit the contract.
  d = DescOf("  a = f32[5,5] parameter(0)\n",
             "(f32[5,5], s32[5]) custom-call(a), custom_call_target=\"cusolver_potrf_ffi\", api_version=API_VERSION_TYPED_FFI");
  EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented) << d.status().ToString();
  // Not solver calls at all: the hybrid (host) targets, eig, gtsv.
  for (const char* target : {"cuhybrid_geqp3", "cuhybrid_eig_real", "lapack_sgeev_ffi", "lapack_sgees_ffi",
                             "lapack_sgehrd_ffi", "lapack_sgeqp3_ffi"}) {
    auto m = ParseHloModule(std::string("HloModule m\nENTRY e {\n  a = f32[4,4] parameter(0)\n  ROOT c = f32[4,4] "
                                        "custom-call(a), custom_call_target=\"") + target + "\"\n}\n");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_FALSE(IsSolverCall(*(*m)->entry_computation()->root_instruction())) << target;
  }
}

}  // namespace
}  // namespace kiln::cuda
