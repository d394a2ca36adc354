#pragma once
#include "kiln/cuda/driver.h"
#include "kiln/cuda/libs/gemm_desc.h"
