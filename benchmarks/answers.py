# SPDX-License-Identifier: Apache-2.0
"""When a measured answer counts: the rule compare_peers.py and make_performance_md.py share.

A result is right when its normwise error against float64 is finite and at most 16 units of its
type's rounding (bf16 2^-8, fp16 2^-11, fp32 2^-24), and its infinities, where the reference has
any, are the reference's. A wrong answer is reported with its error but never counts as the
fastest peer: a fast wrong answer would otherwise set the bar.
"""
from __future__ import annotations

import math

ROUNDOFF = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11, "fp32": 2.0 ** -24}
ULPS = 16


def is_right(row) -> bool:
    """Whether a result row of compare_peers.py (its dict, or its CSV row as text) holds a right
    answer, from its `dtype`, `rel_err` and, where the run records it, `same_inf`."""
    if row.get("same_inf") in (False, "False"):
        return False
    err = float(row["rel_err"])
    return math.isfinite(err) and err <= ULPS * ROUNDOFF[row["dtype"]]
