// What `kiln compile --stats` prints about fusion and memory (the CLI wires it in):
//
//   kernels: 21 instructions -> 3 kernels (2 fusions: 1 loop, 1 input (1 multi-output); 1 other)
//     main.3: 21 instructions -> 3 kernels
//       %fusion    kInput  multi-output  6 ops  reduce,exponential,...  f32[64,256] x2
//       ...
//   attention: 1 fused                     (calls of passes/attention_rewriter.h, when any)
//     %attention  bf16 [16] q 4096 kv 4096 d 64 causal(0) scale 0.125 softmax f32
//   memory: arguments 64.00 KiB, outputs 64.00 KiB, constants 4 B, temp 64.25 KiB
//           (peak 64.25 KiB), in place / donated 0 B
#pragma once

#include <cstdint>
#include <string>

#include "kiln/hlo/module.h"

namespace kiln {

class BufferAssignment;

// Kernel-level counts of a module's (or one computation's) sequential computations.
// "instructions" counts everything that computes, fused or not (parameters, constants, tuples,
// get-tuple-elements, bitcasts, row-major reshapes and other views left out); "kernels" counts
// what a backend launches: fusions plus unfused computing instructions (control flow -- while,
// conditional, call -- is counted under `control` instead).
struct KernelCounts {
  int64_t instructions = 0;
  int64_t kernels = 0;
  int64_t fusions = 0;
  int64_t loop = 0, input = 0, output = 0, custom = 0;
  int64_t multi_output = 0;
  int64_t fused_instructions = 0;  // computing instructions inside fusions
  int64_t other = 0;               // unfused kernels
  int64_t control = 0;             // while / conditional / call
  void Add(const KernelCounts& o);
  // "2 loop, 1 input (1 multi-output), 3 other"
  std::string ToString() const;
};

// True for instructions that launch no kernel (views and plumbing; see KernelCounts).
bool IsKernelFree(const HloInstruction& instr);

KernelCounts CountKernels(const HloComputation& computation);
// Over the module's sequential computations (while bodies, branches and the entry).
KernelCounts CountKernels(const HloModule& module);

// The per-computation fusion table (header line, one line per computation, one per fusion).
std::string FusionSummary(const HloModule& module);

// Fusion summary followed by the memory statistics of `assignment` (nullptr: fusion only).
std::string CompileSummary(const HloModule& module, const BufferAssignment* assignment);

}  // namespace kiln
