// tessera plan: the planner's per-layer tiles and modeled figures for a model on a board,
// offline (no daemon): the plan the compiler applies (accel/runtime/plan_model.h), optionally
// against seeds/000's naive tiling or TSO's volume-only DRAM model (seeds/002), as a table,
// JSON and a roofline SVG.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "accel/plan/board_profile.h"
#include "accel/plan/plan_cache.h"
#include "accel/runtime/plan_model.h"
#include "client/commands/commands.h"
#include "client/plan/plan_json.h"
#include "client/plan/plan_table.h"
#include "client/plan/roofline_svg.h"

namespace tessera::client {
namespace {

// "a, b, c".
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// The roofline's file for one board of several: "roof.svg" -> "roof.zcu102.svg".
std::filesystem::path roofline_path(const std::string& file, const std::string& board, bool several) {
  std::filesystem::path path(file);
  if (!several) return path;
  return path.parent_path() / (path.stem().string() + "." + board + path.extension().string());
}

// The name to show: the model's, or for a zoo-style "<name>/model.onnx" the folder's name.
std::string display_name(const std::string& model_name, const std::filesystem::path& source) {
  std::error_code ec;
  if (std::filesystem::is_directory(source, ec) || source.stem() != "model") return model_name;
  const std::string folder = std::filesystem::absolute(source, ec).parent_path().filename().string();
  return ec || folder.empty() ? model_name : folder;
}

// The plan of `args.model` on `board` with the main options, and the comparison plan if asked.
Result<PlanReport> make_report(const PlanArgs& args, const plan::BoardProfile& board, const plan::PlanOptions& options,
                               CompareKind compare, plan::PlanCache* cache) {
  PlanReport r;
  r.source = args.model;
  r.board = board;
  r.cache_dir = cache ? cache->dir().string() : "";
  const auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(ModelPlanning planned, plan_model(args.model, board, options, cache));
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.model = display_name(planned.model_name, args.model);
  r.fabric_summary = planned.fabric_summary;
  r.placement = planned.compiled.placement;
  r.plan = std::move(planned.compiled.plan);
  r.from_cache = planned.compiled.plan_from_cache;
  if (r.plan.layers.empty()) {  // no fabric part: nothing was planned
    r.plan.board = board;
    r.plan.options = options;
  }
  r.compare = compare;
  if (compare == CompareKind::kNone) return r;
  // The comparison plans bypass the cache: it keeps one plan per model and board, and they would
  // replace the main plan there.
  plan::PlanOptions other = options;
  if (compare == CompareKind::kNaive) other.naive = true;
  if (compare == CompareKind::kNoBurst) other.dram = plan::DramModel::kVolume;
  TESSERA_ASSIGN_OR_RETURN(ModelPlanning second, plan_model(args.model, board, other, nullptr));
  r.other = std::move(second.compiled.plan);
  if (compare == CompareKind::kNoBurst) r.other = plan::rescore(r.other, plan::DramModel::kBurst);
  if (r.other.layers.size() != r.plan.layers.size()) {
    return Status::internal("the " + std::string(compare_kind_name(compare)) + " plan has " +
                            std::to_string(r.other.layers.size()) + " layers, the plan " +
                            std::to_string(r.plan.layers.size()));
  }
  return r;
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "per-layer tiles and modeled time, DDR traffic and energy of a model on a board (offline, no daemon)");
  cmd->add_option("model", args.model, "model folder (with model.toml) or .onnx file")->required();
  cmd->add_option("--board", args.board, "board profile (" + joined(plan::board_names()) + "), or all")
      ->capture_default_str();
  cmd->add_flag("--json", args.json, "print one JSON document instead of the table");
  cmd->add_option("--compare", args.compare,
                  "also plan with naive tiles (seeds/000: the fullest tile set) or with the volume-only DRAM model "
                  "(TSO-noburst, timed with bursts) and compare per layer")
      ->check(CLI::IsMember({"naive", "noburst"}));
  cmd->add_option("--roofline", args.roofline,
                  "write a roofline SVG of the conv layers (with --board all: FILE.<board>.svg per board)");
  cmd->add_option("--space", args.space,
                  "kernel: what the HLS kernel executes; explore: TSO's schedules x partitions over all CUs")
      ->capture_default_str()
      ->check(CLI::IsMember({"kernel", "explore"}));
  args.objective = plan::objective_name(plan::PlanOptions{}.objective);
  cmd->add_option("--objective", args.objective, "what the tile search minimises per layer: time, bytes or energy")
      ->capture_default_str()
      ->check(CLI::IsMember({"time", "bytes", "energy"}));
  CLI::Option* dir = cmd->add_option("--plan-cache", args.plan_cache,
                                     "plan cache directory (default: " + plan::default_plan_cache_dir().string() + ")");
  cmd->add_flag("--no-plan-cache", args.no_plan_cache, "always search, store nothing")->excludes(dir);
  return cmd;
}

int run_plan(const PlanArgs& args) {
  plan::PlanOptions options;
  auto space = plan::parse_search_space(args.space);
  auto objective = plan::parse_objective(args.objective);
  if (!space || !objective) {
    std::cerr << "tessera plan: " << (space ? objective.status() : space.status()).message() << "\n";
    return 1;
  }
  options.space = *space;
  options.objective = *objective;
  CompareKind compare = CompareKind::kNone;
  if (args.compare == "naive") compare = CompareKind::kNaive;
  if (args.compare == "noburst") compare = CompareKind::kNoBurst;

  const std::vector<std::string> known = plan::board_names();
  std::vector<std::string> boards = {args.board};
  if (args.board == "all") {
    boards = known;
  } else if (std::find(known.begin(), known.end(), args.board) == known.end()) {
    std::cerr << "tessera plan: unknown board '" << args.board << "' (boards: " << joined(known) << ", all)\n";
    return 1;
  }
  std::unique_ptr<plan::PlanCache> cache;
  if (!args.no_plan_cache) {
    cache = std::make_unique<plan::PlanCache>(args.plan_cache.empty() ? plan::default_plan_cache_dir()
                                                                      : std::filesystem::path(args.plan_cache));
  }

  nlohmann::json documents = nlohmann::json::array();
  std::string model_name;
  for (size_t i = 0; i < boards.size(); ++i) {
    auto board = plan::load_board_profile(boards[i]);
    if (!board) {
      std::cerr << "tessera plan: " << board.status().message() << "\n";
      return 1;
    }
    auto report = make_report(args, *board, options, compare, cache.get());
    if (!report) {
      std::cerr << "tessera plan: " << report.status().message() << "\n";
      return 1;
    }
    model_name = report->model;
    if (args.json) {
      documents.push_back(plan_json(*report));
    } else {
      if (i > 0) std::cout << "\n";
      print_plan_report(std::cout, *report);
    }
    if (!args.roofline.empty()) {
      const auto path = roofline_path(args.roofline, boards[i], boards.size() > 1);
      if (Status s = write_file_atomically(path, roofline_svg(*report)); !s.is_ok()) {
        std::cerr << "tessera plan: roofline: " << s.message() << "\n";
        return 1;
      }
      if (!args.json) std::cout << "roofline: " << path.string() << "\n";
    }
  }
  if (args.json) {
    const nlohmann::json out =
        boards.size() == 1 ? documents[0] : nlohmann::json{{"model", model_name}, {"plans", std::move(documents)}};
    // Node names are the model's bytes: invalid UTF-8 is replaced, never thrown about.
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace tessera::client
