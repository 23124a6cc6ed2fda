"""Which category an operator's time belongs to: the vocabulary of the time breakdown.

Rules are ordered name matches (lower-cased substrings); the first that matches wins. GPU
kernel names come from CUDA libraries (cuBLAS/CUTLASS `*gemm*`, `nvjet*`, FlashAttention
`flash_fwd*`, NCCL `ncclDevKernel_*`, PyTorch's `vectorized_elementwise_kernel`, ...); CPU
operator names are ATen's (`aten::mm`, `aten::addmm`, ...). Work that ran inside an optimizer
step span (`Optimizer.step#...`, which torch.optim and Megatron's optimizers record) counts
as `optimizer` whatever its name: that is where the host-side Adam of an offloaded optimizer
shows up.
"""

from __future__ import annotations

GEMM = "GEMM"
ATTENTION = "attention"
ELEMENTWISE = "elementwise/norm"
OPTIMIZER = "optimizer"
COMMUNICATION = "communication"
OTHER = "other"
COMPUTE_CATEGORIES = (GEMM, ATTENTION, ELEMENTWISE, OPTIMIZER, COMMUNICATION, OTHER)

H2D, D2H, D2D = "H2D", "D2H", "D2D"
MEMCPY_DIRECTIONS = (H2D, D2H, D2D)

OPTIMIZER_SPAN_PREFIX = "Optimizer.step#"
STEP_SPAN_PREFIX = "ProfilerStep#"

_KERNEL_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (COMMUNICATION, ("nccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter")),
    (ATTENTION, ("flash", "fmha", "attention", "attn", "sdpa", "scaled_dot_product", "mha")),
    (OPTIMIZER, ("adam", "adagrad", "multi_tensor_apply", "optimizer", "sgd_")),
    (GEMM, ("gemm", "cutlass", "cublas", "nvjet", "xmma", "matmul", "wgmma", "splitk")),
    (
        ELEMENTWISE,
        ("elementwise", "reduce_kernel", "norm", "softmax", "silu", "gelu", "relu", "rotary", "rope", "cat_", "index"),
    ),
)

_CPU_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (COMMUNICATION, ("c10d::", "nccl", "allreduce", "all_reduce", "allgather", "all_gather", "broadcast_")),
    (ATTENTION, ("scaled_dot_product", "flash", "attention")),
    (OPTIMIZER, ("_foreach_", "_fused_adam", "adam")),
    (GEMM, ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_addmm")),
    (
        ELEMENTWISE,
        (
            "aten::add", "aten::sub", "aten::mul", "aten::div", "aten::neg", "aten::exp", "aten::log", "aten::pow",
            "aten::sqrt", "aten::rsqrt", "aten::silu", "aten::gelu", "aten::relu", "aten::sigmoid", "aten::tanh",
            "softmax", "norm", "aten::mean", "aten::sum", "aten::max", "aten::min", "aten::where", "aten::clamp",
            "aten::abs", "aten::cos", "aten::sin", "aten::cat", "aten::lerp", "aten::addc", "aten::fill_",
            "aten::zero_", "aten::gather", "aten::index", "aten::embedding", "aten::cumsum", "aten::eq",
            "aten::ne", "aten::lt", "aten::gt", "aten::le", "aten::ge", "aten::minimum", "aten::maximum",
            "aten::masked", "aten::scatter", "aten::sort", "aten::topk", "aten::multinomial", "aten::argmax",
        ),
    ),
)  # fmt: skip

_DATA_MOVEMENT = (
    "aten::copy_", "aten::to", "aten::_to_copy", "aten::pin_memory", "aten::_pin_memory", "aten::item",
    "aten::_local_scalar_dense", "cudamemcpy", "cudamemcpyasync", "cudamemcpy2d", "cudamemcpypeer",
    "cudahostalloc", "cudastreamsynchronize", "cudaeventsynchronize",
)  # fmt: skip


def _match(name: str, rules: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    # fbgemm_gpu (embedding tables, permutes) is a library name, not a matrix product
    low = name.lower().replace("fbgemm", "fb-lib")
    for category, needles in rules:
        if any(n in low for n in needles):
            return category
    return OTHER


def kernel_category(name: str) -> str:
    """Category of a GPU kernel by its name."""
    return _match(name, _KERNEL_RULES)


def cpu_category(name: str) -> str:
    """Category of a CPU operator (its self time) by its ATen name."""
    return _match(name, _CPU_RULES)


def is_data_movement(name: str) -> bool:
    """CPU-side operators and runtime calls that move or wait for data between devices."""
    low = name.lower()
    return any(low == n or low.startswith(n + "(") for n in _DATA_MOVEMENT)


def memcpy_direction(name: str) -> str:
    """H2D / D2H / D2D from Kineto's memcpy event names (`Memcpy HtoD (Pageable -> Device)`,
    `Memcpy DtoH (Device -> Pinned)`, `Memcpy DtoD (Device -> Device)`, `Memcpy PtoP ...`)."""
    if "HtoD" in name:
        return H2D
    if "DtoH" in name:
        return D2H
    return D2D
