// Subcommand registry: each file in cli/ defines one `qmlx <name>` command and registers it
// with a static QMLX_COMMAND(...) so main.cpp never changes when a command is added.
#pragma once

#include <string>
#include <vector>

namespace qmlx::cli {

// argv[0] is the command name; returns the process exit code.
using CommandFn = int (*)(int argc, char** argv);

struct Command {
  std::string name;
  std::string summary;
  CommandFn run;
};

std::vector<Command>& commands();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string summary, CommandFn run) {
    commands().push_back({std::move(name), std::move(summary), run});
  }
};

}  // namespace qmlx::cli

#define QMLX_COMMAND(ident, name, summary, fn) \
  static ::qmlx::cli::CommandRegistrar qmlx_command_##ident(name, summary, fn)
