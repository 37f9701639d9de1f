include(GoogleTest)

# The source and build folders, compiled into this one library (tests/testing/source_paths.h
# says why) and linked into every test.
add_library(graphshard_test_paths STATIC ${PROJECT_SOURCE_DIR}/tests/testing/source_paths.cc)
target_include_directories(graphshard_test_paths PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_definitions(graphshard_test_paths PRIVATE
  GRAPHSHARD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  GRAPHSHARD_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_link_libraries(graphshard_test_paths PRIVATE graphshard::warnings)

option(GRAPHSHARD_TEST_O1 "RelWithDebInfo: compile the tests' own files at -O1" ON)

# graphshard_cc_test(NAME name SRCS a.cc ... DEPS lib ... [LABELS l ...])
function(graphshard_cc_test)
  cmake_parse_arguments(T "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SRCS})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                        graphshard_test_paths graphshard::warnings)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  # A test's own files compile at -O1 in a RelWithDebInfo build (the libraries they test keep
  # -O2): 11-17% off each (tests/server/limits_test.cc 18.2 -> 16.1 s, stream_test.cc
  # 17.4 -> 14.3 s on the idle 2-core VM), and the build compiles ~100 of them. Not the tests that reuse the trainer's precompiled
  # <torch/torch.h> (tests/trainer/CMakeLists.txt): theirs must keep the header's flags.
  if(GRAPHSHARD_TEST_O1 AND NOT "graphshard::trainer_torch" IN_LIST T_DEPS)
    target_compile_options(${T_NAME} PRIVATE
                           $<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
  endif()
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}")
endfunction()
