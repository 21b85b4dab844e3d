// qmlx: entry point. Dispatches `qmlx <command> ...` to the registered subcommands.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "base/error.h"
#include "cli/command.h"

namespace qmlx::cli {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

namespace {

void print_usage() {
  std::printf("qmlx %s: inference server for hybrid-attention language models\n\n", QMLX_VERSION);
  std::printf("usage: qmlx <command> [options]   (qmlx <command> --help for its options)\n\n");
  auto sorted = commands();
  std::sort(sorted.begin(), sorted.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  for (const auto& c : sorted) std::printf("  %-12s %s\n", c.name.c_str(), c.summary.c_str());
}

}  // namespace
}  // namespace qmlx::cli

int main(int argc, char** argv) {
  using namespace qmlx::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("qmlx %s\n", QMLX_VERSION);
    return 0;
  }
  for (const auto& c : commands()) {
    if (c.name == argv[1]) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const qmlx::Error& e) {
        std::fprintf(stderr, "qmlx %s: error: %s\n", argv[1], e.what());
        return 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "qmlx %s: internal error: %s\n", argv[1], e.what());
        return 70;
      }
    }
  }
  std::fprintf(stderr, "qmlx: unknown command '%s'\n\n", argv[1]);
  print_usage();
  return 2;
}
