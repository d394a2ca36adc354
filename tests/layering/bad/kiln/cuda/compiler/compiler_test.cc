#include "kiln/cuda/compiler/compiler.h"
#include "kiln/cuda/driver.h"
#include "kiln/runtime/device.h"
