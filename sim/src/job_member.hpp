#pragma once

// The simulator's runtime as a job reaches it: its segments exported, other ranks' mapped.

#include "tandem/backend/job_member.hpp"
#include "tandem/core/runtime.hpp"

#include <memory>

namespace tandem::sim {

class Engine;

/// Remembers the engine of a runtime that serves a rank of a job, so that the job can reach it
/// (`job_member`) from the public runtime, which shows no engine. Forgotten when it goes.
void remember_rank_engine(const std::shared_ptr<Engine>& engine);
/// The job's side of a simulator runtime that serves a rank (created with a rank); null for any
/// other runtime.
std::shared_ptr<JobMember> job_member(const std::shared_ptr<Runtime>& runtime);

}  // namespace tandem::sim
