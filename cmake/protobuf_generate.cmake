# tessera_proto_library(<target> ROOT <dir> PROTOS <file.proto>... [GRPC])
# Compiles .proto files (paths relative to ROOT) into a static library with protoc, and with
# grpc_cpp_plugin when GRPC is given. Generated sources live in the build tree.
function(tessera_proto_library target)
  cmake_parse_arguments(ARG "GRPC" "ROOT" "PROTOS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${out_dir})
  set(sources)
  # A file may import any other of the list: each is regenerated when any of them changes.
  list(TRANSFORM ARG_PROTOS PREPEND ${ARG_ROOT}/ OUTPUT_VARIABLE all_protos)
  foreach(proto ${ARG_PROTOS})
    string(REGEX REPLACE "\\.proto$" "" base ${proto})
    set(outputs ${out_dir}/${base}.pb.cc ${out_dir}/${base}.pb.h)
    set(args --cpp_out=${out_dir})
    if(ARG_GRPC)
      list(APPEND outputs ${out_dir}/${base}.grpc.pb.cc ${out_dir}/${base}.grpc.pb.h)
      list(APPEND args --grpc_out=${out_dir} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN})
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND protobuf::protoc -I ${ARG_ROOT} ${args} ${ARG_ROOT}/${proto}
      DEPENDS ${all_protos} protobuf::protoc
      COMMENT "protoc ${proto}"
      VERBATIM)
    list(APPEND sources ${outputs})
  endforeach()
  add_library(${target} STATIC ${sources})
  target_include_directories(${target} SYSTEM PUBLIC ${out_dir})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
  if(ARG_GRPC)
    target_link_libraries(${target} PUBLIC gRPC::grpc++)
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # gRPC's service stubs (*.grpc.pb.cc) as one unity unit: each spends most of its CPU on gRPC's
  # headers (the four of proto/: 23 CPU-s one by one, 9.5 together, GCC 12). The messages'
  # *.pb.cc stay units of their own: protoc gives each file-local tables of the same names.
  set(stubs ${sources})
  list(FILTER stubs INCLUDE REGEX "\\.grpc\\.pb\\.cc$")
  set(messages ${sources})
  list(FILTER messages INCLUDE REGEX "[^c]\\.pb\\.cc$")
  if(stubs)
    set_source_files_properties(${stubs} PROPERTIES UNITY_GROUP grpc_stubs)
    set_source_files_properties(${messages} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  endif()
  # The ASan + UBSan tree leaves protoc's output uninstrumented, like the libprotobuf it calls:
  # UBSan's checks tripled its compile time (grpc_predict_v2.pb.cc 8 -> 25 CPU-s) for code that
  # is not ours; our code's accesses to the messages (the inline accessors) stay checked. The TSan
  # tree keeps it instrumented: a race through the serialisers would go unseen otherwise.
  if(TESSERA_SANITIZE MATCHES "address")
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
