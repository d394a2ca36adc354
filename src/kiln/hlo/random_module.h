// Random valid HLO modules for differential fuzzing: a random DAG over parameters of small
// random shapes, printed as HLO text (a failure is a reproducible .hlo file).
//
//   RandomModule m = GenerateRandomModule(/*seed=*/17);          // deterministic in the seed
//   RandomModule f = GenerateRandomModuleFromBytes(data, size);  // libFuzzer's bytes drive it
//   // m.text parses and verifies; m.parameters are the entry's parameter shapes.
//
// Every choice -- element types (f32 f16 bf16 f64 c64 s32 s8 u8 pred), shapes (rank 0-4, dims
// 0-9), opcodes and attributes -- is drawn from one source of randomness, and each instruction
// is kept only when kiln's shape inference (shape_inference.h) accepts it, so the module
// verifies. What it draws from: elementwise unary/binary/compare/select/clamp, convert,
// bitcast-convert, broadcast, reshape, transpose, slice, dynamic-slice, dynamic-update-slice,
// concatenate, pad (negative edges too), reverse, iota, reduce (add/mul/max/min/and/or over
// random dimensions), reduce-window, dot (random batch/contracting dimensions), convolution
// (1-2 spatial dimensions, NHWC/NCHW, windows, dilations, feature groups), gather and
// scatter (simple forms), sort (one operand, or a key and a payload, stable), tuple /
// get-tuple-element, while with a known trip count (0-4; scans among them) and conditional
// (pred or s32 index), call, map, argmax/argmin (variadic reduce), reduce-precision; bodies,
// branches and callees are generated the same way. Random layouts now and then.
//
// Note [Comparable by construction]
//   The module is meant to be run on the evaluator and on a backend with the same inputs and
//   compared under BackendTolerance (eval/tolerance.h): the backend may sum in another order,
//   fuse, vectorize transcendentals. So the generator keeps, per value, whether it is *exact*
//   (bit-identical on every correct backend: inputs, integer arithmetic, data movement, max/min,
//   converts and compares of exact values, floor/ceil/sign of exact floats) and a bound on its
//   magnitude. What is discontinuous in its input -- compare, floor/ceil/round/sign, convert to
//   an integer or pred, convert to a wider float (it would be compared at the wider type's
//   tolerance), bitcast-convert, is-finite, sort keys with a payload, indices of
//   dynamic-slice/gather/scatter, conditional indices, float division (both sides: 0/0 and x/0 must not depend on rounding),
//   sqrt/log/rsqrt/power/atan2/remainder -- takes
//   exact operands only; exponential takes operands bounded by 8, so that a disagreement beyond
//   the tolerance is a bug, not rounding. A bound of 1e30 means "may be infinite or NaN": IEEE
//   leaves the sign of a NaN that arithmetic makes open, so such values are never sort keys,
//   TOTALORDER compare operands or bitcast-convert operands, and never take part in
//   arithmetic that could turn rounding into inf - inf (MayOverflow). Scatter combines with add/max/min (never assignment:
//   duplicate indices would make the order matter). Integer overflow is fine: HLO defines it
//   (two's complement wrap, x/0 = -1, ...).
//
// Arrays are capped at `max_elements` elements and loops at 4 trips, so every module runs in
// milliseconds on the evaluator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/hlo/shape.h"

namespace kiln {

struct RandomModuleOptions {
  int max_instructions = 20;   // instructions drawn for the entry (besides parameters)
  int max_body_instructions = 4;  // per while body / conditional branch
  int max_parameters = 6;
  int max_rank = 4;
  int64_t max_dim = 9;
  int64_t max_elements = 512;  // per array
  // A quarter of the modules draw some large dimensions (15-129: vector tails, tiling, row
  // splitting) and hold arrays up to this many elements.
  int64_t max_big_elements = 8192;
  int max_nesting = 2;         // while/conditional inside bodies and branches
};

struct RandomModule {
  std::string text;               // HLO text: "HloModule random_..." with the entry last
  std::vector<Shape> parameters;  // the entry's parameter shapes, in order
};

// Deterministic in (seed, options) on every platform.
RandomModule GenerateRandomModule(uint64_t seed, const RandomModuleOptions& options = {});

// The first choices read from `data` (a byte at a time where that suffices), the rest drawn
// from a generator seeded with a hash of `data` once it runs out: libFuzzer's mutations steer
// the module, and its first inputs of a few bytes still make modules of full size. Always a
// valid module.
RandomModule GenerateRandomModuleFromBytes(const uint8_t* data, size_t size,
                                           const RandomModuleOptions& options = {});

}  // namespace kiln
