// Test tool for the numpy oracle (tests/oracle/vision_vs_reference.py): runs a model's vision
// tower on given pixel values and writes its output.
//   qmlx_vision_encode MODEL T H W PIXELS OUT [MMPROJ]
// PIXELS holds the pixel_values rows of one image of T x H x W patches (little-endian float32,
// [T*H*W][patch_dim], merge blocks consecutive as the processor orders them); OUT gets the
// encoder's output, [T*H*W / 4][out_hidden] float32. Exit status 1 with the reason on stderr
// when the model has no vision tower. With MMPROJ, the tower is that llama.cpp mmproj file's
// (ModelLoadOptions::mmproj).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model.h"

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr, "usage: %s MODEL T H W PIXELS OUT [MMPROJ]\n", argv[0]);
    return 2;
  }
  try {
    qmlx::ModelLoadOptions options;
    if (argc == 8) options.mmproj = argv[7];
    auto model = qmlx::Model::load(argv[1], {}, options);
    const qmlx::PatchGrid grid{std::stoi(argv[2]), std::stoi(argv[3]), std::stoi(argv[4])};
    std::ifstream in(argv[5], std::ios::binary);
    if (!in) throw qmlx::Error(std::string("cannot read ") + argv[5]);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    std::vector<float> pixels(bytes.size() / sizeof(float));
    std::memcpy(pixels.data(), bytes.data(), pixels.size() * sizeof(float));
    const std::vector<float> out = model->encode_image(pixels, grid);
    std::ofstream file(argv[6], std::ios::binary);
    file.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size() * 4));
    if (!file) throw qmlx::Error(std::string("cannot write ") + argv[6]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
