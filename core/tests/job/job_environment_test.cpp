// job_environment: a rank's place from tandem launch's variables, else mpirun's, else srun's;
// every bad value refused naming the variable and the value.

#include "../environment_guard.hpp"

#include "tandem/job.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tandem {
namespace {

using testing::EnvironmentGuard;
using ::testing::HasSubstr;

/// Unsets every variable job_environment reads.
void clear_job_variables(EnvironmentGuard& env) {
    for (const char* name :
         {"TANDEM_RANK", "TANDEM_WORLD_SIZE", "TANDEM_LOCAL_RANK", "TANDEM_JOB_ID",
          "TANDEM_JOB_DIR", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_NAMESPACE",
          "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID",
          "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID"}) {
        env.set(name, std::nullopt);
    }
}

/// The refusal job_environment gives in the environment as it is.
std::string refusal() {
    Result<JobEnvironment> environment = job_environment();
    EXPECT_FALSE(environment.ok()) << "accepted rank " << environment->rank;
    if (environment.ok()) {
        return {};
    }
    EXPECT_EQ(environment.error().kind(), ErrorKind::InvalidArgument);
    return environment.error().message();
}

TEST(JobEnvironment, tandem_launch_variables_give_rank_size_local_rank_id_and_folder) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("TANDEM_RANK", "2").set("TANDEM_WORLD_SIZE", "4").set("TANDEM_JOB_ID", "abc-1");
    Result<JobEnvironment> environment = job_environment();
    ASSERT_TRUE(environment.ok()) << environment.error().report();
    EXPECT_EQ(environment->rank, 2u);
    EXPECT_EQ(environment->world_size, 4u);
    EXPECT_EQ(environment->local_rank, 2u);
    EXPECT_EQ(environment->job_id, "abc-1");
    EXPECT_EQ(environment->job_folder, "/dev/shm/tandem-job-abc-1");
    EXPECT_EQ(environment->launcher, JobLauncher::tandem);
    env.set("TANDEM_LOCAL_RANK", "0").set("TANDEM_JOB_DIR", "/dev/shm/elsewhere/");
    environment = job_environment();
    ASSERT_TRUE(environment.ok()) << environment.error().report();
    EXPECT_EQ(environment->local_rank, 0u);
    EXPECT_EQ(environment->job_folder, "/dev/shm/elsewhere");
}

TEST(JobEnvironment, mpirun_variables_are_read_when_tandems_are_unset_and_win_over_slurms) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("OMPI_COMM_WORLD_RANK", "1").set("OMPI_COMM_WORLD_SIZE", "2");
    env.set("OMPI_COMM_WORLD_LOCAL_RANK", "1").set("PMIX_NAMESPACE", "prterun-host-42@1");
    // A Slurm batch step sets these for the script mpirun runs in.
    env.set("SLURM_PROCID", "0").set("SLURM_NTASKS", "1");
    Result<JobEnvironment> environment = job_environment();
    ASSERT_TRUE(environment.ok()) << environment.error().report();
    EXPECT_EQ(environment->launcher, JobLauncher::open_mpi);
    EXPECT_EQ(environment->rank, 1u);
    EXPECT_EQ(environment->world_size, 2u);
    EXPECT_EQ(environment->job_id, "prterun-host-42-1");
    env.set("TANDEM_JOB_ID", "given");
    EXPECT_EQ(job_environment()->job_id, "given");
}

TEST(JobEnvironment, mpirun_without_a_job_id_asks_for_tandem_job_id) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("OMPI_COMM_WORLD_RANK", "0").set("OMPI_COMM_WORLD_SIZE", "2");
    EXPECT_THAT(refusal(), HasSubstr("mpirun gives no job id: set TANDEM_JOB_ID"));
}

TEST(JobEnvironment, srun_variables_give_a_job_id_of_the_job_and_step) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("SLURM_PROCID", "3").set("SLURM_NTASKS", "4").set("SLURM_LOCALID", "1");
    env.set("SLURM_JOB_ID", "777").set("SLURM_STEP_ID", "0");
    Result<JobEnvironment> environment = job_environment();
    ASSERT_TRUE(environment.ok()) << environment.error().report();
    EXPECT_EQ(environment->launcher, JobLauncher::slurm);
    EXPECT_EQ(environment->rank, 3u);
    EXPECT_EQ(environment->world_size, 4u);
    EXPECT_EQ(environment->local_rank, 1u);
    EXPECT_EQ(environment->job_id, "slurm-777.0");
    EXPECT_EQ(environment->job_folder, "/dev/shm/tandem-job-slurm-777.0");
}

TEST(JobEnvironment, the_ranks_on_this_host_are_what_mpirun_or_srun_says_and_checked) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("OMPI_COMM_WORLD_RANK", "2").set("OMPI_COMM_WORLD_SIZE", "3");
    env.set("TANDEM_JOB_ID", "hosts");
    EXPECT_EQ(job_environment()->host_ranks, 0u);  // Not said: every rank counts as here.
    env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "1");
    EXPECT_EQ(job_environment()->host_ranks, 1u);
    env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
    EXPECT_THAT(refusal(), HasSubstr("OMPI_COMM_WORLD_LOCAL_SIZE='4': the ranks on this host are "
                                     "1 to the world size (3)"));
    env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "0");
    EXPECT_THAT(refusal(), HasSubstr("OMPI_COMM_WORLD_LOCAL_SIZE='0'"));

    clear_job_variables(env);
    env.set("SLURM_PROCID", "4").set("SLURM_NTASKS", "5").set("TANDEM_JOB_ID", "hosts");
    // Nodes 0 and 1 run 2 tasks each, node 2 runs 1.
    env.set("SLURM_STEP_TASKS_PER_NODE", "2(x2),1");
    for (const auto& [node, tasks] : {std::pair{"0", 2u}, {"1", 2u}, {"2", 1u}}) {
        env.set("SLURM_NODEID", node);
        Result<JobEnvironment> environment = job_environment();
        ASSERT_TRUE(environment.ok()) << environment.error().report();
        EXPECT_EQ(environment->host_ranks, tasks) << "node " << node;
    }
    env.set("SLURM_NODEID", "3");
    EXPECT_THAT(refusal(), HasSubstr("SLURM_STEP_TASKS_PER_NODE='2(x2),1': no count of tasks "
                                     "for node 3 (SLURM_NODEID)"));
    for (const char* list : {"2(x", "2(y2)", "x", "2(x2", "2,,1", "6"}) {
        env.set("SLURM_NODEID", "0").set("SLURM_STEP_TASKS_PER_NODE", list);
        EXPECT_THAT(refusal(), HasSubstr("SLURM_STEP_TASKS_PER_NODE='" + std::string(list) + "'"))
            << list;
    }
    env.set("SLURM_STEP_TASKS_PER_NODE", "6(x2)");
    EXPECT_THAT(refusal(), HasSubstr("the ranks on this host are 1 to the world size (5); this "
                                     "host's count is 6"));
}

TEST(JobEnvironment, a_process_no_launcher_started_is_told_how_to_start_one) {
    EnvironmentGuard env;
    clear_job_variables(env);
    EXPECT_THAT(refusal(), HasSubstr("this process is not a rank of a job"));
}

TEST(JobEnvironment, bad_numbers_are_refused_naming_the_variable_and_value) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("TANDEM_JOB_ID", "job").set("TANDEM_WORLD_SIZE", "2");
    env.set("TANDEM_RANK", "2");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_RANK='2': a rank is a decimal number below the "
                                     "world size (TANDEM_WORLD_SIZE=2)"));
    env.set("TANDEM_RANK", "-1");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_RANK='-1'"));
    env.set("TANDEM_RANK", "1x");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_RANK='1x'"));
    env.set("TANDEM_RANK", "0").set("TANDEM_WORLD_SIZE", "0");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_WORLD_SIZE='0': the world size is at least 1"));
    env.set("TANDEM_WORLD_SIZE", "257");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_WORLD_SIZE='257': the world size is 1 to 256"));
    env.set("TANDEM_WORLD_SIZE", std::nullopt);
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_WORLD_SIZE='': unset"));
    env.set("TANDEM_WORLD_SIZE", "2").set("TANDEM_LOCAL_RANK", "5");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_LOCAL_RANK='5': a local rank is"));
}

TEST(JobEnvironment, bad_job_ids_and_folders_are_refused) {
    EnvironmentGuard env;
    clear_job_variables(env);
    env.set("TANDEM_RANK", "0").set("TANDEM_WORLD_SIZE", "1");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_JOB_ID is unset"));
    env.set("TANDEM_JOB_ID", "../etc");
    EXPECT_THAT(refusal(), HasSubstr("job id '../etc': a job id does not start with a dot"));
    env.set("TANDEM_JOB_ID", "a/b");
    EXPECT_THAT(refusal(), HasSubstr("job id 'a/b': a job id has only the characters"));
    env.set("TANDEM_JOB_ID", std::string(65, 'a'));
    EXPECT_THAT(refusal(), HasSubstr("a job id has 1 to 64 characters"));
    env.set("TANDEM_JOB_ID", "fine").set("TANDEM_JOB_DIR", "relative/folder");
    EXPECT_THAT(refusal(), HasSubstr("TANDEM_JOB_DIR='relative/folder': the job folder is an "
                                     "absolute path"));
}

}  // namespace
}  // namespace tandem
