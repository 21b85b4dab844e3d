#include "modelgen/model_writer.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "modelgen/chat_template.h"
#include "modelgen/model_config.h"
#include "modelgen/random_weights.h"
#include "modelgen/weight_layout.h"

namespace qmlx::modelgen {

namespace {

void write_json(const std::string& path, const nlohmann::json& value) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"),
                                                       &std::fclose);
  if (!file) throw Error("cannot create " + path);
  const std::string text = value.dump(2) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file.get()) != text.size()) {
    throw Error("cannot write " + path);
  }
}

}  // namespace

void write_model_folder(const ModelOptions& options, const LogicalModel& weights,
                        const Vocabulary& vocabulary, const std::string& chat_template,
                        const std::string& out_dir) {
  validate_options(options);
  if (options.shape.vocab < vocabulary.size()) {
    throw Error("--vocab " + std::to_string(options.shape.vocab) + " is smaller than the " +
                std::to_string(vocabulary.size()) + " tokens of the tokenizer");
  }
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) throw Error("cannot create " + out_dir + ": " + error.message());

  SpecialIds ids;
  ids.endoftext = vocabulary.special_id("<|endoftext|>");
  ids.im_end = vocabulary.special_id("<|im_end|>");
  ids.vision_start = vocabulary.special_id("<|vision_start|>");
  ids.vision_end = vocabulary.special_id("<|vision_end|>");
  ids.image_pad = vocabulary.special_id("<|image_pad|>");
  ids.video_pad = vocabulary.special_id("<|video_pad|>");
  auto laid_out = lay_out_weights(weights, options);
  std::vector<std::string> names;
  for (const TensorEntry& t : laid_out.tensors) names.push_back(t.name);
  require_omitted_tensors_exist(options, names);
  std::erase_if(laid_out.tensors,
                [&](const TensorEntry& t) { return is_omitted(options, t.name); });
  write_json(out_dir + "/config.json", model_config_json(options, ids, laid_out.quantization));
  write_json(out_dir + "/generation_config.json", generation_config_json(ids));
  if (options.shape.vision)
    write_json(out_dir + "/preprocessor_config.json", preprocessor_config_json(options));
  write_json(out_dir + "/tokenizer.json", tokenizer_json(vocabulary, options.arch));
  write_json(out_dir + "/tokenizer_config.json", tokenizer_config_json(vocabulary, chat_template));
  const Metadata metadata = {{"format", options.layout == Layout::kMLX ? "mlx" : "pt"}};
  write_safetensors_model(out_dir, std::move(laid_out.tensors), options.shards, metadata);
}

void write_random_model(const ModelOptions& options, const std::string& out_dir) {
  validate_options(options);
  const Vocabulary vocabulary = Vocabulary::demo();
  const LogicalModel weights =
      random_logical_model(options.arch, options.shape, options.seed,
                           vocabulary.rows_in_use(options.shape.vision));
  write_model_folder(options, weights, vocabulary, chat_template_for(options.arch), out_dir);
}

}  // namespace qmlx::modelgen
