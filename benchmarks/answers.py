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


def is_right(dtype: str, rel_err, same_inf=True) -> bool:
    """`rel_err` and `same_inf` as compare_peers.py records them (numbers, or their text in a
    CSV file: 'nan', 'True', 'False'); a missing `same_inf` ('' or None) counts as True."""
    err = float(rel_err)
    if isinstance(same_inf, str):
        same_inf = same_inf != "False"
    return bool(same_inf is not False) and math.isfinite(err) and err <= ULPS * ROUNDOFF[dtype]
