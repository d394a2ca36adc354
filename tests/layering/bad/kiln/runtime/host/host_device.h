#pragma once
  #  include "kiln/runtime/device.h"
#include "kiln/base/status.h"
