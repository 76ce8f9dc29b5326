// The Fused Kernel Library's README example, built with FKL's own headers as a shared library
// that tefuse.bench.fkl loads with ctypes, so that FKL's kernel is launched on the same stream as
// tefuse's (and captured into the same kind of CUDA graph) and timed in turns with it in one
// process: a 3840x2160 uint8 RGB image, five crops of different sizes, each resized bilinear to
// 60x60 keeping its aspect ratio (centred on a background colour), * 1.4, - 0.5, / 255,
// RGB -> BGR, written to one contiguous float [5, 60, 60, 3] tensor.
//
// Built by tefuse.bench.fkl (`build`):  nvcc -std=c++20 -O3 --expt-relaxed-constexpr -shared -Xcompiler -fPIC
//                              -arch=sm_XX -I <FKL>/include fkl_example.cu -o libfkl_example.so
#include <cuda_runtime.h>

#include <fused_kernel/algorithms/basic_ops/arithmetic.h>
#include <fused_kernel/algorithms/basic_ops/memory_operations.h>
#include <fused_kernel/algorithms/image_processing/color_conversion.h>
#include <fused_kernel/algorithms/image_processing/crop.h>
#include <fused_kernel/algorithms/image_processing/resize.h>
#include <fused_kernel/fused_kernel.h>

using namespace fk;

constexpr int BATCH = 5;

extern "C" {

// The rectangles of the example (x, y, width, height): FKL takes them at compile time.
int fkl_example_rects(int* xywh) {
    constexpr int r[BATCH][4] = {{0, 0, 34, 25}, {10, 10, 70, 15}, {20, 20, 60, 59}, {30, 30, 20, 23}, {40, 40, 12, 11}};
    for (int i = 0; i < BATCH; ++i)
        for (int j = 0; j < 4; ++j) xywh[4 * i + j] = r[i][j];
    return BATCH;
}

// One run of the pipeline: `image` a device [height, width, 3] uint8 array (rows `pitch` bytes
// apart), `out` a device float [5, 60, 60, 3] array, launched on `stream`. Returns a cudaError_t.
int fkl_example_run(void* image, int width, int height, int pitch, void* out, float bg_r, float bg_g,
                    float bg_b, void* stream) {
    constexpr Size outputSize(60, 60);
    constexpr std::array<Rect, BATCH> crops{Rect(0, 0, 34, 25), Rect(10, 10, 70, 15), Rect(20, 20, 60, 59),
                                            Rect(30, 30, 20, 23), Rect(40, 40, 12, 11)};
    Stream s(static_cast<cudaStream_t>(stream));
    const Ptr2D<uchar3> src(static_cast<uchar3*>(image), width, height, pitch, MemType::Device);
    Tensor<float3> dst(static_cast<float3*>(out), outputSize.width, outputSize.height, BATCH, 1, MemType::Device);
    const float3 background{bg_r, bg_g, bg_b};
    const auto sender = PerThreadRead<ND::_2D, uchar3>::build(src)
        .then(Crop<>::build(crops))
        .then(Resize<InterpolationType::INTER_LINEAR, AspectRatio::PRESERVE_AR>::build(outputSize, background))
        .then(Mul<float3>::build(make_set<float3>(1.4f)))
        .then(Sub<float3>::build(make_set<float3>(0.5f)))
        .then(Div<float3>::build(make_set<float3>(255.f)))
        .then(ColorConversion<ColorConversionCodes::COLOR_RGB2BGR, float3, float3>::build());
    executeOperations<TransformDPP<>>(s, sender, TensorWrite<float3>::build(dst));
    return static_cast<int>(cudaGetLastError());
}

}  // extern "C"
