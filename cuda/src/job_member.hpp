#pragma once

// The CUDA runtime as a job reaches it (`JobMember`, phase 2 of docs/DESIGN.md): its devices'
// regions exported to POSIX file descriptors (cuda_storage.hpp), other ranks' regions mapped
// here (imported_memory.hpp), and its events reached for other processes once the work before
// them is settled (exported_events.cpp).

#include "tandem/backend/job_member.hpp"
#include "tandem/core/runtime.hpp"

#include <memory>

namespace tandem::cuda {

class CudaEngine;
class CudaRuntime;

/// The engine of `runtime`.
std::shared_ptr<CudaEngine> engine_of(const CudaRuntime& runtime);

/// The job's side of a CUDA runtime that serves a rank (created with `CudaOptions::rank`); null
/// for any other runtime.
std::shared_ptr<JobMember> job_member(const std::shared_ptr<Runtime>& runtime);

}  // namespace tandem::cuda
