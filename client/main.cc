// tessera: the command-line client of tesserad.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "client/commands/commands.h"

namespace {

int run_cli(int argc, char** argv) {
  namespace c = tessera::client;
  CLI::App app{"tessera: classify images with a tesserad daemon, benchmark it, watch a board or a fleet"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera " TESSERA_VERSION " (" TESSERA_SYSTEM_PROCESSOR ")");
  c::ClassifyArgs classify_args;
  c::ModelsArgs models_args;
  c::EvalArgs eval_args;
  c::PlanArgs plan_args;
  c::BenchArgs bench_args;
  c::WatchArgs watch_args;
  c::FleetArgs fleet_args;
  CLI::App* classify = c::add_classify_command(app, classify_args);
  CLI::App* models = c::add_models_command(app, models_args);
  CLI::App* eval = c::add_eval_command(app, eval_args);
  CLI::App* plan = c::add_plan_command(app, plan_args);
  CLI::App* bench = c::add_bench_command(app, bench_args);
  CLI::App* watch = c::add_watch_command(app, watch_args);
  CLI::App* fleet = c::add_fleet_command(app, fleet_args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error says why on stderr and exits 2, as
    // getopt-based tools do (not CLI11's own codes 105-114).
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      // CLI11 calls an unknown command a missing one ("A subcommand is required").
      std::cerr << "tessera: unknown command \"" << argv[1] << "\"\n";
      std::cerr << "Run with --help for the commands.\n";
      return tessera::client::kUsageError;
    }
    const int code = app.exit(e);
    return code == 0 ? 0 : tessera::client::kUsageError;
  }

  try {
    if (classify->parsed()) return c::run_classify(classify_args);
    if (models->parsed()) return c::run_models(models_args);
    if (eval->parsed()) return c::run_eval(eval_args);
    if (plan->parsed()) return c::run_plan(plan_args);
    if (bench->parsed()) return c::run_bench(bench_args);
    if (watch->parsed()) return c::run_watch(watch_args);
    if (fleet->parsed()) return c::run_fleet(fleet_args);
  } catch (const std::exception& e) {
    // e.g. an unreadable --tls-ca file
    std::cerr << "tessera: " << e.what() << "\n";
    return 1;
  }
  return c::kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (...) {
    // Building the command line itself failed (e.g. out of memory): nothing more useful to say.
    std::cerr << "tessera: unexpected error\n";
    return 1;
  }
}
