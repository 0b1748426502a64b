// SPDX-License-Identifier: Apache-2.0
// The kernel configuration a plan names, by its contents, for the golden plans.
#pragma once

#include "plan_sweep.hpp"

namespace rowsoftmax::golden {

inline void config_key(hasher& h, plan const& p) {
  auto const& c = detail::kernel_configs[p.config];
  for (std::int64_t x :
       {std::int64_t(c.algo), std::int64_t(c.threads_per_row), std::int64_t(c.bytes),
        std::int64_t(c.threads_per_cta), std::int64_t(c.clustered), std::int64_t(c.scalar_ok),
        std::int64_t(c.rows_per_thread), std::int64_t(c.tiled), std::int64_t(c.l2_hints)})
    h.add(x);
}

}  // namespace rowsoftmax::golden
