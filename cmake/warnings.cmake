# Curated warnings for our own targets (linked PRIVATE); generated code does not get them.
add_library(graphshard_warnings INTERFACE)
# C++ only: the CUDA kernel (trainer/tiered_gather.cu) goes through nvcc, which takes none.
target_compile_options(graphshard_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-qual
  -Wformat=2 -Wmissing-declarations -Wundef -Wvla>)
if(GRAPHSHARD_WERROR)
  target_compile_options(graphshard_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
add_library(graphshard::warnings ALIAS graphshard_warnings)
