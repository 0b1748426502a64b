#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How the timing harness moves rowsoftmax's numbers (forward, bf16 and fp32, six shapes).

    PYTHONPATH=examples/pytorch python benchmarks/probe_timing.py smi.txt

Each shape is timed four ways by compare_peers.py's time_ms (CUDA events around single calls,
median, after 5 warm-up calls): a first burst of 30 calls (as compare_peers.py timed before its
warm-up by time), 300 calls each synchronized before the next (as the C++ benchmark times its
launches), 300 and 3000 calls back to back; the copy as compare_peers.py measures it. nvidia-smi
samples the SM clock, power and throttle reasons into the named file every 200 ms. What it
found: docs/tuning.md, How to measure.
"""
import subprocess
import sys
import time

import torch

import rowsoftmax_torch as rs
from compare_peers import copy_tbps, time_ms


def main():
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,"
                            "clocks_throttle_reasons.active", "--format=csv,noheader,nounits",
                            "-lms", "200"], stdout=open(sys.argv[1], "w"))
    copy = copy_tbps()
    print(f"copy {copy:.3f} TB/s")
    shapes = ((134217, 1000), (32768, 1024), (32768, 2048), (16384, 131072), (2670, 50257),
              (883, 151936))
    for dtype in (torch.bfloat16, torch.float32):
        for rows, cols in shapes:
            x = (torch.rand(rows, cols, device="cuda") * 16 - 8).to(dtype)
            nbytes = 2 * x.numel() * x.element_size()
            for mode, reps, sync in (("burst30", 30, False), ("sync300", 300, True),
                                     ("queue300", 300, False), ("queue3000", 3000, False)):
                ms = time_ms(lambda: rs.softmax_forward(x), 5, reps, sync=sync)
                tbps = nbytes / (ms * 1e-3) / 1e12
                print(f"{str(dtype)[6:]:9} {rows:7d}x{cols:<7d} {mode:10} {ms * 1e3:9.2f} us "
                      f"{tbps:6.3f} TB/s {100 * tbps / copy:5.1f}%  t={time.strftime('%H:%M:%S')}",
                      flush=True)
            del x
            torch.cuda.empty_cache()
    smi.terminate()


if __name__ == "__main__":
    main()
