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

struct PlanArgs {
  std::string model;              // a model folder (with model.toml) or an .onnx file
  std::string board = "zcu102";   // a board profile's name, or "all"
  bool json = false;
  std::string compare;            // "", "naive" or "noburst"
  std::string roofline;           // SVG file to write; "" for none
  std::string space = "kernel";
  std::string objective = "energy";
  std::string plan_cache;         // "" = plan::default_plan_cache_dir()
  bool no_plan_cache = false;
};

CLI::App* add_classify_command(CLI::App& app, ClassifyArgs& args);
CLI::App* add_models_command(CLI::App& app, ModelsArgs& args);
CLI::App* add_eval_command(CLI::App& app, EvalArgs& args);
CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);

// Exit codes: 0 when everything succeeded, 1 otherwise.
int run_classify(const ClassifyArgs& args);
int run_models(const ModelsArgs& args);
int run_eval(const EvalArgs& args);
int run_plan(const PlanArgs& args);

}  // namespace tessera::client
