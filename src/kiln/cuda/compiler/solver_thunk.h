// The linear-algebra custom calls JAX emits -- its cuSOLVER / hipSOLVER / cuBLAS targets
// (cusolver_*_ffi, cu_lu_pivots_to_permutation, cu_cholesky_update_ffi, their hip spellings)
// and its LAPACK targets (lapack_?*_ffi, a module dumped on a CPU machine) -- as SolverThunks
// on cuSOLVER and cuBLAS (libs/solver.h), with the evaluator's contracts (eval/gpu_solver.cc,
// eval/lapack.cc, eval/lapack_eig.cc, eval/lapack_reduce.cc).
//
// Note [Solver custom calls]
//   Target                                    op             attributes (backend_config)
//   lapack_?potrf_ffi, {cu,hip}solver_potrf   kPotrf         uplo 'L'/'U' | lower
//   lapack_?getrf_ffi, {cu,hip}solver_getrf   kGetrf
//   lapack_?geqrf_ffi, {cu,hip}solver_geqrf   kGeqrf
//   lapack_?orgqr/ungqr, {cu,hip}solver_orgqr kOrgqr
//   lapack_?syevd/heevd, {cu,hip}solver_syevd kSyevd         uplo | lower (mode, algorithm:
//                                                            vectors are always computed)
//   lapack_?sytrd/hetrd, {cu,hip}solver_sytrd kSytrd         uplo | lower
//   lapack_?gesdd/gesvd_ffi                   kGesvd, kUVt   mode 'A'/'S'/'N'
//   {cu,hip}solver_gesvd_ffi                  kGesvd         compute_uv, transposed (kVtU)
//   {cu,hip}solver_gesvdj_ffi                 kGesvdj, kUV   compute_uv
//   lapack_?trsm_ffi                          kTrsm          side, uplo, trans_x, diag
//   {cu,hip}solver_syrk_ffi                   kSyrk          transpose
//   {cu,hip}_lu_pivots_to_permutation         kPivotsToPermutation
//   {cu,hip}_cholesky_update_ffi              kCholeskyUpdate (real types)
//   lapack_?gtsv_ffi                          kGtsv, gtsv_lapack (five results)
//   {cu,hip}sparse_gtsv2_ffi                  kGtsv (x only)
//   Shapes, element types and attributes the evaluator's kernels would reject, and what the
//   plan cannot run (complex Cholesky updates, 64-bit sizes), are Unimplemented: the thunk
//   emitter runs those on the host evaluator, naming the reason. Not here, so on the host:
//   geqp3 / cuhybrid_geqp3 (JAX's own GPU lowering runs it on the host: cuSOLVER has no
//   column-pivoted QR), geev / cuhybrid_eig (likewise on the host in JAX; cuSOLVER's Xgeev
//   orders and normalizes eigenpairs differently from LAPACK), gees and gehrd (no cuSOLVER
//   routine; CPU lowerings only). See docs/gpu.md.
//
// Note [Solver calls and CUDA graphs]
//   An executable is captured into a CUDA graph on its second run unless a thunk SyncsHost()
//   (Note [CUDA graph capture] in gpu_executable.h). A solver thunk of syevd, gesvd or gesvdj
//   says it does (libs::SolverCapturable): on the H200 the capturing run of such executables
//   failed (cuSOLVER's iterative eigen/SVD routines wait for the device inside), so they run
//   eagerly, as XLA keeps cuSOLVER calls out of its command buffers. The second runs of the
//   other ops' executables passed there. (The failures' messages were not retrieved, and this
//   rule was not re-run on a device.)
//
// A plan that cannot be created at Initialize because cuSOLVER or cuBLAS is absent (NotFound)
// or turns the problem down (Unimplemented / InvalidArgument) runs the host fallback instead,
// with a warning naming why; any other failure is an error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/cuda/libs/solver.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cuda {

// Whether `instr` is one of the custom calls above (by target name only).
bool IsSolverCall(const HloInstruction& instr);

// The plan's descriptor for a solver call; Unimplemented (with the reason) for what runs on the
// host.
StatusOr<libs::SolverDesc> SolverDescForCall(const HloInstruction& instr);

class SolverThunk : public GpuThunk {
 public:
  // `inputs`: one slice per operand; `outputs`: one per array leaf of the result (the desc's
  // order, libs/solver.h).
  SolverThunk(std::string name, libs::SolverDesc desc, std::vector<BufferSlice> inputs,
              std::vector<BufferSlice> outputs, std::unique_ptr<GpuThunk> fallback);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  // Note [Solver calls and CUDA graphs]
  bool SyncsHost() const override { return use_fallback_ || !libs::SolverCapturable(desc_.op); }
  uint64_t workspace_bytes() const override;
  std::string ToString() const override;
  const libs::SolverDesc& desc() const { return desc_; }
  bool uses_fallback() const { return use_fallback_; }

 private:
  libs::SolverDesc desc_;
  std::vector<BufferSlice> inputs_, outputs_;
  std::unique_ptr<GpuThunk> fallback_;
  bool use_fallback_ = false;
  std::unique_ptr<libs::SolverPlan> plan_;
};

}  // namespace kiln::cuda
