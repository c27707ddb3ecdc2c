// tessera models [list|index|load|unload NAME]: the daemon's models, its repository's index and
// load state, and loading or unloading a model (tessera.v1 GetModelIndex, LoadModel, UnloadModel).
#include <chrono>
#include <iostream>

#include "client/commands/commands.h"
#include "client/commands/common.h"

namespace tessera::client {

CLI::App* add_models_command(CLI::App& app, ModelsArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "models",
      "List the models the daemon serves (list), its repository with load states (index), or load/unload one");
  add_connection_options(cmd, args.connection);
  cmd->add_option("action", args.action, "list, index, load or unload")
      ->check(CLI::IsMember({"list", "index", "load", "unload"}))
      ->capture_default_str();
  cmd->add_option("name", args.name, "load, unload: the model's name");
  cmd->add_flag("--json", args.json, "Print JSON");
  cmd->add_option("--timeout", args.timeout_s, "Seconds to wait for the answer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return cmd;
}

namespace {

int fail(const ModelsArgs& args, const grpc::Status& status) {
  std::cerr << "tessera: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
            << status.error_message() << "\n";
  return 1;
}

// tessera models index: a row per served version, loading model and failed load.
int run_index(v1::Classifier::Stub& stub, const ModelsArgs& args) {
  grpc::ClientContext context;
  prepare_context(context, args.connection, seconds_to_us(args.timeout_s));
  v1::ModelIndexResponse response;
  const grpc::Status status = stub.GetModelIndex(&context, v1::ModelIndexRequest(), &response);
  if (!status.ok()) return fail(args, status);
  nlohmann::json rows = nlohmann::json::array();
  for (const v1::ModelIndexEntry& row : response.models()) {
    if (args.json) {
      rows.push_back(
          {{"name", row.name()}, {"version", row.version()}, {"state", row.state()}, {"reason", row.reason()}});
    } else {
      std::cout << row.name() << "  " << (row.version().empty() ? "-" : row.version()) << "  " << row.state()
                << (row.reason().empty() ? "" : "  " + row.reason()) << "\n";
    }
  }
  if (args.json)
    std::cout << nlohmann::json{{"models", std::move(rows)}}.dump(2, ' ', false,
                                                                  nlohmann::json::error_handler_t::replace)
              << "\n";
  return 0;
}

// tessera models load|unload NAME.
int run_load(v1::Classifier::Stub& stub, const ModelsArgs& args) {
  if (args.name.empty()) {
    std::cerr << "tessera: models " << args.action << " wants the model's name\n";
    return 2;
  }
  grpc::ClientContext context;
  prepare_context(context, args.connection, seconds_to_us(args.timeout_s));
  grpc::Status status;
  if (args.action == "load") {
    v1::LoadModelRequest request;
    request.set_name(args.name);
    v1::LoadModelResponse response;
    status = stub.LoadModel(&context, request, &response);
  } else {
    v1::UnloadModelRequest request;
    request.set_name(args.name);
    v1::UnloadModelResponse response;
    status = stub.UnloadModel(&context, request, &response);
  }
  if (!status.ok()) return fail(args, status);
  std::cout << (args.action == "load" ? "loading " : "unloaded ") << args.name
            << (args.action == "load" ? " (tessera models index says when it is READY)" : "") << "\n";
  return 0;
}

}  // namespace

int run_models(const ModelsArgs& args) {
  auto stub = v1::Classifier::NewStub(make_channel(args.connection));
  if (args.action == "index") return run_index(*stub, args);
  if (args.action == "load" || args.action == "unload") return run_load(*stub, args);
  grpc::ClientContext context;
  prepare_context(context, args.connection, seconds_to_us(args.timeout_s));
  v1::ListModelsResponse response;
  const grpc::Status status = stub->ListModels(&context, v1::ListModelsRequest(), &response);
  if (!status.ok()) return fail(args, status);
  if (args.json) {
    nlohmann::json models = nlohmann::json::array();
    for (const v1::ModelInfo& model : response.models()) models.push_back(to_json(model));
    std::cout << nlohmann::json{{"models", std::move(models)}}.dump(2, ' ', false,
                                                                    nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  bool first = true;
  for (const v1::ModelInfo& model : response.models()) {
    std::cout << model.name() << " version " << model.version() << (first ? "  (default)" : "") << "\n"
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
