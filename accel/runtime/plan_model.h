// Planning a model file offline (`tessera plan`): import, fold, split and describe the fabric
// part as compile_model does, then plan it on a board. No calibration: the plan depends on
// shapes only, so unit ranges stand in for the activation ranges. The host ops are measured on
// this machine (host_op_timing.h).
#pragma once

#include <filesystem>
#include <string>

#include "accel/common/status.h"
#include "accel/plan/compiler.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/plan_cache.h"

namespace tessera {

struct ModelPlanning {
  std::string model_name;        // the folder's model.toml name, or the file's stem
  plan::CompiledModel compiled;  // the kernel-space plan is compiled.plan (tiles in the descriptors)
  std::string fabric_summary;    // what runs where
};

// `model` is a model folder (with model.toml) or an .onnx file. options.space == kExplore plans
// the explore space over the kernel's descriptors (its choices are not applied).
Result<ModelPlanning> plan_model(const std::filesystem::path& model, const plan::BoardProfile& board,
                                 const plan::PlanOptions& options, plan::PlanCache* cache = nullptr);

}  // namespace tessera
