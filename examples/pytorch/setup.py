# SPDX-License-Identifier: Apache-2.0
"""Ahead-of-time build of rowsoftmax_torch, against the torch installed in this environment:

    TORCH_CUDA_ARCH_LIST="9.0" pip install --no-build-isolation ./examples/pytorch

builds the same sources as the compile-on-import path (csrc/: the binding and, per dtype, one unit
of the plain launchers, one of the fused, one of the masked, one of the boolean-masked and one of
the biased forward; per pair of input and output dtypes, one of the fused of another output type)
into rowsoftmax_torch._C with torch.utils.cpp_extension.CUDAExtension and BuildExtension, for the
architectures in TORCH_CUDA_ARCH_LIST (torch's own variable, read by BuildExtension; unset: the
GPUs it sees, else torch's default list). `--no-build-isolation` lets the build import the
installed torch (an isolated build environment has none). rowsoftmax_torch then imports _C and
compiles nothing; without it (the package used from the source tree) it compiles on first import.
The rowsoftmax headers come from this repository's include/ or ROWSOFTMAX_INCLUDE_DIR (an
installed copy); the version from include/rowsoftmax/version.hpp.
"""
import os
import re
from pathlib import Path

from setuptools import setup

try:
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
except ImportError as e:  # an isolated build environment, or no torch at all
    raise SystemExit(
        "rowsoftmax_torch builds against the installed torch: "
        "pip install --no-build-isolation ./examples/pytorch") from e

HERE = Path(__file__).resolve().parent
INCLUDE = Path(os.environ.get("ROWSOFTMAX_INCLUDE_DIR", HERE.parents[1] / "include")).resolve()
if not (INCLUDE / "rowsoftmax" / "rowsoftmax.cuh").is_file():
    raise SystemExit(f"rowsoftmax headers not found in {INCLUDE}: set ROWSOFTMAX_INCLUDE_DIR")


def version():
    text = (INCLUDE / "rowsoftmax" / "version.hpp").read_text()
    parts = [re.search(rf"#define ROWSOFTMAX_VERSION_{p} +(\d+)", text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


# Relative to setup.py, as setuptools wants.
SOURCES = [f"csrc/{f}" for f in ("binding.cpp", "launch_float.cu", "launch_half.cu",
                                 "launch_bf16.cu", "launch_fused_float.cu", "launch_fused_half.cu",
                                 "launch_fused_bf16.cu", "launch_masked_float.cu",
                                 "launch_masked_half.cu", "launch_masked_bf16.cu",
                                 "launch_bool_masked_float.cu", "launch_bool_masked_half.cu",
                                 "launch_bool_masked_bf16.cu", "launch_biased_float.cu",
                                 "launch_biased_half.cu", "launch_biased_bf16.cu",
                                 "launch_out_bf16_float.cu", "launch_out_half_float.cu",
                                 "launch_out_float_bf16.cu", "launch_out_float_half.cu")]

setup(
    name="rowsoftmax_torch",
    version=version(),
    description="rowsoftmax row-wise softmax and log-softmax for PyTorch "
                "(CUDA float32/float16/bfloat16, autograd, torch.compile)",
    license="Apache-2.0",
    packages=["rowsoftmax_torch"],
    ext_modules=[
        CUDAExtension(
            name="rowsoftmax_torch._C",
            sources=SOURCES,
            include_dirs=[str(INCLUDE)],
            extra_compile_args={"cxx": ["-O3", "-std=c++17"], "nvcc": ["-O3", "-std=c++17"]},
        )
    ],
    # The per-dtype units compile in parallel where ninja is installed (BuildExtension's default).
    cmdclass={"build_ext": BuildExtension},
    python_requires=">=3.8",
    install_requires=["torch"],
    zip_safe=False,
)
