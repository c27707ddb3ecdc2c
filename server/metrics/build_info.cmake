# tessera_build_info's facts (server/metrics/build_info.cc): the git commit, found at every build
# (not only at configure time, which would go stale with each commit) into a generated header, and
# the configuration's facts as definitions of that one file.
set(tessera_revision_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
add_custom_target(tessera_git_revision
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${tessera_revision_dir}/tessera_git_revision.h
          -P ${CMAKE_CURRENT_LIST_DIR}/git_revision.cmake
  BYPRODUCTS ${tessera_revision_dir}/tessera_git_revision.h
  COMMENT "git revision for tessera_build_info"
  VERBATIM)
add_dependencies(tessera_server_metrics tessera_git_revision)
target_include_directories(tessera_server_metrics PRIVATE ${tessera_revision_dir})
if(TESSERA_HAVE_XRT)
  set(tessera_xrt_built 1)
else()
  set(tessera_xrt_built 0)
endif()
set(tessera_build_type "${CMAKE_BUILD_TYPE}")
if(NOT tessera_build_type)
  set(tessera_build_type none)
endif()
set_source_files_properties(metrics/build_info.cc PROPERTIES COMPILE_DEFINITIONS
  "TESSERA_BUILD_TYPE=\"${tessera_build_type}\";TESSERA_SYSTEM_PROCESSOR=\"${CMAKE_SYSTEM_PROCESSOR}\";TESSERA_XRT_BUILT=${tessera_xrt_built}")
