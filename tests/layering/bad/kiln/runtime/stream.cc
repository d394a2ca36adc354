#include "kiln/runtime/device.h"
#include "kiln/runtime/host/host_device.h"
// #include "kiln/cuda/driver.h"   (commented out: not an include)
