#include <iostream>
#include <string>
#include <vector>

#include "partitioner/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return graphshard::partitioner::RunPartitionCli(args, std::cout, std::cerr);
}
