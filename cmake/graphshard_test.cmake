include(GoogleTest)

# The source and build folders, compiled into this one library (tests/testing/source_paths.h
# says why) and linked into every test.
add_library(graphshard_test_paths STATIC ${PROJECT_SOURCE_DIR}/tests/testing/source_paths.cc)
target_include_directories(graphshard_test_paths PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_definitions(graphshard_test_paths PRIVATE
  GRAPHSHARD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  GRAPHSHARD_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_link_libraries(graphshard_test_paths PRIVATE graphshard::warnings)

# graphshard_cc_test(NAME name SRCS a.cc ... DEPS lib ... [LABELS l ...])
function(graphshard_cc_test)
  cmake_parse_arguments(T "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SRCS})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                        graphshard_test_paths graphshard::warnings)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}")
endfunction()
