#include "trainer/gpu_sample_kernel.h"

namespace graphshard::trainer {
namespace {

bool NoKernels(std::string* error) {
  *error = "this build has no CUDA kernels for sampling on the GPU (no CUDA compiler was found)";
  return false;
}

}  // namespace

// No CUDA compiler at build time: --sampler gpu is refused (gpu_sampler.h).
bool GpuSampleKernelsBuilt() { return false; }

bool LaunchHopCounts(const SampleHopArgs& /*args*/, int64_t* /*counts*/, void* /*stream*/,
                     std::string* error) {
  return NoKernels(error);
}
bool LaunchHopEdges(const SampleHopArgs& /*args*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}
bool LaunchSampleHop(const SampleHopArgs& /*args*/, int64_t /*edge_capacity*/, void* /*stream*/,
                     std::string* error) {
  return NoKernels(error);
}
bool LaunchSetRows(RelabelTables /*tables*/, const int64_t* /*ids*/, int64_t /*n*/,
                   int64_t /*first_row*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}
bool LaunchClearRows(RelabelTables /*tables*/, const int64_t* /*ids*/, int64_t /*capacity*/,
                     const int64_t* /*count*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}
bool LaunchMarkFirst(RelabelTables /*tables*/, const int64_t* /*src*/, int64_t /*capacity*/,
                     HopSizes /*sizes*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}
bool LaunchFlagNew(RelabelTables /*tables*/, const int64_t* /*src*/, int64_t /*capacity*/,
                   HopSizes /*sizes*/, int32_t* /*is_new*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}
bool LaunchAssign(RelabelTables /*tables*/, const int64_t* /*src*/, int64_t /*capacity*/,
                  HopSizes /*sizes*/, const int32_t* /*is_new*/, const int64_t* /*position*/,
                  int64_t* /*new_ids*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}
bool LaunchRows(RelabelTables /*tables*/, const int64_t* /*src*/, int64_t /*capacity*/,
                HopSizes /*sizes*/, int64_t* /*rows*/, void* /*stream*/, std::string* error) {
  return NoKernels(error);
}

}  // namespace graphshard::trainer
