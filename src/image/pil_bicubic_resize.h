// resize_bicubic_like_pil: an RGB8 image resized exactly as PIL's Image.resize(size,
// Image.BICUBIC) does it, which is what transformers' slow Qwen image processor calls, so the
// encoder sees the same pixels here as under transformers (the tests check uint8 equality
// against Debian's python3-pil). The facts it reproduces (read in Pillow's Resample.c):
//  - separable convolution: a horizontal pass over the source rows the vertical pass needs,
//    rounded and clipped to uint8, then a vertical pass, rounded and clipped again;
//    a pass whose size does not change is skipped;
//  - the cubic kernel with a = -0.5, support 2, widened by the scale when downsampling (support
//    = 2 * in/out, the kernel's argument divided by in/out), so downsizing averages (antialias);
//  - for output index i, center = (i + 0.5) * in/out, taps from int(center - support + 0.5)
//    to int(center + support + 0.5) clamped to the image, each weight
//    kernel((j - center + 0.5) * (1 / filterscale)), normalised to sum 1 in doubles;
//  - weights as 22-bit fixed point (round half away from zero), accumulated in int32 from
//    a bias of 2^21, the result shifted down by 22 and clamped to 0..255.
#pragma once

#include "image/rgb_image.h"

namespace qmlx::image {

RgbImage resize_bicubic_like_pil(const RgbImage& image, int width, int height);

}  // namespace qmlx::image
