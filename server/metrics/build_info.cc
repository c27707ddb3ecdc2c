#include "server/metrics/build_info.h"

#include "tessera_git_revision.h"  // generated at build time by server/metrics/git_revision.cmake

#if !defined(TESSERA_VERSION) || !defined(TESSERA_BUILD_TYPE) || !defined(TESSERA_SYSTEM_PROCESSOR) || \
    !defined(TESSERA_XRT_BUILT)
#error "server/metrics/build_info.cmake defines the build facts of this file"
#endif

namespace tessera::metrics {
namespace {

#define TESSERA_STRINGIFY_(x) #x
#define TESSERA_STRINGIFY(x) TESSERA_STRINGIFY_(x)

// The compiler and its major.minor.patch version, from its own macros.
#if defined(__clang__)
constexpr const char* kCompiler = "clang " TESSERA_STRINGIFY(__clang_major__) "." TESSERA_STRINGIFY(
    __clang_minor__) "." TESSERA_STRINGIFY(__clang_patchlevel__);
#elif defined(__GNUC__)
constexpr const char* kCompiler =
    "gcc " TESSERA_STRINGIFY(__GNUC__) "." TESSERA_STRINGIFY(__GNUC_MINOR__) "." TESSERA_STRINGIFY(__GNUC_PATCHLEVEL__);
#else
constexpr const char* kCompiler = "unknown";
#endif

}  // namespace

prometheus::Labels build_info_labels() {
  return {{"version", TESSERA_VERSION}, {"revision", TESSERA_GIT_REVISION}, {"build_type", TESSERA_BUILD_TYPE},
          {"compiler", kCompiler},      {"arch", TESSERA_SYSTEM_PROCESSOR}, {"xrt", TESSERA_XRT_BUILT ? "yes" : "no"}};
}

}  // namespace tessera::metrics
