// Deterministic pseudo-random literals: the inputs `kiln run` and `kiln compare` make when no
// .npz is given, and what the conformance harness feeds corpus modules.
//
// Values depend only on (seed, stream, shape) -- never on the platform, the standard library or
// the order of calls -- so a seed reproduces a run anywhere. Parameter i of a module uses
// stream i; leaves of a tuple-shaped parameter get streams derived from it.
//
// Distributions, per element type:
//   real floats      uniform in [-1, 1), rounded to nearest even into the type
//                    (f4e2m1fn: {0, +-0.5, +-1}); f8e8m0fnu (powers of two): 2^k, k in [-4, 4]
//   complex          real and imaginary parts each uniform in [-1, 1)
//   signed ints      uniform in [-4, 4] (within the type's range: s1 in [-1, 0], s2 in [-2, 1])
//   unsigned ints    uniform in [0, 7] (u1 in [0, 1], u2 in [0, 3])
//   pred             true or false with equal odds
// Small integers keep indices (gather, dynamic-slice) mostly in range and loop bounds short.
// An array is never all zeros: if the draw gives only zeros, its first element becomes one.
// Tokens and opaque values are empty.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/hlo/literal.h"

namespace kiln {

// A random literal of `shape` (arrays, tuples, tokens). Throws std::bad_alloc when the host
// cannot hold it (tests and tools with shapes they chose); for shapes that come from input, use
// CreateRandomArguments.
Literal MakeRandomLiteral(const Shape& shape, uint64_t seed, uint64_t stream);

// One random literal per parameter shape, parameter i from stream i.
std::vector<Literal> MakeRandomArguments(const std::vector<Shape>& parameter_shapes, uint64_t seed);

// The same values without exceptions: a shape larger than kiln supports is InvalidArgument, one
// the host cannot hold ResourceExhausted "out of memory allocating N bytes for random input i".
StatusOr<std::vector<Literal>> CreateRandomArguments(const std::vector<Shape>& parameter_shapes,
                                                     uint64_t seed);

}  // namespace kiln
