// A test's model folder for a file that lives elsewhere (the zoo's models): model.toml may name
// only files inside its folder, so the file is put there as a hard link, a copy where the two are
// on different file systems.
#pragma once

#include <filesystem>
#include <system_error>

namespace tessera::testing {

// `file` as `dir`/`name` (replacing what was there), without copying its bytes where it can.
inline void place_in_model_folder(const std::filesystem::path& file, const std::filesystem::path& dir,
                                  const std::filesystem::path& name) {
  std::error_code ec;
  std::filesystem::remove(dir / name, ec);
  std::filesystem::create_hard_link(file, dir / name, ec);
  if (ec) std::filesystem::copy_file(file, dir / name, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace tessera::testing
