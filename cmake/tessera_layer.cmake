# tessera_layer(<target> [DIRS <dir>...] [FILES <file>...] [DEPS <target>...] [PRIVATE_DEPS <target>...])
#
# One library per layer of docs/DESIGN.md, with the layering enforced by the compiler.
#
# DIRS are folders relative to the project root whose *.h, *.cc and *.cpp files (not recursive)
# make up the layer; FILES adds single files (a layer that owns one header of a shared folder).
# A layer without sources is an INTERFACE library.
#
# The project root is on nobody's include path. Instead each layer's headers are staged as
# symlinks under <build>/layers/<target>/, keeping their project paths ("accel/graph/graph.h"),
# and that folder is the layer's public include directory. A file therefore sees the headers of
# its own layer and of the layers it links (DEPS, transitively), and nothing else: an include
# across a forbidden arrow fails with "No such file or directory", before any link step.
function(tessera_layer target)
  cmake_parse_arguments(ARG "" "" "DIRS;FILES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(files ${ARG_FILES})
  foreach(dir ${ARG_DIRS})
    file(GLOB found CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
         ${PROJECT_SOURCE_DIR}/${dir}/*.h ${PROJECT_SOURCE_DIR}/${dir}/*.cc ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND files ${found})
  endforeach()

  set(headers ${files})
  list(FILTER headers INCLUDE REGEX "\\.h$")
  set(sources ${files})
  list(FILTER sources EXCLUDE REGEX "\\.h$")
  list(TRANSFORM sources PREPEND ${PROJECT_SOURCE_DIR}/)
  tessera_stage_headers(${target} ${headers})
  set(stage ${CMAKE_BINARY_DIR}/layers/${target})

  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${stage})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE tessera_warnings ${ARG_PRIVATE_DEPS})
    # About 8 sources to a unity unit (cmake/tessera_unity.cmake): every layer is built in every
    # tree (x86_64, aarch64, ASan, TSan), and most of a small file's CPU is its headers (the ONNX
    # and Caffe importers' 11 files: 43 CPU-s one by one, 16 as one unit). A file-local name is
    # unique in its layer.
    # A kernel file of one instruction set (named for it: *_avx2.cc, *_neon.cc, ...) stays a unit of
    # its own: its inline helpers carry that set's target attribute, and a same-named helper of
    # another set in one unit would clash (the AVX2 and AVX-512 requantisers) or be called from code
    # compiled for the wrong set.
    set(isa_sources ${sources})
    list(FILTER isa_sources INCLUDE REGEX "_(avx2|avxvnni|avx512|vnni512|neon|neon_dot)\\.(cc|cpp)$")
    if(isa_sources)
      set_source_files_properties(${isa_sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
    list(LENGTH sources source_count)
    math(EXPR units "(${source_count} + 7) / 8")
    tessera_unity_build(${target} ${units})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${stage})
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# tessera_stage_headers(<target> <header>...): links each header (a path relative to the project
# root) under <build>/layers/<target>/ at its project path. tessera_layer() and the executables'
# own folders (server/, client/, tests/) use it; the folder becomes an include directory of
# <target> in the caller.
function(tessera_stage_headers target)
  set(stage ${CMAKE_BINARY_DIR}/layers/${target})
  file(REMOVE_RECURSE ${stage})
  file(MAKE_DIRECTORY ${stage})
  foreach(header ${ARGN})
    get_filename_component(folder ${stage}/${header} DIRECTORY)
    file(MAKE_DIRECTORY ${folder})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${header} ${stage}/${header} SYMBOLIC)
  endforeach()
endfunction()

# tessera_tree_headers(<var> <dir>...): every *.h under the folders (relative to the project root).
function(tessera_tree_headers var)
  set(found)
  foreach(dir ${ARGN})
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/${dir}/*.h)
    list(APPEND found ${headers})
  endforeach()
  set(${var} ${found} PARENT_SCOPE)
endfunction()
