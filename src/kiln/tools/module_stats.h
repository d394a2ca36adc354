// Static statistics of a module for `kiln info`: op histogram, parameter and output sizes, and
// an estimate of the arithmetic it does.
//
// Counting rules (per execution of the entry computation):
//   dot                 2 * result elements * product of the contracting dimensions
//   convolution         2 * output elements * kernel elements / kernel output features
//   ragged-dot          2 * result elements * lhs contracting size (an upper bound)
//   elementwise ops     1 per result element (convert, copy, bitcast-convert: 0);
//                       transcendental ones (exp, log, tanh, sin, sqrt, power, erf, ...) are
//                       counted separately, 1 per element
//   reduce              input elements * the reducer's own count
//   reduce-window       output elements * window size * the reducer's count
//   map                 output elements * the mapped computation's count
//   sort                n * ceil(log2 n) comparisons per sorted row * the comparator's count
//   fusion, call        the called computation's count
//   while               body + condition counted once (trip counts are not known statically)
//   conditional         the most expensive branch
//   everything else     0 (data movement)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/hlo/module.h"

namespace kiln {

struct ModuleStats {
  int64_t computations = 0;
  int64_t instructions = 0;  // over all computations
  // (opcode, count) over all computations, most frequent first.
  std::vector<std::pair<std::string, int64_t>> op_histogram;
  double flops = 0;
  double transcendentals = 0;
  int64_t parameter_bytes = 0;
  int64_t output_bytes = 0;
  int64_t while_loops = 0;  // loops whose bodies were counted once
};

ModuleStats ComputeModuleStats(const HloModule& module);

}  // namespace kiln
