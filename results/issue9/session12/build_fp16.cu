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
  int cse_v6 = (((int)threadIdx.y) * 32);
  int cse_v21 = ((((int)threadIdx.y) * 18432) + (((int)threadIdx.x) * 576));
  for (int ax0_ax1_fused_0 = 0; ax0_ax1_fused_0 < 32; ++ax0_ax1_fused_0) {
    int cse_v45 = (((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0 * 4)) + ((int)threadIdx.y));
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
    if (((int)threadIdx.y) < 2) {
      condval_1 = ((half)in_s0_weight_ptr[(((((int)threadIdx.y) * 18432) + (((int)threadIdx.x) * 576)) + (ax0_ax1_fused_0_1 * 9))]);
    } else {
      condval_1 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
    }
    ((half*)buf_dyn_shmem_ptr)[((((ax0_ax1_fused_0_1 * 136) + (((int)threadIdx.y) * 32)) + ((int)threadIdx.x)) + 15360)] = condval_1;
  }
  tvm_builtin_ptx_cp_async_commit_group_async_commit_group();
  for (int ax0_ax1_fused_0_2 = 0; ax0_ax1_fused_0_2 < 32; ++ax0_ax1_fused_0_2) {
    int cse_v46 = (((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_2 * 4)) + ((int)threadIdx.y));
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
    if (((int)threadIdx.y) < 2) {
      condval_3 = ((half)in_s0_weight_ptr[((((((int)threadIdx.y) * 18432) + (((int)threadIdx.x) * 576)) + (ax0_ax1_fused_0_3 * 9)) + 288)]);
    } else {
      condval_3 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
    }
    ((half*)buf_dyn_shmem_ptr)[((((ax0_ax1_fused_0_3 * 136) + (((int)threadIdx.y) * 32)) + ((int)threadIdx.x)) + 19712)] = condval_3;
  }
  tvm_builtin_ptx_cp_async_commit_group_async_commit_group();
  int cse_v9 = (((int)threadIdx.x) * 8);
  int cse_v11 = (((int)threadIdx.y) >> 1);
  int cse_v12 = (((int)threadIdx.x) & 15);
  int cse_v13 = (((int)threadIdx.x) >> 4);
  int cse_v14 = (((int)threadIdx.y) & 1);
  int cse_v24 = ((((int)threadIdx.y) >> 1) * 2560);
  int cse_v25 = ((((int)threadIdx.x) >> 4) * 8);
  int cse_v26 = ((((int)threadIdx.x) * 8) + 256);
  int cse_v27 = ((((int)threadIdx.x) * 8) + 512);
  int cse_v28 = ((((int)threadIdx.x) * 8) + 768);
  int cse_v29 = ((((int)threadIdx.y) & 1) * 64);
  int cse_v30 = ((((int)threadIdx.x) * 8) + 1024);
  int cse_v31 = ((((int)threadIdx.x) * 8) + 1280);
  int cse_v32 = ((((int)threadIdx.x) * 8) + 1536);
  int cse_v33 = ((((int)threadIdx.x) * 8) + 1792);
  int cse_v50 = (((((int)threadIdx.x) & 15) * 40) + ((((int)threadIdx.x) >> 4) * 8));
  int cse_v52 = (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8));
  for (int ax3_0_0 = 0; ax3_0_0 < 16; ++ax3_0_0) {
    int cse_v7 = (ax3_0_0 + 2);
    int cse_v8 = (ax3_0_0 & 1);
    int cse_v22 = ((ax3_0_0 + 2) / 6);
    int cse_v23 = ((ax3_0_0 + 2) % 3);
    int cse_v48 = (((ax3_0_0 >> 1) + 1) % 3);
    __syncthreads();
    for (int ax0_ax1_fused_0_4 = 0; ax0_ax1_fused_0_4 < 32; ++ax0_ax1_fused_0_4) {
      int cse_v47 = (((((int)blockIdx.y) * 128) + (ax0_ax1_fused_0_4 * 4)) + ((int)threadIdx.y));
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
      if (((int)threadIdx.y) < 2) {
        condval_5 = ((half)in_s0_weight_ptr[((((((((int)threadIdx.y) * 18432) + (((int)threadIdx.x) * 576)) + ((ax3_0_0 & 1) * 288)) + (ax0_ax1_fused_0_5 * 9)) + (((ax3_0_0 + 2) / 6) * 3)) + (((ax3_0_0 >> 1) + 1) % 3))]);
      } else {
        condval_5 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
      }
      ((half*)buf_dyn_shmem_ptr)[(((((((ax3_0_0 + 2) % 3) * 4352) + (ax0_ax1_fused_0_5 * 136)) + (((int)threadIdx.y) * 32)) + ((int)threadIdx.x)) + 15360)] = condval_5;
    }
    tvm_builtin_ptx_cp_async_commit_group_async_commit_group();
    int cse_v10 = (ax3_0_0 % 3);
    int cse_v49 = (((ax3_0_0 % 3) * 5120) + ((((int)threadIdx.y) >> 1) * 2560));
    int cse_v51 = (((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64));
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
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 15360)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 15376)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 15392)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 15408)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
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
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 17536)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 17552)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 17568)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[((((ax3_0_0 % 3) * 4352) + ((((int)threadIdx.y) & 1) * 64)) + 17584)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }
    for (int ax1_0_2 = 0; ax1_0_2 < 4; ++ax1_0_2) {
      for (int ax2_0_2 = 0; ax2_0_2 < 4; ++ax2_0_2) {
        int cse_v15 = (ax2_0_2 * 256);
        int cse_v34 = ((ax1_0_2 * 256) + (((int)threadIdx.x) * 8));
        int cse_v35 = ((ax2_0_2 * 256) + (((int)threadIdx.x) * 8));
        int cse_v53 = (((ax1_0_2 * 1024) + (ax2_0_2 * 256)) + (((int)threadIdx.x) * 8));

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
        int cse_v36 = ((ax2_0_2_1 * 256) + (((int)threadIdx.x) * 8));
        int cse_v54 = (((ax1_0_2_1 * 256) + (((int)threadIdx.x) * 8)) + 1024);
        int cse_v55 = (((ax1_0_2_1 * 1024) + (ax2_0_2_1 * 256)) + (((int)threadIdx.x) * 8));

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
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 19712)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 19728)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 19744)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 19760)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
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
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 21888)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 21904)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 21920)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 21936)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }
  for (int ax1_0_2_2 = 0; ax1_0_2_2 < 4; ++ax1_0_2_2) {
    for (int ax2_0_2_2 = 0; ax2_0_2_2 < 4; ++ax2_0_2_2) {
      int cse_v17 = (ax2_0_2_2 * 256);
      int cse_v37 = ((ax1_0_2_2 * 256) + (((int)threadIdx.x) * 8));
      int cse_v38 = ((ax2_0_2_2 * 256) + (((int)threadIdx.x) * 8));
      int cse_v56 = (((ax1_0_2_2 * 1024) + (ax2_0_2_2 * 256)) + (((int)threadIdx.x) * 8));

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
      int cse_v39 = ((ax2_0_2_3 * 256) + (((int)threadIdx.x) * 8));
      int cse_v57 = (((ax1_0_2_3 * 256) + (((int)threadIdx.x) * 8)) + 1024);
      int cse_v58 = (((ax1_0_2_3 * 1024) + (ax2_0_2_3 * 256)) + (((int)threadIdx.x) * 8));

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
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 24064)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + (((int)threadIdx.x) * 8)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 24080)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 256)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 24096)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 512)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 24112)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
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
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 26240)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1024)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 26256)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1280)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 26272)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1536)))[3])
      : "r"(addr)
    );
  }

  {
    unsigned int addr = __cvta_generic_to_shared((&(((half*)buf_dyn_shmem_ptr)[(((((int)threadIdx.y) & 1) * 64) + 26288)])) + (((((int)threadIdx.x) & 15) * 136) + ((((int)threadIdx.x) >> 4) * 8)));
    __asm__ __volatile__(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
      "{%0, %1, %2, %3}, [%4];\n"
      : "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[0]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[1]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[2]), "=r"(((unsigned *)(weight_in_reindex_pad_shared_dyn_warp_ptr + ((((int)threadIdx.x) * 8) + 1792)))[3])
      : "r"(addr)
    );
  }
  for (int ax1_0_2_4 = 0; ax1_0_2_4 < 4; ++ax1_0_2_4) {
    for (int ax2_0_2_4 = 0; ax2_0_2_4 < 4; ++ax2_0_2_4) {
      int cse_v19 = (ax2_0_2_4 * 256);
      int cse_v40 = ((ax1_0_2_4 * 256) + (((int)threadIdx.x) * 8));
      int cse_v41 = ((ax2_0_2_4 * 256) + (((int)threadIdx.x) * 8));
      int cse_v59 = (((ax1_0_2_4 * 1024) + (ax2_0_2_4 * 256)) + (((int)threadIdx.x) * 8));

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
      int cse_v42 = ((ax2_0_2_5 * 256) + (((int)threadIdx.x) * 8));
      int cse_v60 = (((ax1_0_2_5 * 256) + (((int)threadIdx.x) * 8)) + 1024);
      int cse_v61 = (((ax1_0_2_5 * 1024) + (ax2_0_2_5 * 256)) + (((int)threadIdx.x) * 8));

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
  int cse_v43 = ((((int)threadIdx.y) >> 1) * 8192);
  __syncthreads();
  for (int ax0_0 = 0; ax0_0 < 4; ++ax0_0) {
    for (int ax1_0 = 0; ax1_0 < 4; ++ax1_0) {
      for (int local_id = 0; local_id < 8; ++local_id) {
        ((float*)buf_dyn_shmem_ptr)[((((((((((((int)threadIdx.y) >> 1) * 8192) + (ax0_0 * 2048)) + (((local_id & 3) >> 1) * 1024)) + ((((int)threadIdx.x) >> 2) * 128)) + ((((int)threadIdx.y) & 1) * 64)) + (ax1_0 * 16)) + ((local_id >> 2) * 8)) + ((((int)threadIdx.x) & 3) * 2)) + (local_id & 1))] = __shfl_sync(__activemask(), conv2d_reindex_pad_shared_dyn_warp_ptr[(((ax0_0 * 32) + (ax1_0 * 8)) + local_id)], ((int)threadIdx.x), 32);
      }
    }
  }
  __syncthreads();
  for (int ax0_ax1_fused_0_6 = 0; ax0_ax1_fused_0_6 < 32; ++ax0_ax1_fused_0_6) {
    if ((((int)threadIdx.y) & 1) < 1) {
      for (int ax0_ax1_fused_2_s = 0; ax0_ax1_fused_2_s < 4; ++ax0_ax1_fused_2_s) {
        int cse_v44 = ((((int)threadIdx.x) & 15) * 4);
        int cse_v62 = ((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s);
        int cse_v65 = ((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4));
        int cse_v66 = (((((((((int)threadIdx.y) >> 1) * 8192) + (ax0_ax1_fused_0_6 * 256)) + ((((int)threadIdx.x) >> 4) * 128)) + ((((int)threadIdx.y) & 1) * 64)) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s);
        half condval_6;
        if (((half)(((((float)(((half)((float*)buf_dyn_shmem_ptr)[(((((((((int)threadIdx.y) >> 1) * 8192) + (ax0_ax1_fused_0_6 * 256)) + ((((int)threadIdx.x) >> 4) * 128)) + ((((int)threadIdx.y) & 1) * 64)) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]) + ((half)in_s1_bias_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]))) - ((float)((half)in_s2_mean_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]))) * (((float)((half)in_s2_gamma_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)])) * rsqrtf((((float)((half)in_s2_var_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)])) + 0x1.4f8b588e368f1p-17f/*1.000000e-05*/)))) + ((float)((half)in_s2_beta_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)])))) < __float2half_rn(0x0p+0f/*0.000000e+00*/)) {
          condval_6 = __float2half_rn(0x0p+0f/*0.000000e+00*/);
        } else {
          condval_6 = ((half)(((((float)(((half)((float*)buf_dyn_shmem_ptr)[(((((((((int)threadIdx.y) >> 1) * 8192) + (ax0_ax1_fused_0_6 * 256)) + ((((int)threadIdx.x) >> 4) * 128)) + ((((int)threadIdx.y) & 1) * 64)) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]) + ((half)in_s1_bias_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]))) - ((float)((half)in_s2_mean_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]))) * (((float)((half)in_s2_gamma_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)])) * rsqrtf((((float)((half)in_s2_var_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)])) + 0x1.4f8b588e368f1p-17f/*1.000000e-05*/)))) + ((float)((half)in_s2_beta_ptr[((((((int)threadIdx.y) & 1) * 64) + ((((int)threadIdx.x) & 15) * 4)) + ax0_ax1_fused_2_s)]))));
        }
        out_s3_relu_ptr[((((((((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) / 3136) * 200704) + ((((int)threadIdx.y) & 1) * 200704)) + ((((int)threadIdx.x) & 15) * 12544)) + (ax0_ax1_fused_2_s * 3136)) + (((((((int)blockIdx.y) * 128) + ((((int)threadIdx.y) >> 1) * 64)) + (ax0_ax1_fused_0_6 * 2)) + (((int)threadIdx.x) >> 4)) % 3136))] = ((float)condval_6);
      }
    }
  }
}


