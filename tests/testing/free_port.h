#ifndef GRAPHSHARD_TESTS_TESTING_FREE_PORT_H_
#define GRAPHSHARD_TESTS_TESTING_FREE_PORT_H_

#include <cstdint>

namespace graphshard::testing {

// A loopback TCP port the kernel just handed out and that is free again (bound to port 0, then
// closed): for what must be told a port before it listens (MASTER_PORT). Another process may
// take it in between; tests that can, listen on port 0 instead.
uint16_t FreePort();

}  // namespace graphshard::testing

#endif  // GRAPHSHARD_TESTS_TESTING_FREE_PORT_H_
