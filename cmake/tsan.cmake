# ThreadSanitizer support (the `tsan` preset, GRAPHSHARD_TSAN=ON). Debian's Abseil is not built
# with TSan, so an absl::Mutex is invisible to it and every member it guards would read as a
# race. graphshard_tsan_see_absl_mutex(target) makes it visible: the target's calls to
# absl::Mutex::Lock/Unlock/ReaderLock/ReaderUnlock/TryLock/ReaderTryLock go through wrappers
# (ld --wrap, tests/ci/tsan_absl_mutex.cc) that tell TSan "acquire" after a lock and "release"
# before an unlock. Not covered: Mutex::Await, LockWhen and CondVar, which unlock inside
# Abseil; a target given this must not use them (the shm ring does not).

# The mangled names in this Abseil (Debian's inline namespace, e.g. absl::debian3).
get_target_property(_absl_sync_lib absl::synchronization LOCATION)
execute_process(COMMAND nm -D --defined-only ${_absl_sync_lib}
                OUTPUT_VARIABLE _absl_sync_symbols ERROR_QUIET)
string(REGEX MATCH "_ZN4absl[0-9]+[A-Za-z0-9_]+5Mutex4LockEv" _absl_lock "${_absl_sync_symbols}")
if(NOT _absl_lock)
  message(FATAL_ERROR "GRAPHSHARD_TSAN: absl::Mutex::Lock not found in ${_absl_sync_lib}")
endif()
string(REPLACE "5Mutex4LockEv" "" _absl_ns "${_absl_lock}")
set(GRAPHSHARD_TSAN_ABSL_SYMBOLS
  LOCK=${_absl_ns}5Mutex4LockEv
  UNLOCK=${_absl_ns}5Mutex6UnlockEv
  READER_LOCK=${_absl_ns}5Mutex10ReaderLockEv
  READER_UNLOCK=${_absl_ns}5Mutex12ReaderUnlockEv
  TRY_LOCK=${_absl_ns}5Mutex7TryLockEv
  READER_TRY_LOCK=${_absl_ns}5Mutex13ReaderTryLockEv)

add_library(graphshard_tsan_absl_mutex STATIC ${PROJECT_SOURCE_DIR}/tests/ci/tsan_absl_mutex.cc)
foreach(_pair IN LISTS GRAPHSHARD_TSAN_ABSL_SYMBOLS)
  string(REPLACE "=" ";" _kv "${_pair}")
  list(GET _kv 0 _key)
  list(GET _kv 1 _symbol)
  target_compile_definitions(graphshard_tsan_absl_mutex PRIVATE GRAPHSHARD_ABSL_${_key}=${_symbol})
  list(APPEND _wrap_options "LINKER:--wrap=${_symbol}")
endforeach()
set(GRAPHSHARD_TSAN_WRAP_OPTIONS ${_wrap_options} CACHE INTERNAL "")

function(graphshard_tsan_see_absl_mutex target)
  target_link_libraries(${target} PRIVATE graphshard_tsan_absl_mutex)
  target_link_options(${target} PRIVATE ${GRAPHSHARD_TSAN_WRAP_OPTIONS})
endfunction()
