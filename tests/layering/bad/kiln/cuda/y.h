#pragma once
#include "kiln/cuda/driver.h"
// Planted: cuda/compiler has a row of its own, so cuda may not include it (not listed).
#include "kiln/cuda/compiler/compiler.h"
