// Planted: a neutral room including the platform room cuda.
#include "kiln/runtime/device.h"
// #include "kiln/cuda/y.h"   (commented out: not an include, and not the line reported)

#include "kiln/cuda/y.h"
