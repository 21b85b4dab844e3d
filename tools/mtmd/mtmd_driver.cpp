// Runs one image prompt through llama.cpp's libmtmd + libllama (their public C API only), for
// tests/oracle/mtmd_vs_qmlx.py. Built by tools/mtmd/build_mtmd.sh against the llama.cpp that
// node-llama-cpp@3.21.1 ships; not part of the qmlx build.
//   qmlx_mtmd_driver MODEL MMPROJ IMAGE PROMPT MIN_TOKENS MAX_TOKENS STEPS OUT
// PROMPT holds mtmd's media marker (mtmd_default_marker(), "<__media__>") once; special tokens
// in it are parsed, none is added. MIN_TOKENS / MAX_TOKENS bound the merged image tokens
// (mtmd_context_params::image_{min,max}_tokens; the tiny towers' preprocessor bounds are
// 4 and 64, mtmd's Qwen-VL defaults 8 and 4096). Writes
//   OUT.json    {"tokens": [...], "image": {"first_row", "n_tokens", "grid_h", "grid_w",
//               "n_pos", "positions": [[t, y, x], ...]}, "greedy": [...], "n_embd", "n_vocab"}
//               (image rows are -1 in "tokens"; positions: mtmd's M-RoPE [t, h, w] of each
//               image row, absolute; grid_h x grid_w: the merged grid they span)
//   OUT.embd    the image chunk's encoder output, float32 [n_tokens][n_embd]
//   OUT.logits  float32 [STEPS][n_vocab]: the last prompt position's logits, then those after
//               each greedy token fed back
// The KV cache is F32 (qmlx's oracle tools run F32 too); flash attention is off.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

namespace {

void quiet_log(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

bool write_floats(const std::string& path, const float* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(n * sizeof(float)));
  return bool(out);
}

std::string join(const std::vector<int>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s;
}

// QMLX_MTMD_DUMP=DIR: the vision graph's named F32 tensors (cb_eval) as DIR/NAME.f32, the
// last evaluation of each name; for tracing a difference to its first op.
bool dump_tensor(ggml_tensor* t, bool ask, void* dir) {
  if (ask) return t->type == GGML_TYPE_F32;
  std::vector<float> data(size_t(ggml_nelements(t)));
  if (ggml_is_contiguous(t)) {
    ggml_backend_tensor_get(t, data.data(), 0, ggml_nbytes(t));
    std::string name = ggml_get_name(t);
    for (char& c : name)
      if (c == '/' || c == ' ') c = '_';
    write_floats(std::string(static_cast<const char*>(dir)) + "/" + name + ".f32", data.data(),
                 data.size());
  }
  return true;
}

int argmax(const float* row, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

int fail(const char* what) {
  std::fprintf(stderr, "error: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s MODEL MMPROJ IMAGE PROMPT MIN_TOKENS MAX_TOKENS STEPS OUT\n",
                 argv[0]);
    return 2;
  }
  const std::string out = argv[8];
  const int steps = std::atoi(argv[7]);
  if (steps < 1) return fail("STEPS must be >= 1");
  llama_log_set(quiet_log, nullptr);
  mtmd_helper_log_set(quiet_log, nullptr);
  llama_backend_init();

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return fail("llama.cpp could not load the text model");

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = 1024;
  cp.n_ubatch = 1024;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  llama_context* lctx = llama_init_from_model(model, cp);
  if (!lctx) return fail("llama.cpp could not create a context");

  mtmd_context_params vp = mtmd_context_params_default();
  vp.use_gpu = false;
  vp.print_timings = false;
  vp.n_threads = 2;
  vp.warmup = false;
  vp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  vp.image_min_tokens = std::atoi(argv[5]);
  vp.image_max_tokens = std::atoi(argv[6]);
  const char* dump = std::getenv("QMLX_MTMD_DUMP");
  if (dump) {
    vp.cb_eval = dump_tensor;
    vp.cb_eval_user_data = const_cast<char*>(dump);
  }
  mtmd_context* mctx = mtmd_init_from_file(argv[2], model, vp);
  if (!mctx) return fail("mtmd could not load the mmproj file");

  mtmd_helper_bitmap_wrapper image =
      mtmd_helper_bitmap_init_from_file(mctx, argv[3], false, mtmd_helper_init_opt_default());
  if (!image.bitmap) return fail("mtmd could not load the image");

  const std::string prompt = argv[4];
  mtmd_input_text text{prompt.c_str(), prompt.size(), /*add_special=*/false,
                       /*parse_special=*/true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bitmaps[] = {image.bitmap};
  if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) return fail("mtmd_tokenize failed");

  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const int n_embd = llama_model_n_embd_inp(model);
  std::vector<int> tokens, greedy, positions;
  std::vector<float> embd, logits;
  int first_row = -1, n_image = 0, grid_h = 0, grid_w = 0, n_image_pos = 0, images = 0;
  llama_pos n_past = 0;
  const size_t n_chunks = mtmd_input_chunks_size(chunks);
  for (size_t c = 0; c < n_chunks; ++c) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, c);
    const bool last = c + 1 == n_chunks;
    llama_pos new_n_past = n_past;
    if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* t = mtmd_input_chunk_get_tokens_text(chunk, &n);
      tokens.insert(tokens.end(), t, t + n);
      if (mtmd_helper_eval_chunk_single(mctx, lctx, chunk, n_past, 0, cp.n_batch, last,
                                        &new_n_past) != 0)
        return fail("decoding a text chunk failed");
    } else if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_IMAGE) {
      if (++images > 1) return fail("the prompt has more than one image chunk");
      if (last) return fail("the prompt ends in the image; put text after the marker");
      const mtmd_image_tokens* it = mtmd_input_chunk_get_tokens_image(chunk);
      n_image = int(mtmd_input_chunk_get_n_tokens(chunk));
      n_image_pos = int(mtmd_input_chunk_get_n_pos(chunk));
      first_row = int(tokens.size());
      tokens.insert(tokens.end(), size_t(n_image), -1);
      for (int i = 0; i < n_image; ++i) {
        const mtmd_decoder_pos p = mtmd_image_tokens_get_decoder_pos(it, n_past, size_t(i));
        const mtmd_decoder_pos r = mtmd_image_tokens_get_decoder_pos(it, 0, size_t(i));
        positions.insert(positions.end(), {int(p.t), int(p.y), int(p.x)});
        grid_h = std::max(grid_h, int(r.y) + 1);
        grid_w = std::max(grid_w, int(r.x) + 1);
      }
      if (mtmd_encode_chunk(mctx, chunk) != 0) return fail("mtmd_encode_chunk failed");
      const float* e = mtmd_get_output_embd(mctx);
      embd.assign(e, e + size_t(n_image) * size_t(n_embd));
      if (mtmd_helper_decode_image_chunk(mctx, lctx, chunk, embd.data(), n_past, 0, cp.n_batch,
                                         &new_n_past, nullptr, nullptr) != 0)
        return fail("decoding the image chunk failed");
    } else {
      return fail("unexpected chunk type");
    }
    n_past = new_n_past;
  }
  if (images != 1) return fail("the prompt has no image chunk");

  llama_batch one = llama_batch_init(1, 0, 1);
  for (int step = 0; step < steps; ++step) {
    const float* row = llama_get_logits_ith(lctx, -1);
    if (!row) return fail("no logits");
    logits.insert(logits.end(), row, row + n_vocab);
    greedy.push_back(argmax(row, n_vocab));
    if (step + 1 == steps) break;
    one.n_tokens = 1;
    one.token[0] = greedy.back();
    one.pos[0] = n_past++;
    one.n_seq_id[0] = 1;
    one.seq_id[0][0] = 0;
    one.logits[0] = true;
    if (llama_decode(lctx, one) != 0) return fail("decoding a greedy token failed");
  }
  llama_batch_free(one);

  if (!write_floats(out + ".embd", embd.data(), embd.size()) ||
      !write_floats(out + ".logits", logits.data(), logits.size()))
    return fail("cannot write the outputs");
  std::ofstream json(out + ".json");
  json << "{\"tokens\": [" << join(tokens) << "], \"greedy\": [" << join(greedy)
       << "], \"n_embd\": " << n_embd << ", \"n_vocab\": " << n_vocab
       << ", \"image\": {\"first_row\": " << first_row << ", \"n_tokens\": " << n_image
       << ", \"grid_h\": " << grid_h << ", \"grid_w\": " << grid_w << ", \"n_pos\": " << n_image_pos
       << ", \"positions\": [";
  for (size_t i = 0; i < positions.size(); i += 3)
    json << (i ? ", " : "") << "[" << positions[i] << ", " << positions[i + 1] << ", "
         << positions[i + 2] << "]";
  json << "]}}\n";
  if (!json) return fail("cannot write the json");

  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(image.bitmap);
  mtmd_free(mctx);
  llama_free(lctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
