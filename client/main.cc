// tessera: the command-line client of tesserad.
#include <CLI/CLI.hpp>

#include "client/commands/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"tessera: classify images with a tesserad daemon"};
  app.require_subcommand(1);
  tessera::client::ClassifyArgs classify_args;
  tessera::client::ModelsArgs models_args;
  CLI::App* classify = tessera::client::add_classify_command(app, classify_args);
  CLI::App* models = tessera::client::add_models_command(app, models_args);
  tessera::client::EvalArgs eval_args;
  CLI::App* eval = tessera::client::add_eval_command(app, eval_args);
  tessera::client::PlanArgs plan_args;
  CLI::App* plan = tessera::client::add_plan_command(app, plan_args);
  CLI11_PARSE(app, argc, argv);

  if (classify->parsed()) return tessera::client::run_classify(classify_args);
  if (models->parsed()) return tessera::client::run_models(models_args);
  if (eval->parsed()) return tessera::client::run_eval(eval_args);
  if (plan->parsed()) return tessera::client::run_plan(plan_args);
  return 2;
}
