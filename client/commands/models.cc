// tessera models: lists the daemon's models.
#include <chrono>
#include <iostream>

#include "client/commands/commands.h"
#include "client/commands/common.h"

namespace tessera::client {

CLI::App* add_models_command(CLI::App& app, ModelsArgs& args) {
  CLI::App* cmd = app.add_subcommand("models", "List the models the daemon serves");
  add_connection_options(cmd, args.connection);
  cmd->add_flag("--json", args.json, "Print JSON");
  cmd->add_option("--timeout", args.timeout_s, "Seconds to wait for the answer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return cmd;
}

int run_models(const ModelsArgs& args) {
  auto stub = v1::Classifier::NewStub(make_channel(args.connection));
  grpc::ClientContext context;
  prepare_context(context, args.connection, seconds_to_us(args.timeout_s));
  v1::ListModelsResponse response;
  const grpc::Status status = stub->ListModels(&context, v1::ListModelsRequest(), &response);
  if (!status.ok()) {
    std::cerr << "tessera: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
              << status.error_message() << "\n";
    return 1;
  }
  if (args.json) {
    nlohmann::json models = nlohmann::json::array();
    for (const v1::ModelInfo& model : response.models()) models.push_back(to_json(model));
    std::cout << nlohmann::json{{"models", std::move(models)}}.dump(2) << "\n";
    return 0;
  }
  bool first = true;
  for (const v1::ModelInfo& model : response.models()) {
    std::cout << model.name() << (first ? "  (default)" : "") << "\n"
              << "  " << model.format() << ", input " << model.input_channels() << "x" << model.input_height() << "x"
              << model.input_width() << " (CxHxW), " << model.labels_size() << " classes, " << model.precision()
              << " on " << model.device() << "\n  labels:";
    for (int i = 0; i < model.labels_size(); ++i) std::cout << (i ? ", " : " ") << model.labels(i);
    std::cout << "\n";
    first = false;
  }
  return 0;
}

}  // namespace tessera::client
