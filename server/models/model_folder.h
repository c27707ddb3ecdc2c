// One model folder of the repository read and loaded: its versions (numbered subfolders, or the
// folder itself as version 1), the ones model.toml's [version_policy] serves, and an engine for
// each on the device instances its [instances] picks.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "server/models/model_repository.h"

namespace tessera {

// The subfolders of `root` that hold a model.toml, in name order. NOT_FOUND when root is not a
// folder.
Result<std::vector<std::filesystem::path>> model_folders(const std::filesystem::path& root);

// The name the folder's model.toml gives its model; the folder's own name when it cannot be read.
std::string folder_model_name(const std::filesystem::path& dir);

// The newest modification time of anything under `dir` (poll mode's "changed").
std::filesystem::file_time_type newest_change(const std::filesystem::path& dir);

// Every version of the folder the version policy serves, loaded, oldest first. The first error
// (a malformed model.toml, a bad version policy, a version that does not load) names the folder.
Result<std::vector<std::shared_ptr<const ServedModel>>> load_model_folder(const std::filesystem::path& dir,
                                                                          const EngineOptions& engine_options,
                                                                          const BatchPolicy& batching);

}  // namespace tessera
