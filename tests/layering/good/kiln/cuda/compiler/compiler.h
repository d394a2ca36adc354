#pragma once
#include "kiln/cuda/libs/gemm.h"
