// Forwarding header: layout normalization moved to kiln/passes/layout_normalization.h (the CPU
// and GPU compilers both run it); the names stay available in kiln::cpu.
#pragma once

#include "kiln/passes/layout_normalization.h"

namespace kiln::cpu {
using ::kiln::EntryLayouts;
using ::kiln::GetEntryLayouts;
using ::kiln::IsDefaultOrder;
using ::kiln::LayoutNormalization;
using ::kiln::MajorToMinor;
}  // namespace kiln::cpu
