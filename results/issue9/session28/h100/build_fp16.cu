// ---- g0_cast_transpose_cast_transpose_conv2d_cast_etc ----

#ifdef __CUDACC_RTC__
  #include <cuda/std/cstdint>
  using cuda::std::uint8_t;
  using cuda::std::uint16_t;
  using cuda::std::uint32_t;
  using cuda::std::uint64_t;
  using cuda::std::int8_t;
  using cuda::std::int16_t;
  using cuda::std::int32_t;
  using cuda::std::int64_t;

  #include <cuda/std/type_traits>
  namespace std {
    using cuda::std::is_same;
    using cuda::std::is_same_v;
    using cuda::std::is_integral;
    using cuda::std::is_signed;
    using cuda::std::is_unsigned;
    using cuda::std::is_floating_point;
    using cuda::std::enable_if;
    using cuda::std::conditional;
  }

  // NVRTC uses asm/volatile instead of __asm__/__volatile__ (gcc extension).
  #ifndef __asm__
  #define __asm__ asm
  #endif
  #ifndef __volatile__
  #define __volatile__ volatile
  #endif
#else
  #include <cstdint>
  #include <type_traits>
  #include <cuda.h>
#endif

#if !defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 530)
#include <cuda_fp16.h>
__device__ half max(half a, half b)
{
  return __hgt(__half(a), __half(b)) ? a : b;
}
__device__ half min(half a, half b)
{
  return __hlt(__half(a), __half(b)) ? a : b;
}
#endif // __CUDA_ARCH__ >= 530

// Pack two half values.
static inline __device__ __host__ unsigned
__pack_half2(const half x, const half y) {
  unsigned v0 = *((unsigned short *)&x);
  unsigned v1 = *((unsigned short *)&y);
  return (v1 << 16) | v0;
}

#define CUDA_UNSUPPORTED_HALF_MATH_BINARY(HALF_MATH_NAME, FP32_MATH_NAME) \
static inline __device__ __host__ half HALF_MATH_NAME(half x, half y) {   \
  float tmp_x = __half2float(x);                                          \
  float tmp_y = __half2float(y);                                          \
  float result = FP32_MATH_NAME(tmp_x, tmp_y);                            \
  return __float2half(result);                                            \
}

#define CUDA_UNSUPPORTED_HALF_MATH_UNARY(HALF_MATH_NAME, FP32_MATH_NAME) \
static inline __device__ __host__ half HALF_MATH_NAME(half x) {          \
  float tmp_x = __half2float(x);                                         \
  float result = FP32_MATH_NAME(tmp_x);                                  \
  return __float2half(result);                                           \
}

// Some fp16 math functions are not supported in cuda_fp16.h,
// so we define them here to make sure the generated CUDA code
// is valid.
#if defined(__CUDA_ARCH__)
#if (__CUDA_ARCH__ >= 530)
CUDA_UNSUPPORTED_HALF_MATH_BINARY(hpow, powf)
#if ((__CUDACC_VER_MAJOR__ < 12) || ((__CUDACC_VER_MAJOR__ == 12) && (__CUDACC_VER_MINOR__ < 8)))
CUDA_UNSUPPORTED_HALF_MATH_UNARY(htanh, tanhf)
#endif
CUDA_UNSUPPORTED_HALF_MATH_UNARY(htan, tanf)
CUDA_UNSUPPORTED_HALF_MATH_UNARY(hatan, atanf)
CUDA_UNSUPPORTED_HALF_MATH_UNARY(herf, erf)
#else
CUDA_UNSUPPORTED_HALF_MATH_UNARY(hexp, exp)
#endif
#endif

#undef CUDA_UNSUPPORTED_HALF_MATH_BINARY
#undef CUDA_UNSUPPORTED_HALF_MATH_UNARY

template <typename T, typename TVec2>
struct __align__(8) half4_bfloat164 {
  T x, y, z, w;
  __host__ __device__ half4_bfloat164() : x(T(0)), y(T(0)), z(T(0)), w(T(0)) {}
  __host__ __device__ half4_bfloat164(T x, T y, T z, T w) : x(x), y(y), z(z), w(w) {}

};

using half4 = half4_bfloat164<__half, __half2>;
__host__ __device__ half4 make_half4(__half x, __half y, __half z, __half w) {
    return half4(x, y, z, w);
}

#include <mma.h>

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 700)
#define __shfl_sync(mask, var, lane, width) \
        __shfl((var), (lane), (width))

#define __shfl_down_sync(mask, var, offset, width) \
        __shfl_down((var), (offset), (width))

#define __shfl_up_sync(mask, var, offset, width) \
        __shfl_up((var), (offset), (width))
#endif

#if (((__CUDACC_VER_MAJOR__ == 11) && (__CUDACC_VER_MINOR__ >= 4)) || \
     (__CUDACC_VER_MAJOR__ > 11))
#define TVM_ENABLE_L2_PREFETCH 1
#else
#define TVM_ENABLE_L2_PREFETCH 0
#endif

#ifdef _WIN32
  using uint = unsigned int;
  using uchar = unsigned char;
  using ushort = unsigned short;
  using int64_t = long long;
  using uint64_t = unsigned long long;
#else
  #define uint unsigned int
  #define uchar unsigned char
  #define ushort unsigned short
#endif
__forceinline__ __device__ void tvm_builtin_ptx_cp_async_wait_group_async_wait_group_0() {
  asm volatile("cp.async.wait_group 0;" :  :  : "memory");
}
__forceinline__ __device__ void tvm_builtin_ptx_cp_async_wait_group_async_wait_group_1() {
  asm volatile("cp.async.wait_group 1;" :  :  : "memory");
}
__forceinline__ __device__ void tvm_builtin_ptx_cp_async_wait_group_async_wait_group_2() {
  asm volatile("cp.async.wait_group 2;" :  :  : "memory");
}
__forceinline__ __device__ void tvm_builtin_ptx_cp_async_commit_group_async_commit_group() {
  asm volatile("cp.async.commit_group;" :  : );
}
extern "C" __global__ void __launch_bounds__(128) main_kernel(float* __restrict__ in_s0_weight_ptr, float* __restrict__ in_s1_bias_ptr, float* __restrict__ in_s2_beta_ptr, float* __restrict__ in_s2_gamma_ptr, float* __restrict__ in_s2_mean_ptr, float* __restrict__ in_s2_var_ptr, float* __restrict__ in_x_ptr, float* __restrict__ out_s3_relu_ptr);
extern "C" __global__ void __launch_bounds__(128) main_kernel(float* __restrict__ in_s0_weight_ptr, float* __restrict__ in_s1_bias_ptr, float* __restrict__ in_s2_beta_ptr, float* __restrict__ in_s2_gamma_ptr, float* __restrict__ in_s2_mean_ptr, float* __restrict__ in_s2_var_ptr, float* __restrict__ in_x_ptr, float* __restrict__ out_s3_relu_ptr) {
  extern __shared__ __align__(64) uchar buf_dyn_shmem_ptr[];
  alignas(64) float conv2d_reindex_pad_shared_dyn_warp_ptr[128];
  alignas(64) half pad_temp_reindex_shared_dyn_warp_ptr[2048];
  alignas(64) half weight_in_reindex_pad_shared_dyn_warp_ptr[2048];
  for (int ax1_0_2_init = 0; ax1_0_2_init < 4; ++ax1_0_2_init) {
    for (int ax2_0_2_init = 0; ax2_0_2_init < 4; ++ax2_0_2_init) {
      for (int i = 0; i < 8; ++i) {
conv2d_reindex_pad_shared_dyn_warp_ptr[((ax1_0_2_init * 32) + (ax2_0_2_init * 8)) + i] = 0.0;}
;
    }
  }
  int cse_v1 = (((int)blockIdx.y) * 16);
  int cse_v2 = (((int)blockIdx.y) * 128);
  int cse_v3 = (((int)blockIdx.y) * 2);
  int cse_v4 = (((int)threadIdx.x) * 3136);
  int cse_v5 = (((int)threadIdx.y) * 40);
  int cse_v6 = (((int)threadIdx.y) * 576);
  int cse_v7 = (((int)threadIdx.x) * 9);
  for (int ax0_ax1_fused_0 = 0; ax0_ax1_fused_0 < 32; ++ax0_ax1_fused_0) {
    int cse_v44 = (((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0 * 4)) + ((int)threadIdx.y));
    half condval;
    if ((7 <= (((((int)blockIdx.y) * 16) + (ax0_ax1_fused_0 >> 1)) % 392)) && (1 <= ((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0 * 4)) + ((int)threadIdx.y)) % 56))) {
      condval = ((half)in_x_ptr[(((((((((int)blockIdx.y) * 2) + (ax0_ax1_fused_0 >> 4)) / 49) * 200704) + (((int)threadIdx.x) * 3136)) + ((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0 * 4)) + ((int)threadIdx.y)) % 3136)) - 57)]);
    } else {
      condval = __float2half_rn(0x0p+0f/*0.000000e+00*/);
    }
    ((half*)buf_dyn_shmem_ptr)[(((ax0_ax1_fused_0 * 160) + (((int)threadIdx.y) * 40)) + ((int)threadIdx.x))] = condval;
  }
  for (int ax0_ax1_fused_0_1 = 0; ax0_ax1_fused_0_1 < 32; ++ax0_ax1_fused_0_1) {
    half condval_1;
    if (ax0_ax1_fused_0_1 < 16) {
      condval_1 = ((half)in_s0_weight_ptr[(((ax0_ax1_fused_0_1 * 2304) + (((int)threadIdx.y) * 576)) + (((int)threadIdx.x) * 9))]);
    } else {
      condval_1 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
    }
    ((half*)buf_dyn_shmem_ptr)[((((ax0_ax1_fused_0_1 * 160) + (((int)threadIdx.y) * 40)) + ((int)threadIdx.x)) + 15360)] = condval_1;
  }
  tvm_builtin_ptx_cp_async_commit_group_async_commit_group();
  for (int ax0_ax1_fused_0_2 = 0; ax0_ax1_fused_0_2 < 32; ++ax0_ax1_fused_0_2) {
    int cse_v45 = (((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_2 * 4)) + ((int)threadIdx.y));
    half condval_2;
    if ((7 <= (((((int)blockIdx.y) * 16) + (ax0_ax1_fused_0_2 >> 1)) % 392)) && (1 <= ((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_2 * 4)) + ((int)threadIdx.y)) % 56))) {
      condval_2 = ((half)in_x_ptr[(((((((((int)blockIdx.y) * 2) + (ax0_ax1_fused_0_2 >> 4)) / 49) * 200704) + (((int)threadIdx.x) * 3136)) + ((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_2 * 4)) + ((int)threadIdx.y)) % 3136)) + 100295)]);
    } else {
      condval_2 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
    }
    ((half*)buf_dyn_shmem_ptr)[((((ax0_ax1_fused_0_2 * 160) + (((int)threadIdx.y) * 40)) + ((int)threadIdx.x)) + 5120)] = condval_2;
  }
  for (int ax0_ax1_fused_0_3 = 0; ax0_ax1_fused_0_3 < 32; ++ax0_ax1_fused_0_3) {
    half condval_3;
    if (ax0_ax1_fused_0_3 < 16) {
      condval_3 = ((half)in_s0_weight_ptr[((((ax0_ax1_fused_0_3 * 2304) + (((int)threadIdx.y) * 576)) + (((int)threadIdx.x) * 9)) + 288)]);
    } else {
      condval_3 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
    }
    ((half*)buf_dyn_shmem_ptr)[((((ax0_ax1_fused_0_3 * 160) + (((int)threadIdx.y) * 40)) + ((int)threadIdx.x)) + 20480)] = condval_3;
  }
  tvm_builtin_ptx_cp_async_commit_group_async_commit_group();
  int cse_v10 = (((int)threadIdx.x) * 8);
  int cse_v11 = (((int)threadIdx.y) >> 1);
  int cse_v12 = (((int)threadIdx.x) & 15);
  int cse_v13 = (((int)threadIdx.x) >> 4);
  int cse_v14 = (((int)threadIdx.y) & 1);
  int cse_v23 = ((((int)threadIdx.y) >> 1) * 2560);
  int cse_v24 = ((((int)threadIdx.x) * 8) + 256);
  int cse_v25 = ((((int)threadIdx.x) * 8) + 512);
  int cse_v26 = ((((int)threadIdx.x) * 8) + 768);
  int cse_v27 = ((((int)threadIdx.y) & 1) * 2560);
  int cse_v28 = ((((int)threadIdx.x) * 8) + 1024);
  int cse_v29 = ((((int)threadIdx.x) * 8) + 1280);
  int cse_v30 = ((((int)threadIdx.x) * 8) + 1536);
  int cse_v31 = ((((int)threadIdx.x) * 8) + 1792);
  int cse_v50 = (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8));
  int cse_v62 = ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8));
  for (int ax3_0_0 = 0; ax3_0_0 < 16; ++ax3_0_0) {
    int cse_v8 = (ax3_0_0 + 2);
    int cse_v9 = (ax3_0_0 & 1);
    int cse_v21 = ((ax3_0_0 + 2) / 6);
    int cse_v47 = (((ax3_0_0 >> 1) + 1) % 3);
    int cse_v48 = (((ax3_0_0 + 2) % 3) * 5120);
    __syncthreads();
    for (int ax0_ax1_fused_0_4 = 0; ax0_ax1_fused_0_4 < 32; ++ax0_ax1_fused_0_4) {
      int cse_v46 = (((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_4 * 4)) + ((int)threadIdx.y));
      int cse_v63 = (((((((int)blockIdx.y) * 16) + (ax0_ax1_fused_0_4 >> 1)) % 392) / 7) + ((ax3_0_0 + 2) / 6));
      int cse_v64 = (((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_4 * 4)) + ((int)threadIdx.y)) % 56) + (((ax3_0_0 >> 1) + 1) % 3));
      half condval_4;
      if ((((1 <= (((((((int)blockIdx.y) * 16) + (ax0_ax1_fused_0_4 >> 1)) % 392) / 7) + ((ax3_0_0 + 2) / 6))) && ((((((((int)blockIdx.y) * 16) + (ax0_ax1_fused_0_4 >> 1)) % 392) / 7) + ((ax3_0_0 + 2) / 6)) < 57)) && (1 <= (((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_4 * 4)) + ((int)threadIdx.y)) % 56) + (((ax3_0_0 >> 1) + 1) % 3)))) && ((((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_4 * 4)) + ((int)threadIdx.y)) % 56) + (((ax3_0_0 >> 1) + 1) % 3)) < 57)) {
        condval_4 = ((half)in_x_ptr[((((((((((((int)blockIdx.y) * 2) + (ax0_ax1_fused_0_4 >> 4)) / 49) * 200704) + ((ax3_0_0 & 1) * 100352)) + (((int)threadIdx.x) * 3136)) + (((ax3_0_0 + 2) / 6) * 56)) + ((((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_4 * 4)) + ((int)threadIdx.y)) % 3136)) + (((ax3_0_0 >> 1) + 1) % 3)) - 57)]);
      } else {
        condval_4 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
      }
      ((half*)buf_dyn_shmem_ptr)[((((((ax3_0_0 + 2) % 3) * 5120) + (ax0_ax1_fused_0_4 * 160)) + (((int)threadIdx.y) * 40)) + ((int)threadIdx.x))] = condval_4;
    }
    for (int ax0_ax1_fused_0_5 = 0; ax0_ax1_fused_0_5 < 32; ++ax0_ax1_fused_0_5) {
      half condval_5;
      if (ax0_ax1_fused_0_5 < 16) {
        condval_5 = ((half)in_s0_weight_ptr[((((((ax0_ax1_fused_0_5 * 2304) + (((int)threadIdx.y) * 576)) + ((ax3_0_0 & 1) * 288)) + (((int)threadIdx.x) * 9)) + (((ax3_0_0 + 2) / 6) * 3)) + (((ax3_0_0 >> 1) + 1) % 3))]);
      } else {
        condval_5 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
      }
      ((half*)buf_dyn_shmem_ptr)[(((((((ax3_0_0 + 2) % 3) * 5120) + (ax0_ax1_fused_0_5 * 160)) + (((int)threadIdx.y) * 40)) + ((int)threadIdx.x)) + 15360)] = condval_5;
    }
    tvm_builtin_ptx_cp_async_commit_group_async_commit_group();
    int cse_v22 = ((ax3_0_0 % 3) * 5120);
    int cse_v49 = (((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560));
    int cse_v51 = (((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560));
    tvm_builtin_ptx_cp_async_wait_group_async_wait_group_2();
    __syncthreads();

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560))])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 640)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 1280)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 1920)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 15360)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 16000)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 16640)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 17280)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 16)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 656)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 1296)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560)) + 1936)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 15376)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 16016)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 16656)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) & 1) * 2560)) + 17296)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }
    for (int ax1_0_2 = 0; ax1_0_2 < 4; ++ax1_0_2) {
      for (int ax2_0_2 = 0; ax2_0_2 < 4; ++ax2_0_2) {
        int cse_v15 = (ax2_0_2 * 256);
        int cse_v32 = ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8));
        int cse_v33 = ((ax2_0_2 * 256) + (((int)threadIdx.x) * 8));
        int cse_v52 = (((ax1_0_2 * 1024) + (ax2_0_2 * 256)) + (((int)threadIdx.x) * 8));

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((ax2_0_2 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((ax2_0_2 * 256) + (((int)threadIdx.x) * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2 * 32) + (ax2_0_2 * 8))))[3]));
  }

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8))))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2 * 256) + (((int)threadIdx.x) * 8)) + 4)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2 * 256) + (((int)threadIdx.x) * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2 * 32) + (ax2_0_2 * 8)) + 4)))[3]));
  }
      }
    }
    for (int ax1_0_2_1 = 0; ax1_0_2_1 < 4; ++ax1_0_2_1) {
      for (int ax2_0_2_1 = 0; ax2_0_2_1 < 4; ++ax2_0_2_1) {
        int cse_v16 = (ax2_0_2_1 * 256);
        int cse_v34 = ((ax2_0_2_1 * 256) + (((int)threadIdx.x) * 8));
        int cse_v53 = (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024);
        int cse_v54 = (((ax1_0_2_1 * 1024) + (ax2_0_2_1 * 256)) + (((int)threadIdx.x) * 8));

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8))))[3]));
  }

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1028)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1028)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_1 * 32) + (ax2_0_2_1 * 8)) + 4)))[3]));
  }
      }
    }
  }
  tvm_builtin_ptx_cp_async_wait_group_async_wait_group_1();
  __syncthreads();

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 5120)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 5760)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 6400)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 7040)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 20480)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 21120)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 21760)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 22400)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 5136)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 5776)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 6416)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 7056)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 20496)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 21136)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 21776)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 22416)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }
  for (int ax1_0_2_2 = 0; ax1_0_2_2 < 4; ++ax1_0_2_2) {
    for (int ax2_0_2_2 = 0; ax2_0_2_2 < 4; ++ax2_0_2_2) {
      int cse_v17 = (ax2_0_2_2 * 256);
      int cse_v35 = ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8));
      int cse_v36 = ((ax2_0_2_2 * 256) + (((int)threadIdx.x) * 8));
      int cse_v55 = (((ax1_0_2_2 * 1024) + (ax2_0_2_2 * 256)) + (((int)threadIdx.x) * 8));

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((ax2_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((ax2_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8))))[3]));
  }

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8))))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_2 * 256) + (((int)threadIdx.x) * 8)) + 4)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_2 * 256) + (((int)threadIdx.x) * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_2 * 32) + (ax2_0_2_2 * 8)) + 4)))[3]));
  }
    }
  }
  for (int ax1_0_2_3 = 0; ax1_0_2_3 < 4; ++ax1_0_2_3) {
    for (int ax2_0_2_3 = 0; ax2_0_2_3 < 4; ++ax2_0_2_3) {
      int cse_v18 = (ax2_0_2_3 * 256);
      int cse_v37 = ((ax2_0_2_3 * 256) + (((int)threadIdx.x) * 8));
      int cse_v56 = (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024);
      int cse_v57 = (((ax1_0_2_3 * 1024) + (ax2_0_2_3 * 256)) + (((int)threadIdx.x) * 8));

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8))))[3]));
  }

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1028)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1028)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_3 * 32) + (ax2_0_2_3 * 8)) + 4)))[3]));
  }
    }
  }
  tvm_builtin_ptx_cp_async_wait_group_async_wait_group_0();
  __syncthreads();

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 10240)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 10880)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 11520)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 12160)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 25600)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 26240)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 26880)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 27520)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 768)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 10256)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 10896)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 11536)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) >> 1) * 2560) + 12176)])) + (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 25616)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 26256)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 26896)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 2560) + 27536)])) + ((((((int)threadIdx.x) >> 4) * 320) + ((((int)threadIdx.x) & 7) * 40)) + (((((int)threadIdx.x) & 15) >> 3) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }
  for (int ax1_0_2_4 = 0; ax1_0_2_4 < 4; ++ax1_0_2_4) {
    for (int ax2_0_2_4 = 0; ax2_0_2_4 < 4; ++ax2_0_2_4) {
      int cse_v19 = (ax2_0_2_4 * 256);
      int cse_v38 = ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8));
      int cse_v39 = ((ax2_0_2_4 * 256) + (((int)threadIdx.x) * 8));
      int cse_v58 = (((ax1_0_2_4 * 1024) + (ax2_0_2_4 * 256)) + (((int)threadIdx.x) * 8));

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((ax2_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((ax2_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8))))[3]));
  }

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8))))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_4 * 256) + (((int)threadIdx.x) * 8)) + 4)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_4 * 256) + (((int)threadIdx.x) * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_4 * 32) + (ax2_0_2_4 * 8)) + 4)))[3]));
  }
    }
  }
  for (int ax1_0_2_5 = 0; ax1_0_2_5 < 4; ++ax1_0_2_5) {
    for (int ax2_0_2_5 = 0; ax2_0_2_5 < 4; ++ax2_0_2_5) {
      int cse_v20 = (ax2_0_2_5 * 256);
      int cse_v40 = ((ax2_0_2_5 * 256) + (((int)threadIdx.x) * 8));
      int cse_v59 = (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024);
      int cse_v60 = (((ax1_0_2_5 * 1024) + (ax2_0_2_5 * 256)) + (((int)threadIdx.x) * 8));

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + ((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8))))[3]));
  }

  {
    __asm__ __volatile__(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      :  "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[0]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[1]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[2]), "=f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[3])
      : "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[0]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[1]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[2]), "r"(((unsigned *)(pad_temp_reindex_shared_dyn_warp_ptr + (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024)))[3]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1028)))[0]), "r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((ax2_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1028)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[0]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[1]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[2]), "f"(((float *)(conv2d_reindex_pad_shared_dyn_warp_ptr + (((ax1_0_2_5 * 32) + (ax2_0_2_5 * 8)) + 4)))[3]));
  }
    }
  }
  int cse_v41 = ((((int)threadIdx.y) >> 1) * 8704);
  int cse_v42 = ((((int)threadIdx.y) & 1) * 64);
  __syncthreads();
  for (int ax0_0 = 0; ax0_0 < 4; ++ax0_0) {
    for (int ax1_0 = 0; ax1_0 < 4; ++ax1_0) {
      for (int local_id = 0; local_id < 8; ++local_id) {
        ((half*)buf_dyn_shmem_ptr)[(((((((((((((int)threadIdx.y) >> 1) * 8704) + (ax0_0 * 2176)) + (((local_id & 3) >> 1) * 1088)) + ((((int)threadIdx.x) >> 2) * 136)) + ((((int)threadIdx.y) & 1) * 64)) + (ax1_0 * 16)) + ((local_id >> 2) * 8)) + ((((int)threadIdx.x) & 3) * 2)) + (local_id & 1)) + 15360)] = ((half)__shfl_sync(__activemask(), conv2d_reindex_pad_shared_dyn_warp_ptr[(((ax0_0 * 32) + (ax1_0 * 8)) + local_id)], ((int)threadIdx.x), 32));
      }
    }
  }
  __syncthreads();
  for (int ax0_ax1_fused_0_6 = 0; ax0_ax1_fused_0_6 < 32; ++ax0_ax1_fused_0_6) {
    if ((((int)threadIdx.y) & 1) < 1) {
      int cse_v43 = ((((int)threadIdx.x) & 15) * 4);
      int cse_v61 = (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4));
      int cse_v65 = ((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4));
      int cse_v66 = ((((((((int)threadIdx.y) >> 1) * 8704) + (ax0_ax1_fused_0_6 * 272)) + ((((int)threadIdx.x) >> 4) * 136)) + ((((int)threadIdx.y) & 1) * 64)) + ((((int)threadIdx.x) & 15) * 4));
        int4 v_ = make_int4(((((((((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) / 3136) * 200704) + ((((int)threadIdx.y) & 1) * 200704)) + ((((int)threadIdx.x) & 15) * 12544)) + (((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) % 3136)))+(3136*0), ((((((((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) / 3136) * 200704) + ((((int)threadIdx.y) & 1) * 200704)) + ((((int)threadIdx.x) & 15) * 12544)) + (((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) % 3136)))+(3136*1), ((((((((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) / 3136) * 200704) + ((((int)threadIdx.y) & 1) * 200704)) + ((((int)threadIdx.x) & 15) * 12544)) + (((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) % 3136)))+(3136*2), ((((((((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) / 3136) * 200704) + ((((int)threadIdx.y) & 1) * 200704)) + ((((int)threadIdx.x) & 15) * 12544)) + (((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) % 3136)))+(3136*3));
        float4 __1;
        half4 __2;
        ushort4 __3;
          half4 __4;
          float4 __5;
            float4 __6;
              float4 __7;
                float4 __8;
                half4 __9;
                  half4 v__1 = *(half4*)(((half*)buf_dyn_shmem_ptr) + (((((((((int)threadIdx.y) >> 1) * 8704) + (ax0_ax1_fused_0_6 * 272)) + ((((int)threadIdx.x) >> 4) * 136)) + ((((int)threadIdx.y) & 1) * 64)) + ((((int)threadIdx.x) & 15) * 4)) + 15360));
                  half4 __10;
                  float4 v__2 = *(float4*)(in_s1_bias_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
                  __10.x = (half)(v__2.x);
                  __10.y = (half)(v__2.y);
                  __10.z = (half)(v__2.z);
                  __10.w = (half)(v__2.w);
                  __9.x = (v__1.x+__10.x);
                  __9.y = (v__1.y+__10.y);
                  __9.z = (v__1.z+__10.z);
                  __9.w = (v__1.w+__10.w);
                __8.x = (float)(__9.x);
                __8.y = (float)(__9.y);
                __8.z = (float)(__9.z);
                __8.w = (float)(__9.w);
                float4 __11;
                half4 __12;
                float4 v__3 = *(float4*)(in_s2_mean_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
                __12.x = (half)(v__3.x);
                __12.y = (half)(v__3.y);
                __12.z = (half)(v__3.z);
                __12.w = (half)(v__3.w);
                __11.x = (float)(__12.x);
                __11.y = (float)(__12.y);
                __11.z = (float)(__12.z);
                __11.w = (float)(__12.w);
                __7.x = (__8.x-__11.x);
                __7.y = (__8.y-__11.y);
                __7.z = (__8.z-__11.z);
                __7.w = (__8.w-__11.w);
              float4 __13;
                float4 __14;
                half4 __15;
                float4 v__4 = *(float4*)(in_s2_gamma_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
                __15.x = (half)(v__4.x);
                __15.y = (half)(v__4.y);
                __15.z = (half)(v__4.z);
                __15.w = (half)(v__4.w);
                __14.x = (float)(__15.x);
                __14.y = (float)(__15.y);
                __14.z = (float)(__15.z);
                __14.w = (float)(__15.w);
                float4 __16;
                float4 __17;
                  float4 __18;
                  half4 __19;
                  float4 v__5 = *(float4*)(in_s2_var_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
                  __19.x = (half)(v__5.x);
                  __19.y = (half)(v__5.y);
                  __19.z = (half)(v__5.z);
                  __19.w = (half)(v__5.w);
                  __18.x = (float)(__19.x);
                  __18.y = (float)(__19.y);
                  __18.z = (float)(__19.z);
                  __18.w = (float)(__19.w);
                  float4 v__6 = make_float4(0x1.4f8b588e368f1p-17f/*1.000000e-05*/, 0x1.4f8b588e368f1p-17f/*1.000000e-05*/, 0x1.4f8b588e368f1p-17f/*1.000000e-05*/, 0x1.4f8b588e368f1p-17f/*1.000000e-05*/);
                  __17.x = (__18.x+v__6.x);
                  __17.y = (__18.y+v__6.y);
                  __17.z = (__18.z+v__6.z);
                  __17.w = (__18.w+v__6.w);
                __16.x = sqrtf(__17.x);
                __16.y = sqrtf(__17.y);
                __16.z = sqrtf(__17.z);
                __16.w = sqrtf(__17.w);
                __13.x = (__14.x/__16.x);
                __13.y = (__14.y/__16.y);
                __13.z = (__14.z/__16.z);
                __13.w = (__14.w/__16.w);
              __6.x = (__7.x*__13.x);
              __6.y = (__7.y*__13.y);
              __6.z = (__7.z*__13.z);
              __6.w = (__7.w*__13.w);
            float4 __20;
            half4 __21;
            float4 v__7 = *(float4*)(in_s2_beta_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
            __21.x = (half)(v__7.x);
            __21.y = (half)(v__7.y);
            __21.z = (half)(v__7.z);
            __21.w = (half)(v__7.w);
            __20.x = (float)(__21.x);
            __20.y = (float)(__21.y);
            __20.z = (float)(__21.z);
            __20.w = (float)(__21.w);
            __5.x = (__6.x+__20.x);
            __5.y = (__6.y+__20.y);
            __5.z = (__6.z+__20.z);
            __5.w = (__6.w+__20.w);
          __4.x = (half)(__5.x);
          __4.y = (half)(__5.y);
          __4.z = (half)(__5.z);
          __4.w = (half)(__5.w);
          half4 v__8 = make_half4(__float2half_rn(0x0p+0f/*0.000000e+00*/), __float2half_rn(0x0p+0f/*0.000000e+00*/), __float2half_rn(0x0p+0f/*0.000000e+00*/), __float2half_rn(0x0p+0f/*0.000000e+00*/));
          __3.x = (__4.x<v__8.x);
          __3.y = (__4.y<v__8.y);
          __3.z = (__4.z<v__8.z);
          __3.w = (__4.w<v__8.w);
        half4 v__9 = make_half4(__float2half_rn(0x0p+0f/*0.000000e+00*/), __float2half_rn(0x0p+0f/*0.000000e+00*/), __float2half_rn(0x0p+0f/*0.000000e+00*/), __float2half_rn(0x0p+0f/*0.000000e+00*/));
        half4 __22;
        float4 __23;
          float4 __24;
            float4 __25;
              float4 __26;
              half4 __27;
                half4 v__10 = *(half4*)(((half*)buf_dyn_shmem_ptr) + (((((((((int)threadIdx.y) >> 1) * 8704) + (ax0_ax1_fused_0_6 * 272)) + ((((int)threadIdx.x) >> 4) * 136)) + ((((int)threadIdx.y) & 1) * 64)) + ((((int)threadIdx.x) & 15) * 4)) + 15360));
                half4 __28;
                float4 v__11 = *(float4*)(in_s1_bias_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
                __28.x = (half)(v__11.x);
                __28.y = (half)(v__11.y);
                __28.z = (half)(v__11.z);
                __28.w = (half)(v__11.w);
                __27.x = (v__10.x+__28.x);
                __27.y = (v__10.y+__28.y);
                __27.z = (v__10.z+__28.z);
                __27.w = (v__10.w+__28.w);
              __26.x = (float)(__27.x);
              __26.y = (float)(__27.y);
              __26.z = (float)(__27.z);
              __26.w = (float)(__27.w);
              float4 __29;
              half4 __30;
              float4 v__12 = *(float4*)(in_s2_mean_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
              __30.x = (half)(v__12.x);
              __30.y = (half)(v__12.y);
              __30.z = (half)(v__12.z);
              __30.w = (half)(v__12.w);
              __29.x = (float)(__30.x);
              __29.y = (float)(__30.y);
              __29.z = (float)(__30.z);
              __29.w = (float)(__30.w);
              __25.x = (__26.x-__29.x);
              __25.y = (__26.y-__29.y);
              __25.z = (__26.z-__29.z);
              __25.w = (__26.w-__29.w);
            float4 __31;
              float4 __32;
              half4 __33;
              float4 v__13 = *(float4*)(in_s2_gamma_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
              __33.x = (half)(v__13.x);
              __33.y = (half)(v__13.y);
              __33.z = (half)(v__13.z);
              __33.w = (half)(v__13.w);
              __32.x = (float)(__33.x);
              __32.y = (float)(__33.y);
              __32.z = (float)(__33.z);
              __32.w = (float)(__33.w);
              float4 __34;
              float4 __35;
                float4 __36;
                half4 __37;
                float4 v__14 = *(float4*)(in_s2_var_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
                __37.x = (half)(v__14.x);
                __37.y = (half)(v__14.y);
                __37.z = (half)(v__14.z);
                __37.w = (half)(v__14.w);
                __36.x = (float)(__37.x);
                __36.y = (float)(__37.y);
                __36.z = (float)(__37.z);
                __36.w = (float)(__37.w);
                float4 v__15 = make_float4(0x1.4f8b588e368f1p-17f/*1.000000e-05*/, 0x1.4f8b588e368f1p-17f/*1.000000e-05*/, 0x1.4f8b588e368f1p-17f/*1.000000e-05*/, 0x1.4f8b588e368f1p-17f/*1.000000e-05*/);
                __35.x = (__36.x+v__15.x);
                __35.y = (__36.y+v__15.y);
                __35.z = (__36.z+v__15.z);
                __35.w = (__36.w+v__15.w);
              __34.x = sqrtf(__35.x);
              __34.y = sqrtf(__35.y);
              __34.z = sqrtf(__35.z);
              __34.w = sqrtf(__35.w);
              __31.x = (__32.x/__34.x);
              __31.y = (__32.y/__34.y);
              __31.z = (__32.z/__34.z);
              __31.w = (__32.w/__34.w);
            __24.x = (__25.x*__31.x);
            __24.y = (__25.y*__31.y);
            __24.z = (__25.z*__31.z);
            __24.w = (__25.w*__31.w);
          float4 __38;
          half4 __39;
          float4 v__16 = *(float4*)(in_s2_beta_ptr + (((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)));
          __39.x = (half)(v__16.x);
          __39.y = (half)(v__16.y);
          __39.z = (half)(v__16.z);
          __39.w = (half)(v__16.w);
          __38.x = (float)(__39.x);
          __38.y = (float)(__39.y);
          __38.z = (float)(__39.z);
          __38.w = (float)(__39.w);
          __23.x = (__24.x+__38.x);
          __23.y = (__24.y+__38.y);
          __23.z = (__24.z+__38.z);
          __23.w = (__24.w+__38.w);
        __22.x = (half)(__23.x);
        __22.y = (half)(__23.y);
        __22.z = (half)(__23.z);
        __22.w = (half)(__23.w);
        __2.x = (bool(__3.x)?v__9.x:__22.x);
        __2.y = (bool(__3.y)?v__9.y:__22.y);
        __2.z = (bool(__3.z)?v__9.z:__22.z);
        __2.w = (bool(__3.w)?v__9.w:__22.w);
        __1.x = (float)(__2.x);
        __1.y = (float)(__2.y);
        __1.z = (float)(__2.z);
        __1.w = (float)(__2.w);
        out_s3_relu_ptr[v_.x] = __1.x;
        out_s3_relu_ptr[v_.y] = __1.y;
        out_s3_relu_ptr[v_.z] = __1.z;
        out_s3_relu_ptr[v_.w] = __1.w;
    }
  }
}


