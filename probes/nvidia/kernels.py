"""CUDA C source of the probe's kernels, compiled by CuPy (NVRTC) in probes/nvidia/transfers.py.

Kept as plain text here so it can be read, reviewed and size-checked without CuPy. The methods
copy nvbandwidth's (see ../shared/REFERENCE.md section 4):
- `pw_spin` holds a stream until the host has queued every copy (a counter in pinned host
  memory reaches the ticket), so host launch gaps never fall inside a timed window; it gives
  up after `timeout_ns`, so a host that dies mid-test cannot wedge the GPU.
- `pw_copy` is the SM copy: one block per SM x 512 threads, 16-byte (uint4) accesses, four
  independent loads in flight per thread before their stores.
- `pw_chase` is the latency test: one thread follows a pointer chain (2 MiB, 128-byte stride)
  with volatile loads, so each hop is one round trip to the memory that holds the chain.
- `pw_fill`/`pw_check` write and verify a position-dependent pattern on the device itself,
  so verification costs local bandwidth only, never the link being measured.
"""

from __future__ import annotations

SM_THREADS = 512  # threads per block of the SM copy kernel (nvbandwidth's figure)
FILL_THREADS = 256
CHASE_STRIDE = 128  # bytes between pointer-chase nodes (nvbandwidth's figure)
PATTERN_MULT = 2654435761  # Knuth's multiplicative hash: neighbouring words differ

SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 pw_now() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void pw_spin(const volatile u32* flag, u32 ticket, u64 timeout_ns) {
    u64 start = pw_now();
    while (*flag < ticket) {
        if (pw_now() - start > timeout_ns) break;
    }
}

extern "C" __global__ void pw_fill(u32* buf, u64 n, u32 seed) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        buf[i] = (u32)(i * 2654435761ull) ^ seed;
}

extern "C" __global__ void pw_check(const u32* buf, u64 n, u32 seed, u64* bad) {
    u64 stride = (u64)gridDim.x * blockDim.x, mine = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        mine += buf[i] != ((u32)(i * 2654435761ull) ^ seed);
    if (mine) atomicAdd(bad, mine);
}

extern "C" __global__ void pw_fill_f32(float* buf, u64 n, float value) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        buf[i] = value;
}

extern "C" __global__ void pw_check_f32(const float* buf, u64 n, float want, u64* bad) {
    u64 stride = (u64)gridDim.x * blockDim.x, mine = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        mine += buf[i] != want;
    if (mine) atomicAdd(bad, mine);
}

extern "C" __global__ void pw_copy(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                   u64 n) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

extern "C" __global__ void pw_chain(u64* buf, u64 nodes, u64 stride_bytes) {
    u64 step = (u64)gridDim.x * blockDim.x;
    u64 base = (u64)buf;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nodes; i += step)
        buf[i * (stride_bytes / 8)] = base + ((i + 1) % nodes) * stride_bytes;
}

extern "C" __global__ void pw_chase(u64 start, u64 hops, u64* out) {
    u64 p = start;
    for (u64 k = 0; k < hops; ++k) p = *(const volatile u64*)p;
    *out = p;
}
"""
