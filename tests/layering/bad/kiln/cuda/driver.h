#pragma once
#include "kiln/base/status.h"
#include "kiln/runtime/device.h"
