// The web UI's static files: safe mapping of URL paths into --web-root, and content types.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "accel/common/status.h"

namespace tessera {

// Maps a URL path (still percent-encoded) to a regular file under `root`; "/" and directories
// mean their index.html. INVALID_ARGUMENT for ".." segments, backslashes, NULs and bad escapes;
// NOT_FOUND for dotfiles, missing files and anything resolving (via symlinks) outside `root`.
Result<std::filesystem::path> resolve_static_file(const std::filesystem::path& root, std::string_view url_path);

// Content-Type by extension ("text/html; charset=utf-8"); application/octet-stream otherwise.
std::string_view content_type_for(const std::filesystem::path& file);

// A file's contents; INTERNAL when unreadable, larger than max_bytes is FAILED_PRECONDITION.
Result<std::string> read_whole_file(const std::filesystem::path& file, int64_t max_bytes);

}  // namespace tessera
