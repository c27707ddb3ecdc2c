# prometheus-cpp's core library (Debian 12 prometheus-cpp-dev) as the target prometheus-cpp::core:
# the /metrics registry and its text exposition. Only the core is linked; its pull (civetweb)
# and push (curl) libraries are not used, the daemon's own HTTP server serves /metrics.
#
# The package's CMake config comes first. A cross build cannot have it: prometheus-cpp-dev cannot
# be installed for two architectures at once (it depends on the civetweb program, which is not
# Multi-Arch), so tools/cross.sh installs the target's runtime library
# (libprometheus-cpp-core1.0:<arch>, no unversioned .so link) and the build machine's
# prometheus-cpp-dev, whose headers are the same on every architecture.
find_package(prometheus-cpp CONFIG QUIET)
if(NOT TARGET prometheus-cpp::core)
  find_library(PROMETHEUS_CPP_CORE_LIBRARY NAMES prometheus-cpp-core libprometheus-cpp-core.so.1.0)
  find_path(PROMETHEUS_CPP_INCLUDE_DIR prometheus/registry.h)
  if(NOT PROMETHEUS_CPP_CORE_LIBRARY OR NOT PROMETHEUS_CPP_INCLUDE_DIR)
    message(FATAL_ERROR "prometheus-cpp not found (library: ${PROMETHEUS_CPP_CORE_LIBRARY}, headers: "
                        "${PROMETHEUS_CPP_INCLUDE_DIR}): install prometheus-cpp-dev (tools/setup.sh), or for a "
                        "cross build libprometheus-cpp-core1.0:<arch> and prometheus-cpp-dev (tools/cross.sh)")
  endif()
  add_library(prometheus-cpp::core SHARED IMPORTED)
  set_target_properties(prometheus-cpp::core PROPERTIES IMPORTED_LOCATION "${PROMETHEUS_CPP_CORE_LIBRARY}"
                                                        INTERFACE_INCLUDE_DIRECTORIES "${PROMETHEUS_CPP_INCLUDE_DIR}")
  message(STATUS "prometheus-cpp core: ${PROMETHEUS_CPP_CORE_LIBRARY} (no CMake config for this architecture)")
endif()
