// Test tool for the numpy oracle (tests/oracle/image_forward_vs_reference.py): runs a prompt with
// images through the language model (and its MTP head, when it has one) and writes the logits.
//   qmlx_image_logits MODEL TOKENS IMAGES EMBEDDINGS CHUNK STEPS OUT
// TOKENS: the comma-separated prompt (pad tokens at the images' rows). IMAGES: the images as
// FIRST_ROW:GRID_H:GRID_W, comma-separated, in row order. EMBEDDINGS: their embedding rows one
// image after the other (little-endian float32, [rows][hidden]). The prompt is fed in calls of
// CHUNK rows (0: one call), each given all the images; then STEPS - 1 greedy tokens one by one.
// OUT gets the STEPS logits rows (after the prompt, then after each greedy token; float32
// [STEPS][vocab]); with an MTP head, OUT.mtp gets its STEPS rows fed as qmlx_mtp_logits feeds
// them (a row per prompt position, then one per step). stdout: {"tokens": [g0, g1, ...]}.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model.h"

namespace {

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, by);)
    if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw qmlx::Error("cannot read " + path);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

std::vector<qmlx::SequenceImage> parse_images(const std::string& spec,
                                              const std::vector<float>& embeddings, int hidden) {
  std::vector<qmlx::SequenceImage> images;
  size_t used = 0;
  for (const std::string& item : split(spec, ',')) {
    const std::vector<std::string> parts = split(item, ':');
    if (parts.size() != 3) throw qmlx::Error("an image is FIRST_ROW:GRID_H:GRID_W: " + item);
    qmlx::SequenceImage image;
    image.first_row = std::stoll(parts[0]);
    image.grid_h = std::stoi(parts[1]);
    image.grid_w = std::stoi(parts[2]);
    const size_t values = size_t(image.rows()) * size_t(hidden);
    if (used + values > embeddings.size()) throw qmlx::Error("too few embedding values");
    image.embeddings =
        std::make_shared<std::vector<float>>(embeddings.begin() + std::ptrdiff_t(used),
                                             embeddings.begin() + std::ptrdiff_t(used + values));
    used += values;
    images.push_back(std::move(image));
  }
  qmlx::place_images(images);
  return images;
}

int32_t argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

void write_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * 4));
  if (!file) throw qmlx::Error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s MODEL TOKENS IMAGES EMBEDDINGS CHUNK STEPS OUT\n", argv[0]);
    return 2;
  }
  try {
    auto model = qmlx::Model::load(argv[1]);
    std::vector<int32_t> prompt;
    for (const std::string& t : split(argv[2], ',')) prompt.push_back(std::stoi(t));
    const size_t H = size_t(model->config().hidden_size), V = size_t(model->config().vocab_size);
    const std::vector<qmlx::SequenceImage> images =
        parse_images(argv[3], read_floats(argv[4]), int(H));
    const size_t chunk = std::stoul(argv[5]);
    const int steps = std::stoi(argv[6]);
    if (prompt.empty() || steps < 1) throw qmlx::Error("need a prompt and STEPS >= 1");

    qmlx::ModelState state = model->new_state(qmlx::KvType::kF32);
    std::vector<float> hidden(prompt.size() * H), logits(V), out, mtp_out;
    qmlx::ForwardOptions options;
    options.images = images;
    for (size_t done = 0; done < prompt.size();) {
      const size_t n = chunk ? std::min(chunk, prompt.size() - done) : prompt.size();
      options.final_hidden = hidden.data() + done * H;
      model->forward(std::span(prompt).subspan(done, n), state, logits.data(), options);
      done += n;
    }
    std::vector<int32_t> greedy{argmax(logits)};
    out.insert(out.end(), logits.begin(), logits.end());

    const bool mtp = model->has_mtp();
    qmlx::ModelState head = mtp ? model->new_mtp_state(qmlx::KvType::kF32) : qmlx::ModelState{};
    std::vector<float> mtp_logits(V);
    if (mtp) {
      std::vector<int32_t> next(prompt.begin() + 1, prompt.end());
      next.push_back(greedy.back());
      model->mtp_forward(hidden, next, head, mtp_logits.data(), qmlx::RowKind::kGenerated, nullptr,
                         images);
      mtp_out.insert(mtp_out.end(), mtp_logits.begin(), mtp_logits.end());
    }
    hidden.resize(H);
    options.final_hidden = hidden.data();
    options.rows = qmlx::RowKind::kGenerated;
    for (int step = 1; step < steps; ++step) {
      const int32_t fed = greedy.back();
      model->forward(std::span(&fed, 1), state, logits.data(), options);
      greedy.push_back(argmax(logits));
      out.insert(out.end(), logits.begin(), logits.end());
      if (!mtp) continue;
      model->mtp_forward(hidden, std::span(&greedy.back(), 1), head, mtp_logits.data(),
                         qmlx::RowKind::kGenerated, nullptr, images);
      mtp_out.insert(mtp_out.end(), mtp_logits.begin(), mtp_logits.end());
    }
    write_floats(argv[7], out);
    if (mtp) write_floats(std::string(argv[7]) + ".mtp", mtp_out);
    std::string json = "{\"tokens\": [";
    for (size_t i = 0; i < greedy.size(); ++i) json += (i ? ", " : "") + std::to_string(greedy[i]);
    std::printf("%s]}\n", json.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
