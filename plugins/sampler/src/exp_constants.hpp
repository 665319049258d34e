// The constants of the sampler's two fp32 exps (exp_weights.cpp, fma_exp.cpp): the Cephes expf
// method of the SDK's fma_exp_nonpositive (tessera/fma_exp.hpp, which explains them).
#pragma once

#include "tessera/fma_exp.hpp"

namespace tessera::sampler {

using sdk::fma_exp_constants::kC1;
using sdk::fma_exp_constants::kC2;
using sdk::fma_exp_constants::kLog2e;
using sdk::fma_exp_constants::kMinExponent;
using sdk::fma_exp_constants::kP;
using sdk::fma_exp_constants::kRoundShift;

}  // namespace tessera::sampler
