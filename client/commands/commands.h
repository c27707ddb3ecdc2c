// The CLI's subcommands: each registers its flags on the app and runs once parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tessera::client {

struct ClassifyArgs {
  std::string server;
  std::string model;  // empty: the daemon's default
  unsigned top_k = 5;
  bool json = false;  // one JSON object per image per line
  double timeout_s = 30;
  std::vector<std::string> images;
};

struct ModelsArgs {
  std::string server;
  bool json = false;
  double timeout_s = 10;
};

struct EvalArgs {
  std::string model_dir;
  std::string dataset = "fashion-mnist";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string precision = "int8";
  std::string device = "auto";
  std::string xclbin;
  int limit = 0;
  int batch = 64;
};

CLI::App* add_classify_command(CLI::App& app, ClassifyArgs& args);
CLI::App* add_models_command(CLI::App& app, ModelsArgs& args);
CLI::App* add_eval_command(CLI::App& app, EvalArgs& args);

// Exit codes: 0 when everything succeeded, 1 otherwise.
int run_classify(const ClassifyArgs& args);
int run_models(const ModelsArgs& args);
int run_eval(const EvalArgs& args);

}  // namespace tessera::client
