# tessera_unity_build(<target> <units>): compiles <target>'s C++ sources as <units> unity units
# (CMake's UNITY_BUILD in GROUP mode). A unit of a server or test target spends most of its CPU
# parsing and instantiating gRPC, Beast, json and GoogleTest again; one unit of several sources
# does that once (the client's 25 units 226 -> 101 CPU-s, the unit tests' 57 185 -> 90,
# docs/testing.md).
#
# A source's unit follows from a hash of its path alone, not from the list it is in: the trees
# build different lists of the same target (the ASan tree has no oneDNN tests, the TSan tree only
# the concurrency tests), and with CMake's batches of N a file would meet other neighbours in each
# tree, so a clash of two file-local names could break one tree only. With a fixed unit per file,
# two files share a unit in every tree that has both, and the x86_64 tree, which has all, sees
# every clash. The rule that follows (docs/DESIGN.md): a file-local name is unique in its target.
# Sources with their own compile definitions or options stay units of their own (CMake's rule).
function(tessera_unity_build target units)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source ${sources})
    if(NOT source MATCHES "\\.(cc|cpp)$")
      continue()
    endif()
    set(name ${source})
    if(IS_ABSOLUTE ${source})
      file(RELATIVE_PATH name ${source_dir} ${source})
    endif()
    string(MD5 hash "${name}")
    string(SUBSTRING ${hash} 0 6 prefix)
    math(EXPR unit "0x${prefix} % ${units}")
    set_source_files_properties(${source} TARGET_DIRECTORY ${target} PROPERTIES UNITY_GROUP "unit_${unit}")
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
endfunction()
